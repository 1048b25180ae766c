//! `mplab`: the Multipath TCP lab command line.

mod stress;

use mplab::{compare, figures, plot, plugins, report, run, slurm, sweep, trace, trace_gen, trace_link, validate};
use stress::{attack_cmd, load_cmd, soak_cmd, AttackCmd, LoadCmd, SoakCmd};


use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes: 0 ok, 1 the run failed (or a check mismatched), 2 usage or input error.
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "mplab",
    version,
    about = "Multipath TCP lab: simulate, emulate and inspect MPTCP",
    after_help = "Examples:
  mplab run scenarios/tcp-single.toml
  mplab sweep scenarios/two-paths.toml --param topology.rate=10Mbit,50Mbit --param transport.mptcp.subflows=1..4 --seeds 3
  mplab sweep scenarios/seed001-fig9.sweep.toml
  mplab report results/two-paths-sweep
  mplab compare results/a results/b
  mplab trace capture.pcap
  mplab trace-link scenarios/traces/lte-commuter-10mbit.trace

Exit codes: 0 ok, 1 a run failed (or a check mismatched), 2 usage or scenario error."
)]
struct Cli {
    /// Print only errors (no progress bars, no tables).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Print more: one line per finished sweep run, the files written.
    #[arg(long, short, global = true, conflicts_with = "quiet")]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write its results directory (summary.json,
    /// flows.csv, interfaces.csv, queues.csv, pcaps if the scenario asks).
    ///
    /// Examples:
    ///   mplab run scenarios/tcp-single.toml
    ///   mplab run scenarios/tcp-single.toml --seed 7 --set links.0.rate=50Mbit --out /tmp/r --json
    #[command(verbatim_doc_comment)]
    Run(RunCmd),
    /// Run a scenario over a grid of parameter values and several seeds, in
    /// parallel, resumable: one results directory per point and seed, rows
    /// per run (runs.csv/.parquet), mean / stdev / 95 % CI across seeds
    /// (aggregate.csv/.parquet), plots, and sweep.json. Ctrl-C stops and
    /// keeps every finished run; the same command again runs only what is
    /// missing.
    ///
    /// PARAM is PATH=VALUES with a --set PATH (several joined by + take the
    /// same value) and VALUES a comma list whose items are values or
    /// inclusive ranges START..END[:STEP] sharing a unit:
    ///   topology.rate=10Mbit,50Mbit,100Mbit   transport.mptcp.subflows=1..6
    ///   topology.delay=10ms..100ms:30ms        transport.tcp.rcv_buf+transport.tcp.snd_buf=64KB,256KB
    ///
    /// Examples:
    ///   mplab sweep scenarios/two-paths.toml --param topology.rate=10Mbit,50Mbit --param transport.mptcp.subflows=1..4 --seeds 3
    ///   mplab sweep scenarios/seed001-fig9.sweep.toml --set duration=5s --seeds 2
    ///   mplab sweep scenarios/two-paths.toml --point 'topology.rate=10Mbit;transport.mptcp.subflows=2' --point 'topology.rate=50Mbit;transport.mptcp.subflows=4'
    #[command(verbatim_doc_comment)]
    Sweep(SweepCmd),
    /// One SCTP host on usrsctp, inside the namespace it runs in (what the
    /// kernel backend starts per SCTP flow end).
    #[command(hide = true)]
    UsrsctpHost { spec: String },
    /// One array task of a Slurm sweep (what the job script runs).
    #[command(hide = true)]
    SweepTask {
        dir: PathBuf,
        submission: usize,
        task: usize,
    },
    /// Write the plots of a results directory (a run or a sweep) as PNG and
    /// SVG under DIR/plots/.
    ///
    /// Example: mplab plot results/seed000-lab1
    Plot {
        /// A run's or a sweep's results directory.
        dir: PathBuf,
        /// Resolution of the PNGs: 96 gives 960 pixels wide, 192 twice
        /// that on each side (for print); the SVGs scale anyway.
        #[arg(long, default_value_t = mplab::plot::DEFAULT_DPI, value_parser = clap::value_parser!(u32).range(24..=1200))]
        dpi: u32,
    },
    /// Write one self-contained HTML report (scenario, summary table, every
    /// plot as inline SVG, run metadata) for a run or a sweep directory.
    ///
    /// Example: mplab report results/seed000-lab1 --out /tmp/lab1.html
    Report {
        /// A run's or a sweep's results directory.
        dir: PathBuf,
        /// Output file (default DIR/report.html).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Compare two results directories (the same scenario on two backends or
    /// two configurations; or two sweeps): every metric of A and B with the
    /// difference, compare.csv and plots.
    ///
    /// Example: mplab compare results/lab1-sim results/lab1-kernel --out /tmp/cmp
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// Where compare.csv and the plots go (default: B/compare).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Remove what crashed kernel-backend runs left behind: every network
    /// namespace named mplab-<pid>-* whose run is gone (and the processes
    /// inside). Needs root.
    ///
    /// Example: sudo mplab clean
    Clean {
        /// Also remove the namespaces of runs that are still alive.
        #[arg(long)]
        force: bool,
    },
    /// Write a synthetic cellular delivery trace (Mahimahi format) for a
    /// link's `rate = { trace = "FILE" }`: a finite-state Markov channel
    /// with outages, scaled to the mean rate; deterministic per seed.
    ///
    /// Example: mplab trace-gen --profile commuter --mean 10Mbit --seed 1 --duration 60s --out lte.trace
    #[command(verbatim_doc_comment)]
    TraceGen {
        #[arg(long, value_enum, default_value = "commuter")]
        profile: trace_gen::Profile,
        /// Mean IP capacity (1500 bytes per opportunity).
        #[arg(long)]
        mean: mplab_scenario::Rate,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value = "60s")]
        duration: mplab_scenario::Duration,
        #[arg(long)]
        out: PathBuf,
    },
    /// Summarise a link capacity trace: its period, mean capacity (1500 IP
    /// bytes per delivery opportunity), the capacity per window with its
    /// percentiles, and its outages (gaps between opportunities longer than
    /// --outage). Reads a Mahimahi delivery trace, or a steps CSV (`time,rate`
    /// lines) when the name ends in .csv or with --steps. Exits 2 on a bad
    /// file, naming the file and line.
    ///
    /// Examples:
    ///   mplab trace-link scenarios/traces/lte-commuter-10mbit.trace
    ///   mplab trace-link scenarios/traces/lte-steady-5mbit.trace --window 1s --json
    ///   mplab trace-link rates.csv --duration 15s --plot /tmp/plots
    #[command(verbatim_doc_comment)]
    TraceLink(TraceLinkCmd),
    /// Decode a pcap/pcapng capture: MPTCP connections, subflows, events, and
    /// verification of every token, HMAC and DSS checksum.
    ///
    /// Example: mplab trace capture.pcap --json
    Trace {
        /// Capture file (pcap or pcapng; Ethernet, Linux SLL/SLL2 or raw IP).
        file: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Print every verified check on its own line (by default, a count
        /// per kind of check, and every mismatch).
        #[arg(long)]
        checks: bool,
        /// Write plots (PNG + SVG) to DIR: per connection, the subflows'
        /// time-sequence graph, the data-sequence graph, RTT per subflow.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
    },
    /// Check that the simulator agrees with Linux: run a suite of cases on
    /// the simulator with the `linux` stack profile and on the kernel
    /// backend (several runs each; the simulator's `mplab` profile and the
    /// userspace backend beside them), print one table (each backend's mean
    /// and range, the difference, the tolerance, a verdict), write
    /// validate.csv and validate.json. Exits 1 when a case is outside its
    /// tolerance. The kernel and userspace backends need root.
    ///
    /// Examples:
    ///   sudo mplab validate                         # the quick suite
    ///   sudo mplab validate scenarios/validate/full.toml --runs 5
    ///   mplab validate --backends sim              # the two profiles side by side
    #[command(verbatim_doc_comment)]
    Validate(ValidateCmd),
    /// List what a scenario may name on each plug-in axis (schedulers,
    /// congestion controls, path managers, topology generators,
    /// applications, queue disciplines, middleboxes), with their
    /// parameters and what the kernel backend does with each.
    Plugins,
    /// The adversarial matrix: each attack (forged MP_JOINs, ADD_ADDRs,
    /// MP_FASTCLOSE, MP_FAIL, DSS mappings, RSTs, option stripping,
    /// payload rewriting, splitting, NAT rebinding) mounted by an attacker
    /// on one link of SCENARIO, on each backend: what the victim did, and
    /// whether RFC 8684 / RFC 7430 allow it. Writes attack.md, attack.csv
    /// and attack.json; exits 1 when mplab's stack (sim, userspace) is
    /// weaker than the RFCs require. kernel and userspace need root.
    ///
    /// Examples:
    ///   mplab attack scenarios/attack.toml
    ///   sudo mplab attack scenarios/attack.toml --backends sim,kernel,userspace
    ///   mplab attack scenarios/attack.toml --rows join-stolen-token,rst-on-path
    #[command(verbatim_doc_comment)]
    Attack(AttackCmd),
    /// Soak: many MPTCP connections for a long time through link flaps,
    /// Gilbert-Elliott loss bursts, reordering, duplication and addresses
    /// withdrawn and restored on both ends, and a firewall stripping MPTCP
    /// options for a while. Checks every byte, samples the
    /// process's memory, descriptors and threads, and checks what the run
    /// left behind; exits 1 on a failure. kernel and userspace need root.
    ///
    /// Examples:
    ///   mplab soak --duration 1h
    ///   sudo mplab soak --backend userspace --duration 10min
    ///   mplab soak --duration 10min --write-scenario soak.toml
    #[command(verbatim_doc_comment)]
    Soak(SoakCmd),
    /// Load: many concurrent MPTCP connections between two hosts, idle
    /// ones (100 B each way every 10 s) and active ones (constant-rate
    /// senders offering 100 Mbit/s in all to two 100 Mbit/s paths), opened
    /// one after the other and held for 15 s; every byte verified. Reports
    /// the connections held, memory per connection (the process's, and the
    /// kernel's slab), descriptors, threads and, for mplab's stack, its
    /// packet loop's longest pass. The userspace backend runs mplab's stack
    /// on both hosts; kernel and userspace need root.
    ///
    /// Examples:
    ///   sudo mplab load --backend userspace --idle 10000 --active 1000
    ///   sudo mplab load --backend kernel --idle 5000 --active 1000
    ///   mplab load --idle 10000 --active 1000 --write-scenario load.toml
    #[command(verbatim_doc_comment)]
    Load(LoadCmd),
}

