//! `mplab sweep --executor slurm` end to end on a real one-node Slurm
//! cluster (scripts/slurm-local.sh; root, as CI is): the results match the
//! local executor byte for byte, a killed array task shows in `--status`
//! with its log, and the same command resubmits only what is missing.
//! Without Slurm the executor refuses clearly.

mod lab_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lab_common::*;

const CONF: &str = "/run/mplab-slurm/slurm.conf";

/// The sweep of sweep_cli's tests, with plots off.
fn sweep_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = tiny_sweep_args(out);
    a.push("--no-plots".into());
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn mplab_slurm(cwd: &Path, args: &[String]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).current_dir(cwd).env("SLURM_CONF", CONF).output().unwrap();
    Out { code: o.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&o.stdout).into_owned(), stderr: String::from_utf8_lossy(&o.stderr).into_owned() }
}

fn slurm(prog: &str, args: &[&str]) -> String {
    let o = Command::new(prog).args(args).env("SLURM_CONF", CONF).output().unwrap_or_else(|e| panic!("{prog}: {e}"));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Waits (at most `limit`) until none of our jobs is queued or running.
fn wait_idle(limit: Duration) {
    let t = Instant::now();
    while t.elapsed() < limit {
        if slurm("squeue", &["--me", "-h", "-o", "%i"]).trim().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("jobs still queued after {limit:?}:\n{}", slurm("squeue", &["--me"]));
}

/// Brings the one-node cluster up, and down when dropped (pass or fail),
/// unless it was already up before the test.
struct Cluster {
    was_up: bool,
}

impl Cluster {
    fn up() -> Option<Cluster> {
        let script = repo().join("scripts/slurm-local.sh");
        let was_up = Path::new(CONF).exists();
        let o = Command::new("bash").arg(&script).arg("up").output().unwrap();
        if !o.status.success() {
            panic!("slurm-local.sh up failed:\n{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        }
        Some(Cluster { was_up })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("scancel").args(["--me"]).env("SLURM_CONF", CONF).status();
        if !self.was_up {
            let _ = Command::new("bash").arg(repo().join("scripts/slurm-local.sh")).arg("down").status();
        }
    }
}

/// Every file of a sweep's runs/ (meta.json aside: it records the run's
/// wall time), by relative path.
fn run_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("runs")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "meta.json") {
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn without_slurm_the_executor_says_so() {
    let tmp = Scratch::new("noslurm");
    let out = tmp.join("sw");
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(sweep_args(&out, &["--executor", "slurm"])).current_dir(&tmp.0).env("PATH", "/nonexistent").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("sinfo not found") && err.contains("slurm-local.sh"), "{err}");
    // Nothing ran and no run is half there.
    assert!(std::fs::read_dir(out.join("runs")).map_or(true, |mut d| d.next().is_none()));
}

#[test]
fn slurm_sweep_matches_local_and_resumes_a_killed_task() {
    if !is_root() {
        eprintln!("skipped: needs root (a one-node Slurm cluster)");
        return;
    }
    let _c = Cluster::up();
    let tmp = Scratch::new("slurm");
    let (local, sl) = (tmp.join("local"), tmp.join("slurm"));
    let o = mplab_slurm(&tmp.0, &sweep_args(&local, &["-q"]));
    assert_eq!(o.code, 0, "{}", o.stderr);

    // A partition the cluster does not have: refused, named, nothing queued.
    let o = mplab_slurm(&tmp.0, &sweep_args(&tmp.join("bad"), &["--executor", "slurm", "--slurm-runs-per-task", "1", "--slurm-partition", "nosuch"]));
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("refused") && o.stderr.contains("partition"), "{}", o.stderr);
    assert!(slurm("squeue", &["--me", "-h"]).trim().is_empty());

    // Four tasks of two runs, one at a time (from the spec file's
    // [sweep.slurm] table); the last is cancelled while it waits (a task
    // that dies: its runs stay absent).
    let spec = tmp.join("tiny.sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "[sweep]\nscenario = {:?}\nseeds = 2\nset = {{ duration = \"2s\", \"topology.loss\" = 0.01, \"probes.pcap\" = [] }}\n[[sweep.param]]\npath = \"topology.rate\"\nvalues = \"10Mbit,20Mbit\"\n[[sweep.param]]\npath = \"topology.delay\"\nvalues = \"5ms..10ms:5ms\"\n[sweep.slurm]\nruns_per_task = 2\nmax_concurrent = 1\nmem = \"200M\"\n",
            scenario("two-paths.toml").display().to_string()
        ),
    )
    .unwrap();
    let o = mplab_slurm(&tmp.0, &["sweep".into(), spec.display().to_string(), "--executor".into(), "slurm".into(), "--no-plots".into(), "--out".into(), sl.display().to_string()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("submitted 8 runs") && o.stdout.contains("4 tasks"), "{}", o.stdout);
    let job = o.stdout.split("job array ").nth(1).and_then(|s| s.split_whitespace().next()).expect("job id").to_string();
    slurm("scancel", &[&format!("{job}_3")]);
    wait_idle(Duration::from_secs(180));

    let st = mplab_slurm(&tmp.0, &["sweep".into(), "--status".into(), sl.display().to_string()]);
    assert_eq!(st.code, 1, "{}\n{}", st.stdout, st.stderr);
    assert!(st.stdout.contains("8 runs: 6 done, 0 queued, 0 running, 2 failed"), "{}", st.stdout);
    assert!(st.stdout.contains(&format!("task {job}_3 ended")) && st.stdout.contains("sub-0-3.out"), "{}", st.stdout);

    // A run a dying node left half written is not trusted.
    let missing = std::fs::read_dir(local.join("runs"))
        .unwrap()
        .flatten()
        .flat_map(|p| [1, 2].map(|s| sl.join("runs").join(p.file_name()).join(format!("seed-{s}"))))
        .find(|d| !d.join("summary.json").exists())
        .expect("a missing run");
    let partial = missing.with_file_name(format!("{}.partial", missing.file_name().unwrap().to_string_lossy()));
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("summary.json"), "{ half").unwrap();

    // The same command again: only the two missing runs.
    let o = mplab_slurm(&tmp.0, &["sweep".into(), spec.display().to_string(), "--executor".into(), "slurm".into(), "--no-plots".into(), "--out".into(), sl.display().to_string()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("submitted 2 runs") && o.stdout.contains("6 of 8 runs already done"), "{}", o.stdout);
    wait_idle(Duration::from_secs(180));
    let st = mplab_slurm(&tmp.0, &["sweep".into(), "--status".into(), sl.display().to_string()]);
    assert_eq!(st.code, 0, "{}", st.stdout);
    assert!(st.stdout.contains("8 runs: 8 done"), "{}", st.stdout);

    // Byte-identical per-run results, and the same aggregate (written by
    // the dependent collect job).
    assert!(!partial.exists(), "the half-written run was replaced");
    let (a, b) = (run_files(&local), run_files(&sl));
    assert_eq!(a.len(), b.len());
    for ((pa, da), (pb, db)) in a.iter().zip(&b) {
        assert_eq!(pa, pb);
        assert!(da == db, "{} differs between the local and the Slurm run", pa.display());
    }
    assert!(a.len() >= 8 * 3, "{} files", a.len());
    assert_eq!(std::fs::read(local.join("aggregate.csv")).unwrap(), std::fs::read(sl.join("aggregate.csv")).unwrap());
    let meta = std::fs::read_to_string(sl.join("meta.json")).unwrap();
    assert!(meta.contains("\"executor\": \"slurm\"") && meta.contains("\"runs_present\": 8"), "{meta}");
}

fn is_root() -> bool {
    // SAFETY: no arguments, no side effects.
    unsafe { libc::geteuid() == 0 }
}
