//! The probe loop: from time zero to the scenario's end, at every probe
//! interval, the hosts' interface counters and each flow's goodput, cwnd,
//! srtt, send buffer and subflows, as the simulator samples them.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as Wall};

use mplab_backend::results::{FlowSample, InterfaceSample, RunResults, SendBufferSample};
use mplab_scenario::network::{Flow, Transport};

use super::flows::SctpPaths;
use super::plan::Plan;
use super::track::{self, FlowTrack};
use crate::apps::{Clock, FlowState};
use super::options::KernelError;
use crate::probes::{self, Capture, IfCounters, NetDev, SharedDiag, TcpInfo};

/// Interface counters of every node, by interface name.
pub type Counters = Vec<BTreeMap<String, IfCounters>>;

/// The probes of a run, and what they saw.
pub struct Probes<'a> {
    plan: &'a Plan<'a>,
    sctp_paths: &'a SctpPaths,
    clk: &'a Clock,
    /// The run's abort flag (the options').
    abort: Arc<AtomicBool>,
    t0: Wall,
    netdev: Vec<NetDev>,
    pub tracks: Vec<FlowTrack>,
    /// The sock_diag sockets the trackers share, per sender node.
    pub diags: BTreeMap<usize, Rc<SharedDiag>>,
    pub results: RunResults,
    /// The counters at time zero.
    pub base: Counters,
    last: Counters,
    /// The run was aborted.
    pub interrupted: bool,
    /// The next probe's number (the last one's plus 1).
    pub k: u64,
}

impl<'a> Probes<'a> {
    /// Opens every node's interface counters, before time zero.
    pub fn open_counters(plan: &Plan, node_ns: &[String]) -> Result<Vec<NetDev>, KernelError> {
        let mut netdev = Vec::new();
        for n in &plan.net.nodes {
            netdev.push(NetDev::open(&node_ns[n.id]).map_err(|e| KernelError::Failed(format!("counters of {}: {e}", n.name)))?);
        }
        Ok(netdev)
    }