// `mplab run`.
#[derive(clap::Args)]
struct RunCmd {
    /// Scenario file (TOML; see docs/scenario.md).
    scenario: PathBuf,
    /// Where to run it.
    #[arg(long, default_value = "sim", value_parser = ["sim", "kernel", "userspace"])]
    backend: String,
    /// Random seed (overrides the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Override a scenario field, e.g. --set links.0.delay=50ms (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Results directory (default results/<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print summary.json on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write plots (PNG + SVG) under the results directory's plots/.
    #[arg(long)]
    plots: bool,
}

// `mplab sweep`.
#[derive(clap::Args)]
struct SweepCmd {
    /// A scenario file, or a sweep spec file (*.sweep.toml with a [sweep] table; see scenarios/README.md).
    file: PathBuf,
    /// A swept parameter PATH=VALUES (repeatable; the grid is their cartesian product).
    #[arg(long = "param", value_name = "PATH=VALUES")]
    params: Vec<String>,
    /// One explicit point 'PATH=VALUE;PATH=VALUE' (repeatable; replaces the grid).
    #[arg(long = "point", value_name = "PATH=VALUE;...")]
    points: Vec<String>,
    /// A file of points, one per line as for --point ('#' comments).
    #[arg(long = "points", value_name = "FILE")]
    points_file: Option<PathBuf>,
    /// Seeds: a count N (seeds 1..=N) or a list / range (3,7,9 or 1..5).
    #[arg(long)]
    seeds: Option<String>,
    /// A fixed override for every point, e.g. --set duration=10s (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Sweep directory (default results/<name>-sweep).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Parallel simulations (default: all cores).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Do not write plots at the end.
    #[arg(long)]
    no_plots: bool,
    /// Stop after this many runs (they are kept; the rest runs next time).
    #[arg(long, hide = true)]
    max_runs: Option<usize>,
    /// Where the runs run: `local` (this machine's cores) or `slurm`
    /// (job arrays through sbatch; FILE's directory must be on a file
    /// system the nodes share). See docs/cluster.md.
    #[arg(long, default_value = "local", value_parser = ["local", "slurm"])]
    executor: String,
    /// FILE is a sweep directory: report its runs done, queued, running
    /// and failed (from Slurm and the directory), with failed tasks' logs.
    #[arg(long, conflicts_with = "collect")]
    status: bool,
    /// FILE is a sweep directory: aggregate its finished runs (CSV,
    /// Parquet, plots), as the Slurm executor's last job does.
    #[arg(long)]
    collect: bool,
    #[command(flatten)]
    slurm: SlurmArgs,
}

