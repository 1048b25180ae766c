//! An SCTP flow on the kernel backend: two usrsctp host processes, one in
//! each end's namespace, started before time zero, told time zero once
//! both are ready, and read line by line into the flow's shared state
//! (bytes delivered, connection, completion, data check, errors) and the
//! sender's latest per-path view for the probes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as Wall};

use mplab_backend::config::{sctp_addrs, sctp_mtu};
use mplab_scenario::network::{BufferSplitting, CmtVariant, Flow, Network};

pub use super::unsupported;
use super::host::{HostSpec, Line, PathLine, Role, Settings};
use crate::apps::FlowState;

/// The running pair.
pub struct SctpFlow {
    children: Vec<(Role, Child)>,
    stdins: Vec<ChildStdin>,
    readers: Vec<std::thread::JoinHandle<()>>,
    ready: mpsc::Receiver<Role>,
    /// The client's (the sender's) paths as of its latest sample.
    pub paths: Arc<Mutex<Vec<PathLine>>>,
}

/// The executable that has the `usrsctp-host` subcommand: `MPLAB_EXE`,
/// else this process when it is `mplab`.
fn mplab_exe() -> Result<std::path::PathBuf, String> {
    if let Some(p) = std::env::var_os("MPLAB_EXE") {
        return Ok(p.into());
    }
    let me = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
    if me.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("mplab")) {
        Ok(me)
    } else {
        Err(format!("SCTP hosts run `mplab usrsctp-host`; {} is not mplab (set MPLAB_EXE)", me.display()))
    }
}

/// usrsctp's settings for the flow's `[transport.sctp]`.
pub fn settings(f: &Flow) -> Settings {
    let s = f.sctp.clone().expect("an SCTP flow has its settings");
    let ms = |ns: u64| (ns / 1_000_000).clamp(1, u32::MAX as u64) as u32;
    Settings {
        cmt: match s.cmt {
            None => 0,
            Some(CmtVariant::Cmt) => 1,
            Some(CmtVariant::Rpv1) => 2,
            Some(CmtVariant::Rpv2) => 3,
            Some(CmtVariant::Mptcp) => 4,
        },
        dac: s.dac,
        nr_sack: s.nr_sack,
        buffer_splitting: match s.buffer_splitting {
            BufferSplitting::Off => 0,
            BufferSplitting::Send => 1,
            BufferSplitting::Receive => 2,
            BufferSplitting::Both => 3,
        },
        heartbeat_ms: ms(s.heartbeat_interval_ns),
        rto_min_ms: ms(s.rto_min_ns),
        rto_initial_ms: ms(s.rto_initial_ns),
        snd_buf: s.snd_buf.min(u32::MAX as u64) as u32,
        rcv_buf: s.rcv_buf.min(u32::MAX as u64) as u32,
    }
}


impl SctpFlow {
    /// Starts the hosts of the ends `kernel` says (server, client) run on
    /// the kernel's namespaces (the others are mplab hosts of the userspace
    /// backend); they wait for time zero. `ns` names each node's namespace.
    pub fn spawn(net: &Network, f: &Flow, ns: &[String], hard_ns: u64, st: Arc<FlowState>, kernel: [bool; 2]) -> Result<SctpFlow, String> {
        let exe = mplab_exe()?;
        let Some(bytes) = mplab_backend::apps::bulk_transfer(&f.app) else { return Err(unsupported(f).unwrap_or_default()) };
        let mtu = sctp_mtu(net, f.from).min(sctp_mtu(net, f.to));
        let base = HostSpec {
            role: Role::Server,
            local: sctp_addrs(net, f.to, f.dst),
            remote: Vec::new(),
            port: f.dport,
            local_port: 0,
            bytes,
            // One DATA chunk per packet: MTU less IPv4, common and chunk headers.
            message: (mtu as usize).saturating_sub(20 + 12 + 16).max(1),
            t0_realtime_ns: 0,
            start_ns: f.start_ns,
            stop_ns: f.stop_ns,
            hard_ns,
            interval_ns: net.probes.interval_ns.max(1_000_000),
            settings: settings(f),
        };
        let client = HostSpec { role: Role::Client, local: sctp_addrs(net, f.from, f.src), remote: sctp_addrs(net, f.to, f.dst), local_port: f.sport, ..base.clone() };
        let (tx, ready) = mpsc::channel();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let mut me = SctpFlow { children: Vec::new(), stdins: Vec::new(), readers: Vec::new(), ready, paths: paths.clone() };
        for ((spec, node), _) in [(base, f.to), (client, f.from)].into_iter().zip(kernel).filter(|(_, k)| *k) {
            let json = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
            let mut child = Command::new("ip")
                .args(["netns", "exec", &ns[node]])
                .arg(&exe)
                .args(["usrsctp-host", &json])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting the usrsctp host on {}: {e}", net.nodes[node].name))?;
            let out = child.stdout.take().ok_or("no stdout")?;
            let err = child.stderr.take().ok_or("no stderr")?;
            me.stdins.push(child.stdin.take().ok_or("no stdin")?);
            let role = spec.role;
            let (st, tx, paths, name, start) = (st.clone(), tx.clone(), paths.clone(), net.nodes[node].name.clone(), f.start_ns);
            me.readers.push(std::thread::spawn(move || read_lines(role, &name, start, out, err, &st, &tx, &paths)));
            me.children.push((role, child));
        }
        Ok(me)
    }

