//! Sizing a cluster allocation for a sweep.
//!
//! `cargo bench -p mplab --bench sweep_scale` (the Slurm rows need root:
//! they bring up scripts/slurm-local.sh's one-node cluster and take it down)
//!
//! 1. Plans a 10,000-run sweep (two-paths, 10 rates x 10 delays x 10
//!    subflow settings x 10 seeds): the time to check every point and write
//!    sweep.json.
//! 2. Runs a sample of its runs (SAMPLE, each 10 s of simulated time) with
//!    the local executor on every core, then the same sample through Slurm
//!    with 10 runs per array task and with 1 run per task: runs per hour,
//!    and the wall time Slurm adds per run and per job start.
//! 3. Peak memory (max RSS) of one `mplab run` of a sweep run and of the
//!    k = 8 fat-tree.
//!
//! Prints one table; docs/cluster.md has the figures of this machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SAMPLE: usize = 40;
const CONF: &str = "/run/mplab-slurm/slurm.conf";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mplab(args: &[String]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).env("SLURM_CONF", CONF).output().expect("mplab");
    if !o.status.success() {
        panic!("mplab {}: {}{}", args.join(" "), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    }
    o
}

fn s(x: &str) -> String {
    x.to_string()
}

/// `mplab sweep` of two-paths (10 s simulated, no pcap) over `params`
/// and `seeds` seeds into `out`.
fn sweep_args(out: &Path, params: &[&str], seeds: usize) -> Vec<String> {
    let mut a = vec![s("sweep"), repo().join("scenarios/two-paths.toml").display().to_string()];
    for p in params {
        a.extend([s("--param"), s(p)]);
    }
    a.extend([s("--seeds"), seeds.to_string(), s("--set"), s("duration=10s"), s("--set"), s("probes.pcap=[]"), s("--no-plots"), s("-q"), s("--out"), out.display().to_string()]);
    a
}

/// The 10,000-run grid.
fn grid_args(out: &Path) -> Vec<String> {
    sweep_args(out, &["topology.rate=10Mbit..100Mbit:10Mbit", "topology.delay=2ms..20ms:2ms", "topology.queue.packets=10..100:10"], 10)
}

/// The sample: SAMPLE runs of the grid's first points.
fn sample_args(out: &Path) -> Vec<String> {
    sweep_args(out, &["topology.rate=10Mbit..100Mbit:10Mbit"], SAMPLE / 10)
}

fn wait_idle(limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        let o = Command::new("squeue").args(["--me", "-h", "-o", "%i"]).env("SLURM_CONF", CONF).output();
        if o.map(|o| o.stdout.is_empty()).unwrap_or(true) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// Max RSS (MB) of `mplab run FILE --set ...` in a child process.
fn peak_mb(file: &str, sets: &[&str]) -> (f64, f64) {
    let mut args = vec![s("run"), repo().join("scenarios").join(file).display().to_string(), s("-q"), s("--out"), std::env::temp_dir().join("mplab-scale-mem").display().to_string()];
    for x in sets {
        args.push(s("--set"));
        args.push(s(x));
    }
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mplab")).args(&args).spawn().expect("mplab run");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage for wait4 to fill; our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let _ = child.try_wait();
    (ru.ru_maxrss as f64 / 1024.0, t.elapsed().as_secs_f64())
}

fn main() {
    let tmp = std::env::temp_dir().join(format!("mplab-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("| measure | value |");
    println!("|---|---|");

    // 1. Planning 10,000 runs (a Slurm submission checks and writes the
    // same before it submits anything): --max-runs 0 stops before running.
    let mut a = grid_args(&tmp.join("plan"));
    a.extend([s("--max-runs"), s("0")]);
    let t = Instant::now();
    mplab(&a);
    let plan_s = t.elapsed().as_secs_f64();
    let points = std::fs::read_to_string(tmp.join("plan/sweep.json")).map(|t| t.matches("\"id\"").count()).unwrap_or(0);
    println!("| plan a {}-run sweep ({points} points x 10 seeds): check every point, write sweep.json | {plan_s:.2} s |", points * 10);

    // 2. Local executor.
    let t = Instant::now();
    mplab(&sample_args(&tmp.join("local")));
    let local_s = t.elapsed().as_secs_f64();
    let local_rph = SAMPLE as f64 / local_s * 3600.0;
    println!("| local executor, {cores} cores: {SAMPLE} runs of 10 s simulated (two-paths, 10-100 Mbit/s) | {local_s:.1} s wall, {local_rph:.0} runs/hour |");

    // Through Slurm.
    // SAFETY: no arguments.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let script = repo().join("scripts/slurm-local.sh");
        let was_up = Path::new(CONF).exists();
        let up = Command::new("bash").arg(&script).arg("up").output().expect("slurm-local.sh");
        if up.status.success() {
            for per_task in [10usize, 1] {
                let dir = tmp.join(format!("slurm-{per_task}"));
                let mut a = sample_args(&dir);
                a.extend([s("--executor"), s("slurm"), s("--slurm-runs-per-task"), per_task.to_string(), s("--slurm-mem"), s("500M")]);
                let t = Instant::now();
                mplab(&a);
                if !wait_idle(Duration::from_secs(900)) {
                    println!("| Slurm, {per_task} runs per task | did not finish in 900 s |");
                    continue;
                }
                let wall = t.elapsed().as_secs_f64();
                let rph = SAMPLE as f64 / wall * 3600.0;
                let jobs = SAMPLE.div_ceil(per_task) + 1;
                let overhead = (wall - local_s) / SAMPLE as f64;
                println!(
                    "| Slurm (one node, {cores} CPUs), {per_task} run{} per array task: {jobs} job starts | {wall:.1} s wall, {rph:.0} runs/hour; {:+.2} s per run, {:+.2} s per job start vs local |",
                    if per_task == 1 { "" } else { "s" },
                    overhead,
                    (wall - local_s) / jobs as f64 * cores as f64
                );
                // Same results as the local executor.
                let same = std::fs::read(dir.join("aggregate.csv")).ok() == std::fs::read(tmp.join("local/aggregate.csv")).ok();
                if !same {
                    println!("| Slurm, {per_task} runs per task: aggregate.csv differs from the local one | MISMATCH |");
                }
            }
            if !was_up {
                let _ = Command::new("bash").arg(&script).arg("down").output();
            }
        } else {
            println!("| Slurm | not measured: slurm-local.sh up failed: {} |", String::from_utf8_lossy(&up.stderr).trim());
        }
    } else {
        println!("| Slurm | not measured (needs root for the one-node cluster) |");
    }

    // 3. Memory per simulation.
    let (mb, w) = peak_mb("two-paths.toml", &["duration=10s", "probes.pcap=[]", "topology.rate=100Mbit"]);
    println!("| peak memory, one sweep run (two-paths 100 Mbit/s, 10 s) | {mb:.0} MB ({w:.2} s wall) |");
    let (mb, w) = peak_mb("seed001-fattree-k8.toml", &["duration=2s"]);
    println!("| peak memory, k = 8 fat-tree (128 hosts, 100 Mbit/s, 2 s) | {mb:.0} MB ({w:.1} s wall) |");
    let _ = std::fs::remove_dir_all(&tmp);
}