// `mplab validate`.
#[derive(clap::Args)]
struct ValidateCmd {
    /// Suite file (default scenarios/validate/quick.toml).
    suite: Option<PathBuf>,
    /// Backends: sim (both profiles), kernel, userspace, comma-separated.
    #[arg(long, default_value = "sim,kernel")]
    backends: String,
    /// Runs per backend (simulator seeds 1..=N); default: the suite's.
    #[arg(long)]
    runs: Option<u32>,
    /// Only this case (repeatable).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Output directory (default results/validate-<suite name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Instead of a suite file, N cases drawn from the space of networks
    /// in docs/validation.md; their scenarios and suite file are written
    /// to the output directory (default results/validate-random-SEED),
    /// with random.md: the held-out error, scatter and CDF plots.
    #[arg(long, value_name = "N", conflicts_with = "suite")]
    random: Option<u32>,
    /// The draw's seed (with --random).
    #[arg(long, default_value_t = 1, requires = "random")]
    seed: u64,
}

// `mplab trace-link`.
#[derive(clap::Args)]
struct TraceLinkCmd {
    /// A Mahimahi delivery trace, or a steps CSV (see docs/mobile.md).
    file: PathBuf,
    /// Read FILE as a steps CSV whatever its name.
    #[arg(long)]
    steps: bool,
    /// Window of the per-window capacity (whole milliseconds).
    #[arg(long, default_value = "100ms")]
    window: mplab_scenario::Duration,
    /// A gap between delivery opportunities longer than this is an outage.
    #[arg(long, default_value = "200ms")]
    outage: mplab_scenario::Duration,
    /// How much of a steps file to summarise (default: up to its last step
    /// plus one window; its last rate holds for ever).
    #[arg(long)]
    duration: Option<mplab_scenario::Duration>,
    /// Print the report as JSON (with the capacity of every window).
    #[arg(long)]
    json: bool,
    /// Write the capacity over time (PNG + SVG) to DIR/<name>-capacity.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
}