    /// Waits (at most `limit`) until every host is bound (and listening).
    pub fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        let end = Wall::now() + limit;
        for _ in 0..self.children.len() {
            let left = end.saturating_duration_since(Wall::now());
            self.ready.recv_timeout(left).map_err(|_| format!("the usrsctp hosts were not ready within {limit:?}"))?;
        }
        Ok(())
    }

    /// Tells both hosts time zero (CLOCK_REALTIME, ns).
    pub fn start(&mut self, t0_realtime_ns: u64) {
        for s in &mut self.stdins {
            let _ = writeln!(s, "{t0_realtime_ns}");
            let _ = s.flush();
        }
    }

    /// Waits for both processes until `deadline`, then kills what is left.
    pub fn finish(mut self, deadline: Wall) {
        for (_, c) in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Wall::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                    _ => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                }
            }
        }
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn read_lines(role: Role, node: &str, start_ns: u64, out: std::process::ChildStdout, err: std::process::ChildStderr, st: &FlowState, ready: &mpsc::Sender<Role>, paths: &Mutex<Vec<PathLine>>) {
    let errs = std::thread::spawn(move || BufReader::new(err).lines().map_while(Result::ok).take(20).collect::<Vec<_>>());
    let mut done = false;
    for l in BufReader::new(out).lines().map_while(Result::ok) {
        let Ok(line) = serde_json::from_str::<Line>(&l) else { continue };
        match line {
            Line::Ready => {
                let _ = ready.send(role);
            }
            Line::Connected { .. } => st.connected.store(true, Ordering::Relaxed),
            Line::Sample { bytes, paths: p, .. } => match role {
                Role::Server => st.delivered.store(bytes, Ordering::Relaxed),
                Role::Client => {
                    if let Ok(mut g) = paths.lock() {
                        *g = p;
                    }
                }
            },
            Line::Done { bytes, completed_ns, mismatch, error } => {
                done = true;
                if role == Role::Server {
                    st.delivered.store(bytes, Ordering::Relaxed);
                    // The flow state counts completion from the flow's start.
                    if let Some(t) = completed_ns {
                        st.completed_ns.store(t.saturating_sub(start_ns).max(1), Ordering::Relaxed);
                    }
                    if let (Some(m), Ok(mut g)) = (mismatch, st.mismatch.lock()) {
                        g.get_or_insert(m);
                    }
                }
                if let (Some(e), Ok(mut g)) = (error, st.errors.lock()) {
                    g.push(format!("usrsctp {node}: {e}"));
                }
            }
        }
    }
    let stderr = errs.join().unwrap_or_default();
    if !done {
        if let Ok(mut g) = st.errors.lock() {
            g.push(format!("usrsctp host on {node} ended without a result{}", if stderr.is_empty() { String::new() } else { format!(": {}", stderr.join(" | ")) }));
        }
    }
}
