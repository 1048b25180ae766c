//! `mplab sweep --executor slurm`: a sweep as Slurm job arrays.
//!
//! The sweep directory (on a file system every node shares) is the only
//! state. Each submission `K` writes `slurm/plan-K.json` (the scenario, the
//! fixed overrides, every point and seed: what a task needs to rebuild a
//! run exactly as the local executor does), `slurm/sub-K.json` (the job
//! ids and which runs each array task owns) and `slurm/sub-K.sh`, submits
//! the array with `sbatch`, then a one-task job that depends on it
//! (`afterany`) and aggregates (`mplab sweep --collect`). An array task
//! (`mplab sweep-task DIR K I`) runs its batch of runs one after another
//! through [`crate::sweep::run_one`]: each run's results are complete or
//! absent. Resuming submits only the runs that have no results and are
//! not owned by a task Slurm still has queued or running; `--status` puts
//! Slurm's view and the directory's together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::grid::{self, Point};
use crate::run::RunError;
use crate::sweep::{self, RunOutcome, SweepSpec};

pub use crate::slurm_options::SlurmOptions;

/// Slurm refuses an array larger than its MaxArraySize (1001 by default):
/// more runs than this go into fewer, larger tasks.
const MAX_TASKS: usize = 1000;

/// A submission's record (slurm/sub-K.json).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Submission {
    pub id: usize,
    pub array_job: String,
    pub collect_job: Option<String>,
    /// Per array task: the runs it owns, as (point id, seed).
    pub tasks: Vec<Vec<(String, u64)>>,
    pub submitted_unix: u64,
}

/// What a task needs to rebuild its runs (slurm/plan-K.json).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Plan {
    scenario: PathBuf,
    fixed: Vec<(String, String)>,
    points: Vec<Point>,
    seeds: Vec<u64>,
    base_hash: String,
}

fn slurm_dir(out: &Path) -> PathBuf {
    out.join("slurm")
}

fn err(what: impl std::fmt::Display) -> RunError {
    RunError::Failed(what.to_string())
}

/// Runs a Slurm command; its stderr becomes the error.
fn slurm_cmd(prog: &str, args: &[String]) -> Result<String, String> {
    let o = Command::new(prog).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("{prog} not found: Slurm's client commands are not installed here (or not on PATH; `module load slurm`?). On a test machine: sudo bash scripts/slurm-local.sh up")
        } else {
            format!("{prog}: {e}")
        }
    })?;
    if !o.status.success() {
        let e = String::from_utf8_lossy(&o.stderr).trim().to_string();
        return Err(format!("{prog} {}: {}", args.join(" "), if e.is_empty() { o.status.to_string() } else { e }));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Every submission of a sweep directory, oldest first.
pub fn submissions(out: &Path) -> Vec<Submission> {
    let mut v: Vec<Submission> = std::fs::read_dir(slurm_dir(out))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("sub-") && e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok().and_then(|t| serde_json::from_str(&t).ok()))
        .collect();
    v.sort_by_key(|s| s.id);
    v
}

/// Slurm's state of every array task of ours it still knows:
/// ("JOB_TASK" or "JOB") -> state (PENDING, RUNNING, ...).
fn queue() -> Result<BTreeMap<String, String>, String> {
    let out = slurm_cmd("squeue", &["--me".into(), "-h".into(), "-r".into(), "-o".into(), "%i|%T".into()])?;
    Ok(out.lines().filter_map(|l| l.split_once('|')).map(|(a, b)| (a.trim().to_string(), b.trim().to_string())).collect())
}

/// The runs owned by tasks Slurm still has queued or running.
fn in_flight(subs: &[Submission], q: &BTreeMap<String, String>) -> BTreeSet<(String, u64)> {
    let mut s = BTreeSet::new();
    for sub in subs {
        for (i, runs) in sub.tasks.iter().enumerate() {
            let alive = q.get(&format!("{}_{i}", sub.array_job)).is_some_and(|st| !is_final(st))
                // A pending array not yet split into tasks shows as "JOB_[0-9]".
                || q.iter().any(|(k, st)| k.starts_with(&format!("{}_[", sub.array_job)) && !is_final(st));
            if alive {
                s.extend(runs.iter().cloned());
            }
        }
    }
    s
}

fn is_final(state: &str) -> bool {
    matches!(state, "COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY" | "BOOT_FAIL" | "DEADLINE" | "PREEMPTED")
}