/// Prints an error, "error" in red when stderr is a terminal.
fn error(cmd: &str, msg: &str) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        eprintln!("mplab {cmd}: \x1b[1;31merror\x1b[0m: {msg}");
    } else {
        eprintln!("mplab {cmd}: {msg}");
    }
}

fn fail(cmd: &str, e: run::RunError) -> ExitCode {
    match e {
        run::RunError::Usage(m) => {
            error(cmd, &m);
            ExitCode::from(EXIT_USAGE)
        }
        run::RunError::Failed(m) => {
            error(cmd, &m);
            ExitCode::from(EXIT_FAILED)
        }
    }
}

fn main() -> ExitCode {
    // A closed stdout (`mplab compare A B | head -1`) ends the program
    // quietly, as it does Unix tools: Rust ignores SIGPIPE and would panic
    // on the failed print instead.
    // SAFETY: called first thing, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // Simulations (the default backend) run faster on huge pages; this
    // restarts the process once with them, before any thread exists.
    if cli.command.simulates() {
        mplab_sim::hugepages::reexec_with_huge_pages();
    }
    let (quiet, verbose) = (cli.quiet, cli.verbose);
    match cli.command {
        Command::Run(c) => run_cmd(c, quiet, verbose),
        Command::Sweep(c) => sweep_cmd(c, quiet, verbose),
        Command::SweepTask { dir, submission, task } => sweep_task_cmd(&dir, submission, task),
        Command::Plot { dir, dpi } => plot_cmd(&dir, dpi, quiet),
        Command::Report { dir, out } => report_cmd(&dir, out.as_deref(), quiet),
        Command::Compare { a, b, out } => compare_cmd(&a, &b, out, quiet),
        Command::UsrsctpHost { spec } => std::process::exit(mplab_emu::usrsctp::host::host_main(&spec)),
        Command::Clean { force } => clean_cmd(force),
        Command::Validate(c) => validate_cmd(c, quiet),
        Command::Soak(c) => soak_cmd(c, quiet),
        Command::Load(c) => load_cmd(c, quiet),
        Command::Attack(c) => attack_cmd(c, quiet),
        Command::Plugins => {
            let _ = write!(std::io::stdout(), "{}", plugins::render());
            ExitCode::SUCCESS
        }
        Command::Trace { file, json, checks, plots } => trace_cmd(&file, json, checks, plots.as_deref()),
        Command::TraceLink(c) => trace_link_cmd(c, quiet),
        Command::TraceGen { profile, mean, seed, duration, out } => {
            let ms = trace_gen::generate(profile, mean.bps(), duration.as_nanos() / 1_000_000, seed);
            match std::fs::write(&out, trace_gen::render(&ms)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {}: {e}", out.display());
                    ExitCode::from(EXIT_FAILED)
                }
            }
        }
    }
}

