//! The stress commands: `mplab soak` (one long run with churn), `mplab
//! load` (many connections at once) and `mplab attack` (the attack
//! matrix). Each parses its flags here and hands the work to the library
//! module of the same name.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use mplab::{attack, load, run, soak};

use crate::{fail, EXIT_FAILED};

// `mplab attack`.
#[derive(clap::Args)]
pub(crate) struct AttackCmd {
    scenario: PathBuf,
    /// Backends, comma-separated: sim, kernel, userspace.
    #[arg(long, default_value = "sim")]
    backends: String,
    /// Attacks, comma-separated (default: all); `--list` names them.
    #[arg(long)]
    rows: Option<String>,
    /// The link the attacker sits on.
    #[arg(long, default_value = "wan1")]
    link: String,
    /// When the attacker strikes: a time from the start (default 3s), a
    /// protocol moment it sees on its link (mp-capable, mp-join, add-addr,
    /// data-fin) or a delay after one (mp-join+50ms).
    #[arg(long)]
    at: Option<String>,
    /// Sets a scenario field before the attacker is added, as `mplab run
    /// --set` (repeatable): e.g. transport.mptcp.checksum=true.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// The matrix over every link of the scenario, DSS checksums off and
    /// on, and each strike time of --strikes: product.md (cells per
    /// verdict along each dimension, every cell that is not ok), .csv,
    /// .json; exits 1 on any cell where mplab's stack is weaker.
    #[arg(long)]
    product: bool,
    /// Strikes of --product, comma-separated, each as --at takes it
    /// (default: mp-capable+10ms, mp-join, add-addr, 300ms, 3s, 6.5s,
    /// data-fin).
    #[arg(long)]
    strikes: Option<String>,
    /// Points of --product run at once (default: the machine's cores on
    /// the simulator, one with a real-packet backend; each real-packet
    /// point has its own namespaces, and at the victims' 10 Mbit/s a run
    /// takes about a tenth of a core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Output directory (default results/attack-<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the attacks with what the RFCs require, and stop.
    #[arg(long)]
    list: bool,
}


// `mplab soak`.
#[derive(clap::Args)]
pub(crate) struct SoakCmd {
    #[arg(long, default_value = "sim", value_parser = ["sim", "kernel", "userspace"])]
    pub(crate) backend: String,
    /// Scenario time (e.g. 1h, 10min, 300s).
    #[arg(long, default_value = "1h")]
    duration: String,
    /// Leave out the address withdrawals and restores (Linux 6.18 can
    /// oops deleting an endpoint under load: docs/soak.md).
    #[arg(long)]
    keep_addresses: bool,
    #[command(flatten)]
    common: Generated,
}

/// What `mplab soak` and `mplab load` share: both generate a scenario
/// and run it.
#[derive(clap::Args)]
pub(crate) struct Generated {
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory (default results/<command>-<backend>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the generated scenario file here and stop.
    #[arg(long)]
    write_scenario: Option<PathBuf>,
    /// The connections' multipath transport.
    #[arg(long, default_value = "mptcp", value_parser = ["mptcp", "mpquic"])]
    transport: String,
}

// `mplab load`.
#[derive(clap::Args)]
pub(crate) struct LoadCmd {
    #[arg(long, default_value = "sim", value_parser = ["sim", "kernel", "userspace"])]
    pub(crate) backend: String,
    #[arg(long, default_value_t = 1000)]
    idle: u64,
    #[arg(long, default_value_t = 100)]
    active: u64,
    #[command(flatten)]
    common: Generated,
}


/// `mplab soak`.
pub(crate) fn soak_cmd(c: SoakCmd, quiet: bool) -> ExitCode {
    let SoakCmd { backend, duration, keep_addresses, common: Generated { seed, out, write_scenario, transport } } = c;
    let secs = match duration.parse::<mplab_scenario::Duration>() {
        Ok(d) if d.as_nanos() >= 10_000_000_000 => d.as_nanos() / 1_000_000_000,
        Ok(_) => return fail("soak", run::RunError::Usage("--duration: at least 10s".into())),
        Err(e) => return fail("soak", run::RunError::Usage(format!("--duration {duration:?}: {e}"))),
    };
    if let Some(path) = write_scenario {
        return write("soak", &path, soak::scenario(secs, seed, stack_of(&backend), !keep_addresses, &transport));
    }
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("soak-{backend}")));
    let r = soak::soak(&backend, secs, seed, !keep_addresses, &transport, &out);
    report("soak", quiet, &out, r.map(|r| (soak::render(&r), r.failures.is_empty())))
}

/// The host stack a generated soak or load scenario names for `backend`.
fn stack_of(backend: &str) -> &'static str {
    if backend == "userspace" { "mplab" } else { "kernel" }
}

