//! `mplab`: the Multipath TCP lab command line.

mod capture;
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