impl Command {
    /// Whether the command runs simulations (the default backend).
    fn simulates(&self) -> bool {
        match self {
            Command::Run(RunCmd { backend, .. }) | Command::Soak(SoakCmd { backend, .. }) | Command::Load(LoadCmd { backend, .. }) => backend == "sim",
            Command::Sweep(_) | Command::Validate(_) => true,
            _ => false,
        }
    }
}

/// `mplab run`.
fn run_cmd(c: RunCmd, quiet: bool, verbose: bool) -> ExitCode {
    let RunCmd { scenario, backend, seed, sets, out, json, plots } = c;
    let args = run::RunArgs { scenario, backend, seed, sets, out, json, quiet };
    match run::run(&args) {
        Ok(s) => {
            if plots {
                let dir = args.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&s.scenario));
                match figures::write_all(&dir) {
                    Ok(n) if verbose => eprintln!("wrote {} plots under {}", n.len(), dir.join("plots").display()),
                    Ok(_) => {}
                    Err(e) => return fail("run", run::RunError::Failed(format!("{}: {e}", dir.display()))),
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("run", e),
    }
}

/// `mplab sweep`: a sweep directory's status (`--status`), its aggregation
/// (`--collect`), or the sweep itself.
fn sweep_cmd(c: SweepCmd, quiet: bool, verbose: bool) -> ExitCode {
    let result = if c.status {
        slurm_status(&c.file, quiet)
    } else if c.collect {
        collect(&c.file, !c.no_plots, quiet)
    } else {
        run_sweep(c, quiet, verbose)
    };
    result.unwrap_or_else(|e| fail("sweep", e))
}

/// `mplab sweep --collect DIR`: aggregates the finished runs.
fn collect(dir: &std::path::Path, plots: bool, quiet: bool) -> Result<ExitCode, run::RunError> {
    let n = sweep::finish(dir, plots, serde_json::json!({ "executor": "slurm" })).map_err(|e| run::RunError::Failed(format!("{}: {e}", dir.display())))?;
    if !quiet {
        println!("{n} runs aggregated in {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `mplab sweep-task DIR K I`: one array task of a Slurm sweep.
fn sweep_task_cmd(dir: &std::path::Path, submission: usize, task: usize) -> ExitCode {
    match slurm::run_task(dir, submission, task) {
        Ok(n) => {
            println!("task {task} of submission {submission}: {n} runs");
            ExitCode::SUCCESS
        }
        Err(e) => fail("sweep-task", e),
    }
}

/// `mplab plot`.
fn plot_cmd(dir: &std::path::Path, dpi: u32, quiet: bool) -> ExitCode {
    match figures::write_all_at(dir, dpi) {
        Ok(names) => {
            if !quiet {
                println!("{} plots (PNG + SVG) in {}", names.len(), dir.join("plots").display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("plot", run::RunError::Usage(format!("{}: {e}", dir.display()))),
    }
}

/// `mplab report`.
fn report_cmd(dir: &std::path::Path, out: Option<&std::path::Path>, quiet: bool) -> ExitCode {
    match report::write_report(dir, out) {
        Ok(p) => {
            if !quiet {
                println!("{}", p.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("report", run::RunError::Usage(format!("{}: {e}", dir.display()))),
    }
}

/// `mplab compare`.
fn compare_cmd(a: &std::path::Path, b: &std::path::Path, out: Option<PathBuf>, quiet: bool) -> ExitCode {
    let rows = match compare::compare(a, b) {
        Ok(r) => r,
        Err(e) => return fail("compare", run::RunError::Usage(e.to_string())),
    };
    if !quiet {
        print!("{}", compare::render(&rows, &compare::describe(a), &compare::describe(b)));
        print!("\n{}", compare::differences(a, b));
    }
    let out = out.unwrap_or_else(|| b.join("compare"));
    match compare::write(&rows, a, b, &out) {
        Ok(_) => {
            if !quiet {
                println!("\ncompare.csv and plots in {}", out.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("compare", run::RunError::Failed(format!("{}: {e}", out.display()))),
    }
}

/// `mplab clean`.
fn clean_cmd(force: bool) -> ExitCode {
    if !mplab_emu::sys::is_root() {
        eprintln!("mplab clean: needs root (it deletes network namespaces)");
        return ExitCode::from(EXIT_USAGE);
    }
    let (removed, kept, errors) = mplab_emu::topo::clean(force);
    for n in &removed {
        println!("removed {n}");
    }
    for n in &kept {
        println!("kept {n} (its run is still alive; --force removes it)");
    }
    for e in &errors {
        eprintln!("mplab clean: {e}");
    }
    if removed.is_empty() && kept.is_empty() && errors.is_empty() {
        println!("nothing to clean");
    }
    if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
}

/// `mplab validate`.
fn validate_cmd(c: ValidateCmd, quiet: bool) -> ExitCode {
    let ValidateCmd { suite, backends, runs, cases, out, random, seed } = c;
    if let Some(n) = random {
        if n == 0 {
            return fail("validate", run::RunError::Usage("--random: at least 1 case".into()));
        }
        let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("validate-random-{seed}")));
        let suite = match validate::random::write_suite(n, seed, runs.unwrap_or(3), &out) {
            Ok(s) => s,
            Err(e) => return fail("validate", run::RunError::Failed(e)),
        };
        let draws: Vec<_> = (0..u64::from(n)).map(|i| validate::random::draw_case(seed, i)).collect();
        return validate_suite(&suite, &backends, runs, cases, out, quiet, Some((seed, draws)));
    }
    let file = suite.unwrap_or_else(|| PathBuf::from("scenarios/validate/quick.toml"));
    let suite = match validate::suite::read(&file) {
        Ok(s) => s,
        Err(e) => return fail("validate", run::RunError::Usage(e)),
    };
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("validate-{}", suite.name)));
    validate_suite(&suite, &backends, runs, cases, out, quiet, None)
}

/// Runs a suite and writes its table (and, for drawn cases, the held-out
/// error report).
fn validate_suite(suite: &validate::suite::Suite, backends: &str, runs: Option<u32>, cases: Vec<String>, out: PathBuf, quiet: bool, random: Option<(u64, Vec<validate::random::CaseDraw>)>) -> ExitCode {
    let columns = match validate::columns(backends) {
        Ok(c) => c,
        Err(e) => return fail("validate", run::RunError::Usage(e)),
    };
    let opt = validate::Options { columns, runs, cases, out: out.clone(), quiet };
    match validate::validate(suite, &opt) {
        Ok(rows) => {
            let _ = write!(std::io::stdout(), "{}", validate::render(&rows));
            if let Err(e) = validate::write(&rows, suite, &out) {
                return fail("validate", run::RunError::Failed(format!("{}: {e}", out.display())));
            }
            if let Some((seed, draws)) = random {
                let errs = validate::heldout::errors(&draws, &rows);
                let md = validate::heldout::render(&errs, seed);
                let json = serde_json::to_string_pretty(&errs).unwrap_or_default();
                let written = std::fs::write(out.join("random.md"), &md).and_then(|()| std::fs::write(out.join("errors.json"), json)).and_then(|()| validate::heldout::plots(&errs, &out));
                if let Err(e) = written {
                    return fail("validate", run::RunError::Failed(format!("{}: {e}", out.display())));
                }
                let _ = write!(std::io::stdout(), "\n{}", md.split("\n| case |").next().unwrap_or_default());
            }
            let failed = rows.iter().filter(|r| r.verdict == "FAIL").count();
            if !quiet {
                eprintln!("{} rows, {failed} outside their tolerance; validate.csv and validate.json in {}", rows.len(), out.display());
            }
            if failed > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
        }
        Err(e) => fail("validate", run::RunError::Usage(e)),
    }
}

/// `mplab trace`.
fn trace_cmd(file: &std::path::Path, json: bool, checks: bool, plots: Option<&std::path::Path>) -> ExitCode {
    match trace::trace_file(file) {
        Ok(rep) => {
            if let Some(dir) = plots {
                for f in trace::plots::figures(&rep) {
                    if let Err(e) = plot::write(&f.plot, &dir.join(&f.name)) {
                        eprintln!("mplab trace: {}: {e}", dir.display());
                        return ExitCode::from(EXIT_FAILED);
                    }
                }
            }
            if json {
                // A closed stdout (`| head`) is not an error worth a panic.
                let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string_pretty(&rep).expect("report serialises"));
            } else {
                let detail = if checks { trace::Detail::EveryCheck } else { trace::Detail::Summary };
                let _ = write!(std::io::stdout(), "{}", trace::render(&rep, detail));
            }
            if rep.checks_mismatch > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
        }
        Err(e) => {
            eprintln!("mplab trace: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// `mplab trace-link`.
fn trace_link_cmd(c: TraceLinkCmd, quiet: bool) -> ExitCode {
    let TraceLinkCmd { file, steps, window, outage, duration, json, plot: plot_dir } = c;
    let opt = trace_link_options(window, outage, duration, steps);
    let rep = match opt.and_then(|o| trace_link::summarise(&file, &o)) {
        Ok(r) => r,
        Err(e) => return fail("trace-link", run::RunError::Usage(e)),
    };
    if let Some(dir) = plot_dir {
        let f = trace_link::figure(&rep);
        let base = dir.join(&f.name);
        if let Err(e) = plot::write(&f.plot, &base) {
            return fail("trace-link", run::RunError::Failed(format!("{}: {e}", dir.display())));
        }
        if !quiet && !json {
            eprintln!("wrote {} and .svg", base.with_extension("png").display());
        }
    }
    if json {
        let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string_pretty(&rep).expect("report serialises"));
    } else if !quiet {
        let _ = write!(std::io::stdout(), "{}", trace_link::render(&rep));
    }
    ExitCode::SUCCESS
}

/// `mplab trace-link`'s durations in whole milliseconds (a trace's resolution).
fn trace_link_options(window: mplab_scenario::Duration, outage: mplab_scenario::Duration, duration: Option<mplab_scenario::Duration>, steps: bool) -> Result<trace_link::Options, String> {
    let whole_ms = |what: &str, d: mplab_scenario::Duration| -> Result<u64, String> {
        let ns = d.as_nanos();
        if ns % 1_000_000 != 0 {
            return Err(format!("--{what} {d}: a whole number of milliseconds (a trace's resolution)"));
        }
        Ok(ns / 1_000_000)
    };
    let window_ms = whole_ms("window", window)?;
    if window_ms == 0 {
        return Err("--window: at least 1ms".into());
    }
    Ok(trace_link::Options { window_ms, outage_ms: whole_ms("outage", outage)?, steps, duration_ms: duration.map(|d| whole_ms("duration", d)).transpose()? })
}

/// `--slurm-*` flags; each overrides the spec file's `[sweep.slurm]`.
#[derive(clap::Args, Debug, Default)]
struct SlurmArgs {
    /// Slurm partition.
    #[arg(long = "slurm-partition", value_name = "NAME")]
    partition: Option<String>,
    /// Time limit of each array task (Slurm's format: 30, 1:00:00, 1-0).
    #[arg(long = "slurm-time", value_name = "TIME")]
    time: Option<String>,
    /// Memory per array task (2G).
    #[arg(long = "slurm-mem", value_name = "SIZE")]
    mem: Option<String>,
    /// Account to charge.
    #[arg(long = "slurm-account", value_name = "NAME")]
    account: Option<String>,
    /// At most N array tasks at once (--array=...%N).
    #[arg(long = "slurm-max-concurrent", value_name = "N")]
    max_concurrent: Option<u32>,
    /// Runs per array task (default: what fills --slurm-task-minutes).
    #[arg(long = "slurm-runs-per-task", value_name = "N")]
    runs_per_task: Option<usize>,
    /// Target wall time of an array task, minutes (default 10).
    #[arg(long = "slurm-task-minutes", value_name = "MIN")]
    task_minutes: Option<f64>,
    /// Another sbatch option, verbatim (repeatable): --slurm-option=--qos=short
    #[arg(long = "slurm-option", value_name = "OPT", allow_hyphen_values = true)]
    extra: Vec<String>,
    /// A shell line each task runs first (repeatable): --slurm-setup 'module load gcc'
    #[arg(long = "slurm-setup", value_name = "LINE")]
    setup: Vec<String>,
}

impl SlurmArgs {
    fn over(self, mut o: slurm::SlurmOptions) -> slurm::SlurmOptions {
        o.partition = self.partition.or(o.partition);
        o.time = self.time.or(o.time);
        o.mem = self.mem.or(o.mem);
        o.account = self.account.or(o.account);
        o.max_concurrent = self.max_concurrent.or(o.max_concurrent);
        o.runs_per_task = self.runs_per_task.or(o.runs_per_task);
        o.task_minutes = self.task_minutes.or(o.task_minutes);
        o.extra.extend(self.extra);
        o.setup.extend(self.setup);
        o
    }
}

/// `mplab sweep --status DIR`: exit 0 when every run is done.
fn slurm_status(dir: &std::path::Path, quiet: bool) -> Result<ExitCode, run::RunError> {
    let s = slurm::status(dir)?;
    if !quiet {
        println!("{}: {} runs: {} done, {} queued, {} running, {} failed, {} not submitted", dir.display(), s.total, s.done, s.queued, s.running, s.failed, s.unsubmitted);
        if let Some(e) = &s.slurm_error {
            println!("  Slurm did not answer ({e}): runs not done count as failed");
        }
        for (task, state, log) in &s.failed_tasks {
            println!("  task {task} ended ({state}) without all its runs; log: {}", log.display());
        }
        if s.failed + s.unsubmitted > 0 {
            println!("  the same mplab sweep command submits the missing runs again");
        }
    }
    Ok(if s.done == s.total { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) })
}

/// `mplab sweep` proper: runs the grid here, or submits it to Slurm.
fn run_sweep(c: SweepCmd, quiet: bool, verbose: bool) -> Result<ExitCode, run::RunError> {
    let SweepCmd { file, params, points, points_file, seeds, sets, out, jobs, no_plots, max_runs, executor, slurm, .. } = c;
    let slurm = (executor == "slurm").then_some(slurm);
    use run::RunError::Usage;
    let spec = sweep::spec_from(&file, &params, &points, points_file.as_deref(), seeds.as_deref(), &sets).map_err(Usage)?;
    let out = out.unwrap_or_else(|| sweep::default_out(&file));
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    if jobs == 0 {
        return Err(Usage("--jobs 0: at least one".into()));
    }
    if let Some(args) = slurm {
        let o = args.over(spec.slurm.clone().unwrap_or_default());
        let r = slurm::submit(&spec, &out, &o, !no_plots)?;
        if !quiet {
            match &r.submission {
                Some(s) => {
                    let runs: usize = s.tasks.iter().map(Vec::len).sum();
                    println!(
                        "submitted {runs} runs as job array {} ({} tasks of up to {} runs; aggregation: job {}); {} of {} runs already done{}{}",
                        s.array_job,
                        s.tasks.len(),
                        r.runs_per_task,
                        s.collect_job.as_deref().unwrap_or("none (run mplab sweep --collect)"),
                        r.done,
                        r.total,
                        if r.pilot > 0 { " (one made here to measure the cost)" } else { "" },
                        if r.in_flight > 0 { format!(", {} queued or running", r.in_flight) } else { String::new() }
                    );
                    println!("  mplab sweep --status {}", out.display());
                }
                None if r.in_flight > 0 => println!("nothing to submit: {} of {} runs done, {} queued or running; mplab sweep --status {}", r.done, r.total, r.in_flight, out.display()),
                None => println!("nothing to submit: all {} runs done; mplab sweep --collect {} aggregates them", r.total, out.display()),
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let opt = sweep::SweepOptions { out: out.clone(), jobs, quiet, verbose, plots: !no_plots, max_runs };
    let o = sweep::sweep(&spec, &opt)?;
    for f in &o.failed {
        error("sweep", &format!("run failed: {f}"));
    }
    if !quiet {
        let done = o.skipped + o.ran;
        println!("{done} of {} runs finished ({} this time, {} already there); results in {}", o.total, o.ran, o.skipped, out.display());
        if o.stopped_early {
            println!("  stopped after {} runs (--max-runs); the same command runs the rest", o.ran);
        }
        if !o.interrupted && o.failed.is_empty() {
            println!("  runs.csv / runs.parquet, aggregate.csv / aggregate.parquet, plots/; mplab report {}", out.display());
        }
    }
    if o.interrupted {
        error("sweep", &format!("interrupted: {} of {} runs finished and kept in {}; run the same command again to finish the rest", o.skipped + o.ran, o.total, out.display()));
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(if o.failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) })
}