/// Runs per task: `runs_per_task`, or as many as fill `task_minutes` at
/// the runs' cost (the median wall time of the runs already done, else one
/// run made here first, whose results are kept), and never more than
/// [`MAX_TASKS`] tasks.
fn batch_size(opt: &SlurmOptions, missing: usize, run_cost_s: f64) -> usize {
    let by_cost = match opt.runs_per_task {
        Some(n) => n.max(1),
        None => {
            let target = opt.task_minutes.unwrap_or(10.0) * 60.0;
            ((target / run_cost_s.max(1e-3)).floor() as usize).max(1)
        }
    };
    by_cost.max(missing.div_ceil(MAX_TASKS)).min(missing.max(1))
}

/// Median wall time of the finished runs' meta.json, if any.
fn measured_cost(out: &Path, points: &[Point], seeds: &[u64]) -> Option<f64> {
    let mut v: Vec<f64> = Vec::new();
    for p in points {
        for &s in seeds {
            let m = sweep::run_dir(out, p, s).join("meta.json");
            if let Some(w) = std::fs::read_to_string(m).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()).and_then(|j| j["wall_time_s"].as_f64()) {
                v.push(w);
            }
        }
    }
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// What `submit` did.
pub struct Submitted {
    pub total: usize,
    pub done: usize,
    pub in_flight: usize,
    /// Runs made here to measure the cost (kept).
    pub pilot: usize,
    pub submission: Option<Submission>,
    pub runs_per_task: usize,
}

/// Submits the sweep's missing runs.
pub fn submit(spec: &SweepSpec, out: &Path, opt: &SlurmOptions, plots: bool) -> Result<Submitted, RunError> {
    // The directory must be the same path on every node.
    let out = std::path::absolute(out).map_err(err)?;
    let prep = sweep::prepare(spec, &out)?;
    // Which Slurm: a clear refusal before any run or file of ours.
    slurm_cmd("sinfo", &["--version".into()]).map_err(RunError::Usage)?;
    shared_enough(&out)?;
    let sd = slurm_dir(&out);
    std::fs::create_dir_all(sd.join("logs")).map_err(|e| err(format!("{}: {e}", sd.display())))?;
    let subs = submissions(&out);
    let q = if subs.is_empty() { BTreeMap::new() } else { queue().map_err(RunError::Usage)? };
    let flying = in_flight(&subs, &q);
    let mut missing: Vec<(usize, u64)> = prep.missing.iter().copied().filter(|&(pi, s)| !flying.contains(&(grid::point_id(&prep.points[pi]), s))).collect();
    let mut pilot = 0;
    let cost = match measured_cost(&out, &prep.points, &spec.seeds) {
        Some(c) => c,
        None if opt.runs_per_task.is_none() && !missing.is_empty() => {
            // One run here, timed: what a task's runs will cost.
            let (pi, s) = missing.remove(0);
            let t = std::time::Instant::now();
            if let RunOutcome::Failed(m) = sweep::run_one(spec, &out, &prep.points[pi], s, None) {
                return Err(err(format!("the first run (made here to measure the runs' cost) failed: {}: {m}", sweep::run_label(&prep.points[pi], s))));
            }
            pilot = 1;
            t.elapsed().as_secs_f64()
        }
        None => 1.0,
    };
    let n = batch_size(opt, missing.len(), cost);
    let mut res = Submitted { total: prep.total, done: prep.skipped + pilot, in_flight: flying.len(), pilot, submission: None, runs_per_task: n };
    if missing.is_empty() {
        return Ok(res);
    }
    let exe = std::env::current_exe().map_err(err)?;
    let id = subs.last().map_or(0, |s| s.id + 1);
    let plan = Plan {
        scenario: std::path::absolute(&spec.scenario).map_err(err)?,
        fixed: spec.fixed.clone(),
        points: prep.points.clone(),
        seeds: spec.seeds.clone(),
        base_hash: prep.base_hash.clone(),
    };
    let write = |name: String, text: String| std::fs::write(sd.join(&name), text).map_err(|e| err(format!("{}: {e}", sd.join(name).display())));
    write(format!("plan-{id}.json"), serde_json::to_string_pretty(&plan).map_err(err)? + "\n")?;
    let tasks: Vec<Vec<(String, u64)>> = missing.chunks(n).map(|c| c.iter().map(|&(pi, s)| (grid::point_id(&prep.points[pi]), s)).collect()).collect();
    let script = task_script(&out, id, tasks.len(), opt, &exe);
    write(format!("sub-{id}.sh"), script)?;
    let array_job = slurm_cmd("sbatch", &["--parsable".into(), sd.join(format!("sub-{id}.sh")).display().to_string()]).map_err(|e| RunError::Usage(format!("the cluster refused the sweep's job array: {e}")))?;
    let array_job = array_job.trim().split(';').next().unwrap_or("").to_string();
    let mut collect_args = vec!["--parsable".to_string(), format!("--dependency=afterany:{array_job}"), format!("--job-name=mplab-collect-{id}"), format!("--output={}", sd.join("logs").join(format!("sub-{id}-collect.out")).display())];
    collect_args.extend(common_options(opt, false));
    let no_plots = if plots { "" } else { " --no-plots" };
    collect_args.push(format!("--wrap={}{} sweep --collect {}{no_plots}", setup_prefix(opt), shell_quote(&exe.display().to_string()), shell_quote(&out.display().to_string())));
    let collect_job = slurm_cmd("sbatch", &collect_args).ok().map(|s| s.trim().split(';').next().unwrap_or("").to_string());
    let sub = Submission { id, array_job, collect_job, tasks, submitted_unix: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) };
    write(format!("sub-{id}.json"), serde_json::to_string_pretty(&sub).map_err(err)? + "\n")?;
    res.submission = Some(sub);
    Ok(res)
}