/// `--write-scenario`: the generated scenario file, and stop.
fn write(cmd: &str, path: &std::path::Path, text: String) -> ExitCode {
    match std::fs::write(path, text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(cmd, run::RunError::Failed(format!("{}: {e}", path.display()))),
    }
}

/// A soak's or load's end: its rendered report (unless quiet), and
/// failure when it found any.
fn report(cmd: &str, quiet: bool, out: &std::path::Path, r: Result<(String, bool), run::RunError>) -> ExitCode {
    match r {
        Ok((text, passed)) => {
            if !quiet {
                print!("{text}");
                println!("  results and {cmd}.json in {}", out.display());
            }
            if passed { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
        }
        Err(e) => fail(cmd, e),
    }
}

/// `mplab load`.
pub(crate) fn load_cmd(c: LoadCmd, quiet: bool) -> ExitCode {
    let LoadCmd { backend, idle, active, common: Generated { seed, out, write_scenario, transport } } = c;
    if idle + active == 0 {
        return fail("load", run::RunError::Usage("--idle and --active: at least one connection".into()));
    }
    if let Some(path) = write_scenario {
        return write("load", &path, load::scenario(idle, active, seed, stack_of(&backend), &transport));
    }
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("load-{backend}")));
    let r = load::load(&backend, idle, active, seed, &transport, &out);
    report("load", quiet, &out, r.map(|r| (load::render(&r), r.failures.is_empty())))
}

/// `mplab attack`.
pub(crate) fn attack_cmd(c: AttackCmd, quiet: bool) -> ExitCode {
    let AttackCmd { scenario, backends, rows, link, at, sets, product, strikes, jobs, out, list } = c;
    if list {
        for k in mplab_scenario::attack::AttackKind::ALL {
            let _ = writeln!(std::io::stdout(), "{:<22} {:<9} {:<9} {}", k.name(), k.position().name(), k.expect().name(), k.requirement());
        }
        return ExitCode::SUCCESS;
    }
    let rows = match attack::parse_rows(rows.as_deref()) {
        Ok(r) => r,
        Err(e) => return fail("attack", run::RunError::Usage(e)),
    };
    let backends: Vec<String> = backends.split(',').map(|b| b.trim().to_string()).filter(|b| !b.is_empty()).collect();
    if let Some(b) = backends.iter().find(|b| !["sim", "kernel", "userspace"].contains(&b.as_str())) {
        return fail("attack", run::RunError::Usage(format!("unknown backend {b:?} (sim, kernel, userspace)")));
    }
    let strikes: Vec<String> = strikes.as_deref().map_or(attack::STRIKES.join(","), str::to_string).split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if let Some(e) = at.iter().chain(&strikes).find_map(|t| attack::strike_fields(t).err()) {
        return fail("attack", run::RunError::Usage(e));
    }
    let stem = scenario.file_stem().map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("attack-{stem}")));
    let mut kv = Vec::new();
    for s in &sets {
        let Some((k, v)) = s.split_once('=') else { return fail("attack", run::RunError::Usage(format!("--set {s:?}: want KEY=VALUE"))) };
        kv.push((k.trim().to_string(), v.trim().to_string()));
    }
    let real = backends.iter().any(|b| b != "sim");
    let jobs = jobs.unwrap_or_else(|| if real { 1 } else { std::thread::available_parallelism().map_or(1, |n| n.get()) });
    let opt = attack::Options { scenario, backends, rows, link, at, sets: kv, out: out.clone(), quiet, jobs };
    if product {
        return match attack::product(&opt, &strikes) {
            Ok(cells) => {
                let _ = write!(std::io::stdout(), "{}", attack::render_product(&cells));
                if let Err(e) = attack::write_product(&cells, &out) {
                    return fail("attack", run::RunError::Failed(format!("{}: {e}", out.display())));
                }
                let weak = cells.iter().filter(|c| c.cell.verdict == "WEAKER" && c.cell.backend != "kernel").count();
                if !quiet {
                    eprintln!("{} cells; {weak} where mplab's stack is weaker than the RFCs; product.md, product.csv, product.json in {}", cells.len(), out.display());
                }
                if weak > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
            }
            Err(e) => fail("attack", run::RunError::Usage(e)),
        };
    }
    match attack::matrix(&opt) {
        Ok(rows) => {
            let _ = write!(std::io::stdout(), "{}", attack::render(&rows));
            if let Err(e) = attack::write(&rows, &out) {
                return fail("attack", run::RunError::Failed(format!("{}: {e}", out.display())));
            }
            let weak = attack::mplab_weaknesses(&rows);
            if !quiet {
                eprintln!("{} attacks; {weak} cells where mplab's stack is weaker than the RFCs; attack.md, attack.csv, attack.json in {}", rows.len(), out.display());
            }
            if weak > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
        }
        Err(e) => fail("attack", run::RunError::Usage(e)),
    }
}

