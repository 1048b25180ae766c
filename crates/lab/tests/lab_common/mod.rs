//! Helpers shared by the sweep / report / scenario tests: run mplab in a
//! scratch directory, read its CSVs by column name, find optional tools.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn scenario(name: &str) -> PathBuf {
    repo().join("scenarios").join(name)
}

/// A scratch directory, removed at the end (kept and named when the test fails).
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(test: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("mplab-lab-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `mplab sweep` arguments of a 2 x 2 grid (rate x delay) x 2 seeds of
/// two-paths, 2 s each, 1 % loss (seeds differ), into `out`.
pub fn tiny_sweep_args(out: &Path) -> Vec<String> {
    let sc = scenario("two-paths.toml");
    let mut a = vec!["sweep".to_string(), sc.display().to_string()];
    for x in ["--param", "topology.rate=10Mbit,20Mbit", "--param", "topology.delay=5ms..10ms:5ms", "--seeds", "2", "--set", "duration=2s", "--set", "topology.loss=0.01", "--set", "probes.pcap=[]", "--out"] {
        a.push(x.to_string());
    }
    a.push(out.display().to_string());
    a
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn mplab<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).current_dir(cwd).output().unwrap();
    Out { code: o.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&o.stdout).into_owned(), stderr: String::from_utf8_lossy(&o.stderr).into_owned() }
}

/// `mplab` as [`mplab`] does, but given up on after `limit`: the child is
/// stopped (SIGTERM, then SIGKILL 10 s later) and `Err` says how. A
/// process the kernel wedged (in
/// uninterruptible sleep) cannot be reaped; its output readers are left
/// behind rather than waited for.
pub fn mplab_within<S: AsRef<OsStr>>(cwd: &Path, args: &[S], limit: std::time::Duration) -> Result<Out, String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).current_dir(cwd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            let _ = tx.send(String::from_utf8_lossy(&b).into_owned());
        });
        rx
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            return Ok(Out { code: st.code().unwrap_or(-1), stdout: out.recv().unwrap_or_default(), stderr: err.recv().unwrap_or_default() });
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // SIGTERM first: mplab then stops its threads and deletes its
    // namespaces; SIGKILL if it cannot (a thread stuck in the kernel).
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    for _ in 0..50 {
        if child.try_wait().unwrap().is_some() {
            return Err(format!("mplab still running after {} s, stopped by SIGTERM", limit.as_secs()));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = child.kill();
    Err(format!("mplab still running after {} s, and 10 s after SIGTERM; killed", limit.as_secs()))
}

/// The kernel log's lines (empty when it cannot be read).
pub fn kernel_log() -> Vec<String> {
    Command::new("dmesg").output().map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect()).unwrap_or_default()
}

/// A CSV as (header, rows), with RFC 4180 quotes.
pub fn read_csv(p: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut recs = Vec::new();
    let (mut rec, mut field, mut q) = (Vec::new(), String::new(), false);
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if q {
            if c == '"' {
                if it.peek() == Some(&'"') {
                    it.next();
                    field.push('"');
                } else {
                    q = false;
                }
            } else {
                field.push(c);
            }
        } else if c == '"' {
            q = true;
        } else if c == ',' {
            rec.push(std::mem::take(&mut field));
        } else if c == '\n' {
            rec.push(std::mem::take(&mut field));
            recs.push(std::mem::take(&mut rec));
        } else {
            field.push(c);
        }
    }
    let mut recs = recs.into_iter();
    let header = recs.next().unwrap_or_else(|| panic!("{}: empty", p.display()));
    let rows: Vec<Vec<String>> = recs.collect();
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{}: row {r:?} vs header {header:?}", p.display());
    }
    (header, rows)
}

pub fn col(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// Is `cmd` runnable? When it is not: skip with a message outside CI, fail in CI.
pub fn need(cmd: &str, probe: &[&str], what: &str) -> bool {
    let ok = Command::new(cmd).args(probe).output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        if std::env::var_os("CI").is_some() {
            panic!("{what} is needed in CI (scripts/setup.sh installs it)");
        }
        eprintln!("SKIPPED: {what} is not installed (scripts/setup.sh installs it)");
    }
    ok
}