/// A sweep directory on tmpfs is this machine's memory: refused when the
/// cluster has other nodes (they would write their results elsewhere).
fn shared_enough(out: &Path) -> Result<(), RunError> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let c = std::ffi::CString::new(out.as_os_str().as_encoded_bytes()).map_err(err)?;
    // SAFETY: a valid C string and a zeroed statfs for the call to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 || st.f_type as i64 != TMPFS_MAGIC {
        return Ok(());
    }
    let nodes = slurm_cmd("sinfo", &["-h".into(), "-N".into(), "-o".into(), "%N".into()]).unwrap_or_default();
    let mut names: Vec<&str> = nodes.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    names.dedup();
    if names.len() > 1 {
        return Err(RunError::Usage(format!("{} is on tmpfs, this machine's memory: the cluster's {} nodes cannot write their results there; give an --out on the shared file system", out.display(), names.len())));
    }
    Ok(())
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn setup_prefix(opt: &SlurmOptions) -> String {
    opt.setup.iter().map(|l| format!("{l} && ")).collect()
}

/// `#SBATCH` options every job of the sweep gets.
fn common_options(opt: &SlurmOptions, array: bool) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(p) = &opt.partition {
        v.push(format!("--partition={p}"));
    }
    if let Some(a) = &opt.account {
        v.push(format!("--account={a}"));
    }
    if array {
        if let Some(t) = &opt.time {
            v.push(format!("--time={t}"));
        }
        if let Some(m) = &opt.mem {
            v.push(format!("--mem={m}"));
        }
        v.extend(opt.extra.iter().cloned());
    }
    v
}

fn task_script(out: &Path, id: usize, tasks: usize, opt: &SlurmOptions, exe: &Path) -> String {
    let logs = slurm_dir(out).join("logs");
    let cap = opt.max_concurrent.map(|n| format!("%{n}")).unwrap_or_default();
    let mut s = String::from("#!/bin/bash\n# mplab sweep: one array task per batch of runs (mplab sweep-task).\n");
    s += &format!("#SBATCH --job-name=mplab-sweep-{id}\n#SBATCH --array=0-{}{cap}\n", tasks - 1);
    s += &format!("#SBATCH --output={}/sub-{id}-%a.out\n#SBATCH --cpus-per-task=1\n#SBATCH --ntasks=1\n", logs.display());
    for o in common_options(opt, true) {
        s += &format!("#SBATCH {o}\n");
    }
    s += "set -e\n";
    for l in &opt.setup {
        s += &format!("{l}\n");
    }
    s += &format!("exec {} sweep-task {} {id} \"$SLURM_ARRAY_TASK_ID\"\n", shell_quote(&exe.display().to_string()), shell_quote(&out.display().to_string()));
    s
}

