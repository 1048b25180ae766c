//! `mplab`: the Multipath TCP lab command line.

mod capture;
mod run;
mod trace;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes: 0 ok, 1 the run failed (or a check mismatched), 2 usage or input error.
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(name = "mplab", version, about = "Multipath TCP lab: simulate, emulate and inspect MPTCP", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write its results directory (summary.json,
    /// flows.csv, interfaces.csv, queues.csv, pcaps if the scenario asks).
    ///
    /// Examples:
    ///   mplab run scenarios/tcp-single.toml
    ///   mplab run scenarios/tcp-single.toml --seed 7 --set links.0.rate=50Mbit --out /tmp/r --json
    #[command(verbatim_doc_comment)]
    Run {
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
        /// No progress bar, no table.
        #[arg(long, short)]
        quiet: bool,
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
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { scenario, backend, seed, sets, out, json, quiet } => {
            let args = run::RunArgs { scenario, backend, seed, sets, out, json, quiet };
            match run::run(&args) {
                Ok(_) => ExitCode::SUCCESS,
                Err(run::RunError::Usage(m)) => {
                    eprintln!("mplab run: {m}");
                    ExitCode::from(EXIT_USAGE)
                }
                Err(run::RunError::Failed(m)) => {
                    eprintln!("mplab run: {m}");
                    ExitCode::from(EXIT_FAILED)
                }
            }
        }
        Command::Clean { force } => {
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
        Command::Trace { file, json } => match trace::trace_file(&file) {
            Ok(rep) => {
                if json {
                    println!("{}", serde_json::to_string_pretty(&rep).expect("report serialises"));
                } else {
                    print!("{}", trace::render(&rep));
                }
                if rep.checks_mismatch > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
            }
            Err(e) => {
                eprintln!("mplab trace: {e}");
                ExitCode::from(EXIT_USAGE)
            }
        },
    }
}