    /// Waits for time zero, reads the base counters and opens the
    /// subflow trackers.
    pub fn at_time_zero(plan: &'a Plan<'a>, node_ns: &[String], sctp_paths: &'a SctpPaths, clk: &'a Clock, abort: Arc<AtomicBool>, t0: Wall, mut netdev: Vec<NetDev>) -> Probes<'a> {
        let mut p = Probes { plan, sctp_paths, clk, abort, t0, netdev: Vec::new(), tracks: Vec::new(), diags: BTreeMap::new(), results: RunResults::default(), base: Vec::new(), last: Vec::new(), interrupted: false, k: 1 };
        p.interrupted = !p.wait_until(0);
        p.base = netdev.iter_mut().map(|d| d.read()).collect();
        p.last = p.base.clone();
        p.netdev = netdev;
        (p.diags, p.tracks) = track::trackers(plan, node_ns);
        p
    }

    /// Sleeps until `ns` after time zero; false if the run was aborted.
    fn wait_until(&self, ns: u64) -> bool {
        loop {
            if self.abort.load(Ordering::SeqCst) {
                return false;
            }
            let now = self.clk.now_ns();
            if now >= ns && Wall::now() >= self.t0 {
                return true;
            }
            std::thread::sleep(Duration::from_nanos(ns.saturating_sub(now).clamp(100_000, 50_000_000)));
        }
    }

    /// Probes at every interval until the scenario's end, then waits for
    /// the end; returns the counters as of then.
    pub fn run(&mut self, states: &[Arc<FlowState>]) -> Counters {
        let net = self.plan.net;
        let interval = net.probes.interval_ns.max(1_000_000);
        while !self.interrupted && self.k * interval <= net.duration_ns {
            let t_ns = self.k * interval;
            if !self.wait_until(t_ns) {
                self.interrupted = true;
                break;
            }
            self.sample(states, t_ns as f64 / 1e9, interval as f64 / 1e9);
            self.k += 1;
        }
        if !self.interrupted {
            self.interrupted = !self.wait_until(net.duration_ns);
        }
        self.netdev.iter_mut().map(|d| d.read()).collect()
    }

    /// Reads every flow's subflows (probe number `tick`).
    pub fn observe_all(&mut self, states: &[Arc<FlowState>], tick: u64) {
        for (fi, f) in self.plan.net.flows.iter().enumerate() {
            track::observe(f, &states[fi], &mut self.tracks[fi], tick);
        }
    }

    /// Closes the counters and the sock_diag sockets (nothing may keep
    /// the namespaces alive).
    pub fn close(&mut self) {
        self.netdev.clear();
        for t in self.tracks.iter_mut() {
            t.diag = None;
        }
        self.diags.clear();
    }

    /// One probe at `t` s: the hosts' interfaces, then the flows.
    fn sample(&mut self, states: &[Arc<FlowState>], t: f64, secs: f64) {
        let net = self.plan.net;
        for &h in &self.plan.hosts {
            let now = self.netdev[h].read();
            for i in &net.nodes[h].interfaces {
                let (a, b) = (now.get(&i.name).copied().unwrap_or_default(), self.last[h].get(&i.name).copied().unwrap_or_default());
                self.results.interfaces.push(InterfaceSample {
                    time_s: t,
                    node: net.nodes[h].name.clone(),
                    iface: i.name.clone(),
                    tx_bps: a.tx_ip().saturating_sub(b.tx_ip()) as f64 * 8.0 / secs,
                    rx_bps: a.rx_ip().saturating_sub(b.rx_ip()) as f64 * 8.0 / secs,
                });
            }
            self.last[h] = now;
        }
        for (fi, f) in net.flows.iter().enumerate() {
            // No rows before a flow starts (as the simulator).
            if t * 1e9 + 1.0 < f.start_ns as f64 {
                continue;
            }
            self.sample_flow(&states[fi], fi, f, t, secs);
        }
    }

    /// Flow `fi`'s rows at `t` s: "all", then one per MPTCP subflow.
    fn sample_flow(&mut self, st: &FlowState, fi: usize, f: &Flow, t: f64, secs: f64) {
        let net = self.plan.net;
        let tr = &mut self.tracks[fi];
        let results = &mut self.results;
        let first = track::observe(f, st, tr, self.k);
        let detailed = net.probes.flows.contains(&fi);
        let d = st.delivered.load(Ordering::Relaxed);
        let cw = |i: &TcpInfo| (detailed && net.probes.cwnd).then_some(i.cwnd_bytes());
        let rt = |i: &TcpInfo| (detailed && net.probes.srtt).then_some(i.rtt_us as f64 / 1e3);
        let fl = |i: &TcpInfo| (detailed && net.probes.cwnd).then_some(i.in_flight_bytes());
        results.flows.push(FlowSample {
            time_s: t,
            flow: f.name.clone(),
            subflow: "all".into(),
            goodput_bps: d.saturating_sub(tr.last_delivered) as f64 * 8.0 / secs,
            cwnd_bytes: first.as_ref().and_then(cw),
            srtt_ms: first.as_ref().and_then(rt),
            in_flight_bytes: first.as_ref().and_then(fl),
            state: None,
        });
        tr.last_delivered = d;
        if f.transport == Transport::MPTCP && st.connected.load(Ordering::Relaxed) {
            let stack = st.stack_send_buffer.lock().ok().and_then(|g| *g);
            if let Some((buf, queued)) = stack.or_else(|| track::sender_fd(f, st).and_then(probes::send_buffer)) {
                results.send_buffers.push(SendBufferSample { row: results.flows.len() - 1, buffer_bytes: buf, queued_bytes: queued });
            }
        }
        // usrsctp's sender: its primary path's cwnd and srtt for the row.
        if let Some(p) = self.sctp_paths[fi].as_ref().and_then(|m| m.lock().ok().and_then(|g| g.first().cloned())) {
            let row = results.flows.last_mut().expect("just pushed");
            row.cwnd_bytes = (detailed && net.probes.cwnd).then_some(u64::from(p.cwnd));
            row.srtt_ms = (detailed && net.probes.srtt).then_some(f64::from(p.srtt_ms));
            if p.srtt_ms > 0 {
                tr.srtt_sum_ms += f64::from(p.srtt_ms);
                tr.srtt_n += 1;
            }
        }
        if let Some(i) = &first {
            if i.rtt_us > 0 {
                tr.srtt_sum_ms += i.rtt_us as f64 / 1e3;
                tr.srtt_n += 1;
            }
        }
        // A row per subflow or path, for every transport whose paths a
        // path manager opens (MPTCP, MPQUIC).
        if f.transport.takes("path_manager") {
            for (si, s) in tr.subs.iter_mut().enumerate() {
                let acked = s.info.bytes_acked;
                results.flows.push(FlowSample {
                    time_s: t,
                    flow: f.name.clone(),
                    // The kernel's id - 1: 0 for the initial subflow,
                    // then in creation order (the simulator's index).
                    subflow: s.id.map_or(si, |id| id.saturating_sub(1) as usize).to_string(),
                    goodput_bps: acked.saturating_sub(s.last_acked) as f64 * 8.0 / secs,
                    cwnd_bytes: cw(&s.info),
                    srtt_ms: rt(&s.info),
                    in_flight_bytes: fl(&s.info),
                    state: Some(s.state),
                });
                s.last_acked = acked;
            }
        }
    }
}

/// The pcaps `probes.pcap` asks for, into `dir` (if given), with time zero
/// at `t0_real` (CLOCK_REALTIME).
pub fn start_captures(plan: &Plan, dir: Option<&std::path::Path>, node_ns: &[String], t0_real: u64) -> Result<Vec<Capture>, KernelError> {
    let mut captures = Vec::new();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(|e| KernelError::Failed(format!("{}: {e}", dir.display())))?;
        for c in &plan.net.probes.pcap {
            let path = dir.join(format!("{}-{}.pcap", c.node_name, c.iface_name));
            captures.push(Capture::start(&node_ns[c.node], &c.iface_name, &path, t0_real, plan.net.probes.snaplen).map_err(KernelError::Failed)?);
        }
    }
    Ok(captures)
}

/// Ends the captures: the packets written, and the errors.
pub fn finish_captures(captures: Vec<Capture>) -> (u64, Vec<String>) {
    let mut pcap_errors = Vec::new();
    let mut pcap_packets = 0u64;
    for c in captures {
        match c.finish() {
            Ok(n) => pcap_packets += n,
            Err(e) => pcap_errors.push(e),
        }
    }
    (pcap_packets, pcap_errors)
}