/// An array task: runs its batch; a line per run on stdout (the task's
/// log). Fails (exit 1) if any run failed.
pub fn run_task(out: &Path, id: usize, task: usize) -> Result<usize, RunError> {
    let sd = slurm_dir(out);
    if !out.join("sweep.json").exists() {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        return Err(err(format!("{} is not visible on node {}: the sweep directory must be on a file system every node shares", out.display(), host.trim())));
    }
    let read = |p: PathBuf| std::fs::read_to_string(&p).map_err(|e| err(format!("{}: {e}", p.display())));
    let plan: Plan = serde_json::from_str(&read(sd.join(format!("plan-{id}.json")))?).map_err(err)?;
    let sub: Submission = serde_json::from_str(&read(sd.join(format!("sub-{id}.json")))?).map_err(err)?;
    let runs = sub.tasks.get(task).ok_or_else(|| err(format!("submission {id} has no task {task}")))?;
    let spec = SweepSpec { scenario: plan.scenario.clone(), fixed: plan.fixed.clone(), points: plan.points.clone(), seeds: plan.seeds.clone(), ..Default::default() };
    // The same scenario text and overrides as at submission, or no run.
    let now = sweep::base_hash(&spec).map_err(|e| err(format!("{}: {e}", spec.scenario.display())))?;
    if now != plan.base_hash {
        return Err(err(format!("{} changed since the sweep was submitted; its runs would not match the others", spec.scenario.display())));
    }
    let abort = mplab_emu::signal::install();
    let mut failed = 0;
    for (pid, seed) in runs {
        let Some(p) = plan.points.iter().find(|p| &grid::point_id(p) == pid) else {
            failed += 1;
            println!("no point {pid} in the plan");
            continue;
        };
        let label = sweep::run_label(p, *seed);
        if sweep::run_dir(out, p, *seed).join("summary.json").exists() {
            println!("already done: {label}");
            continue;
        }
        let t = std::time::Instant::now();
        match sweep::run_one(&spec, out, p, *seed, Some(&abort)) {
            RunOutcome::Done(g) => println!("done {label}: {:.2} Mbit/s, {:.2} s", g / 1e6, t.elapsed().as_secs_f64()),
            RunOutcome::Failed(m) => {
                failed += 1;
                println!("FAILED {label}: {m}");
            }
            RunOutcome::Interrupted => return Err(err("interrupted")),
        }
    }
    if failed > 0 {
        return Err(err(format!("{failed} of {} runs failed", runs.len())));
    }
    Ok(runs.len())
}

/// `mplab sweep --status DIR`.
pub struct Status {
    pub total: usize,
    pub done: usize,
    pub queued: usize,
    pub running: usize,
    /// Runs without results whose task is no longer queued or running.
    pub failed: usize,
    /// (task, state, log path) of the tasks that ended without all their runs.
    pub failed_tasks: Vec<(String, String, PathBuf)>,
    /// Runs no submission owns (not submitted yet).
    pub unsubmitted: usize,
    /// Slurm could not be asked (its error): queue states unknown.
    pub slurm_error: Option<String>,
}

