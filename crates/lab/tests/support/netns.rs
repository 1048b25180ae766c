//! Test-only network-namespace fixture: unique names per test process,
//! every command checked, and everything removed on drop (also on panic).

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false)
}

/// Whether a test that needs root runs: yes as root; skipped (false) off
/// CI without it; a failure in CI, which must run every test as root.
pub fn root_or_skip() -> bool {
    if is_root() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI must run this test as root");
    }
    eprintln!("skipped: needs root");
    false
}

pub fn have(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {cmd}")).stdout(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

/// Runs a command, panicking with the command line and its stderr on failure.
pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap_or_else(|e| panic!("spawn `{cmd}`: {e}"));
    if !out.status.success() {
        panic!("`{cmd}` failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A set of namespaces and background processes owned by one test.
pub struct Lab {
    pub prefix: String,
    namespaces: Vec<String>,
    children: Vec<Child>,
}

impl Lab {
    pub fn new(tag: &str) -> Lab {
        let prefix = format!("mpl{}{}", tag, std::process::id() % 100000);
        Lab { prefix, namespaces: Vec::new(), children: Vec::new() }
    }

    /// Creates namespace `<prefix>-<name>` with loopback up; returns its name.
    pub fn ns(&mut self, name: &str) -> String {
        let ns = format!("{}-{}", self.prefix, name);
        let _ = Command::new("ip").args(["netns", "del", &ns]).stderr(Stdio::null()).status();
        sh(&format!("ip netns add {ns}"));
        self.namespaces.push(ns.clone());
        sh(&format!("ip -n {ns} link set lo up"));
        ns
    }

    /// A veth pair between two namespaces with addresses (CIDR) on each end.
    pub fn link(&self, a: &str, a_if: &str, a_addr: &str, b: &str, b_if: &str, b_addr: &str) {
        let tmp = format!("{}x{}", &self.prefix[..self.prefix.len().min(8)], a_if);
        sh(&format!("ip link add {tmp} netns {a} type veth peer name {b_if} netns {b}"));
        sh(&format!("ip -n {a} link set {tmp} name {a_if}"));
        sh(&format!("ip -n {a} addr add {a_addr} dev {a_if} && ip -n {a} link set {a_if} up"));
        sh(&format!("ip -n {b} addr add {b_addr} dev {b_if} && ip -n {b} link set {b_if} up"));
    }

    pub fn exec(&self, ns: &str, cmd: &str) -> String {
        sh(&format!("ip netns exec {ns} {cmd}"))
    }

    /// Starts a background process in a namespace; killed on drop.
    pub fn spawn(&mut self, ns: &str, args: &[&str]) -> usize {
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {args:?}: {e}"));
        self.children.push(child);
        self.children.len() - 1
    }

    /// Waits for a background process with a deadline; returns (ok, stdout, stderr).
    pub fn wait(&mut self, idx: usize, limit: Duration) -> (bool, String, String) {
        let deadline = Instant::now() + limit;
        let c = &mut self.children[idx];
        loop {
            match c.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = c.kill();
                    break;
                }
            }
        }
        let out = std::mem::replace(c, Command::new("true").spawn().expect("true")).wait_with_output().expect("output");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Sends SIGTERM (so tcpdump flushes) and waits up to 5 s.
    pub fn stop(&mut self, idx: usize) {
        let pid = self.children[idx].id();
        let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
        // `ip netns exec` execs the program, so the pid is tcpdump's own.
        let _ = self.wait(idx, Duration::from_secs(5));
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            // Kill anything still running inside, then delete (veths go with it).
            let _ = Command::new("sh").arg("-c").arg(format!("ip netns pids {ns} | xargs -r kill -9")).status();
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