pub fn status(out: &Path) -> Result<Status, RunError> {
    let j: serde_json::Value = std::fs::read_to_string(out.join("sweep.json")).ok().and_then(|t| serde_json::from_str(&t).ok()).ok_or_else(|| RunError::Usage(format!("{}: not a sweep directory (no sweep.json)", out.display())))?;
    let seeds: Vec<u64> = j["seeds"].as_array().into_iter().flatten().filter_map(|s| s.as_u64()).collect();
    let ids: Vec<String> = j["points"].as_array().into_iter().flatten().filter_map(|p| p["id"].as_str().map(String::from)).collect();
    let done_run = |pid: &str, s: u64| out.join("runs").join(pid).join(format!("seed-{s}")).join("summary.json").exists();
    let total = ids.len() * seeds.len();
    let done = ids.iter().flat_map(|p| seeds.iter().map(move |&s| (p, s))).filter(|(p, s)| done_run(p, *s)).count();
    let subs = submissions(out);
    let (q, slurm_error) = match queue() {
        Ok(q) => (q, None),
        Err(e) => (BTreeMap::new(), Some(e)),
    };
    let mut st = Status { total, done, queued: 0, running: 0, failed: 0, failed_tasks: Vec::new(), unsubmitted: 0, slurm_error };
    let mut owned: BTreeSet<(String, u64)> = BTreeSet::new();
    // The newest submission that owns a run decides its state.
    let mut state_of: BTreeMap<(String, u64), (String, String, PathBuf)> = BTreeMap::new();
    for sub in &subs {
        for (i, runs) in sub.tasks.iter().enumerate() {
            let key = format!("{}_{i}", sub.array_job);
            let pending_array = q.iter().any(|(k, s)| k.starts_with(&format!("{}_[", sub.array_job)) && !is_final(s));
            let state = q.get(&key).cloned().unwrap_or_else(|| if pending_array { "PENDING".into() } else { "ENDED".into() });
            let log = slurm_dir(out).join("logs").join(format!("sub-{}-{i}.out", sub.id));
            for r in runs {
                owned.insert(r.clone());
                state_of.insert(r.clone(), (key.clone(), state.clone(), log.clone()));
            }
        }
    }
    let mut failed_tasks: BTreeMap<String, (String, PathBuf)> = BTreeMap::new();
    for p in &ids {
        for &s in &seeds {
            if done_run(p, s) {
                continue;
            }
            match state_of.get(&(p.clone(), s)) {
                None => st.unsubmitted += 1,
                Some((task, state, log)) => match state.as_str() {
                    "PENDING" | "CONFIGURING" | "REQUEUED" | "RESV_DEL_HOLD" | "REQUEUE_HOLD" | "SUSPENDED" => st.queued += 1,
                    "RUNNING" | "COMPLETING" => st.running += 1,
                    other => {
                        st.failed += 1;
                        failed_tasks.insert(task.clone(), (other.to_string(), log.clone()));
                    }
                },
            }
        }
    }
    st.failed_tasks = failed_tasks.into_iter().map(|(t, (s, l))| (t, s, l)).collect();
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_fill_the_target_time_and_respect_the_array_limit() {
        let o = SlurmOptions::default();
        // 10 minutes of 2 s runs: 300 per task, but never more than the runs.
        assert_eq!(batch_size(&o, 1000, 2.0), 300);
        assert_eq!(batch_size(&o, 50, 2.0), 50);
        // Slow runs: one per task.
        assert_eq!(batch_size(&o, 50, 3600.0), 1);
        // 100 000 fast-enough runs still fit in 1000 tasks.
        assert_eq!(batch_size(&SlurmOptions { runs_per_task: Some(1), ..o.clone() }, 100_000, 1.0), 100);
        assert_eq!(batch_size(&SlurmOptions { runs_per_task: Some(7), ..o }, 20, 1.0), 7);
    }

    #[test]
    fn scripts_carry_the_options_and_run_the_task() {
        let o = SlurmOptions { partition: Some("short".into()), time: Some("0:30:00".into()), mem: Some("2G".into()), account: Some("proj1".into()), max_concurrent: Some(4), extra: vec!["--qos=low".into()], setup: vec!["module load rust".into()], ..Default::default() };
        let s = task_script(Path::new("/shared/sw"), 2, 12, &o, Path::new("/opt/mplab/bin/mplab"));
        for want in ["#SBATCH --array=0-11%4", "#SBATCH --partition=short", "#SBATCH --time=0:30:00", "#SBATCH --mem=2G", "#SBATCH --account=proj1", "#SBATCH --qos=low", "#SBATCH --output=/shared/sw/slurm/logs/sub-2-%a.out", "module load rust\n", "exec '/opt/mplab/bin/mplab' sweep-task '/shared/sw' 2 \"$SLURM_ARRAY_TASK_ID\""] {
            assert!(s.contains(want), "{want:?} not in\n{s}");
        }
    }

    #[test]
    fn final_states_end_a_task() {
        assert!(is_final("COMPLETED") && is_final("NODE_FAIL") && is_final("TIMEOUT"));
        assert!(!is_final("PENDING") && !is_final("RUNNING"));
    }

    #[test]
    fn queued_and_running_tasks_own_their_runs() {
        let sub = Submission { id: 0, array_job: "41".into(), collect_job: None, tasks: vec![vec![("a".into(), 1)], vec![("b".into(), 1)], vec![("c".into(), 1)]], submitted_unix: 0 };
        let q: BTreeMap<String, String> = [("41_0".to_string(), "RUNNING".to_string()), ("41_1".into(), "PENDING".into())].into_iter().collect();
        let f = in_flight(std::slice::from_ref(&sub), &q);
        assert_eq!(f, [("a".to_string(), 1), ("b".to_string(), 1)].into_iter().collect());
        // An array still pending as one line owns all its runs.
        let q: BTreeMap<String, String> = [("41_[0-2%1]".to_string(), "PENDING".to_string())].into_iter().collect();
        assert_eq!(in_flight(&[sub], &q).len(), 3);
    }
}
