//! What the probes know of each flow's subflows: the last state of each
//! (they vanish from the kernel's lists once closed), where their flags
//! come from, and the running sums the summary needs.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use mplab_backend::results::SubflowState;
use mplab_scenario::network::{self, Transport};

use super::plan::Plan;
use crate::apps::{self, FlowState};
use crate::probes::{self, SharedDiag, TcpInfo};

/// Last known state of one subflow (they vanish when the connection closes).
#[derive(Default, Clone)]
pub struct SubTrack {
    pub local: String,
    pub remote: String,
    pub info: TcpInfo,
    pub last_acked: u64,
    /// The kernel's subflow id (MPTCP_FULL_INFO), 1 for the first.
    pub id: Option<u32>,
    /// Backup (local or remote) as last reported by the kernel's subflow diag.
    pub backup: Option<bool>,
    /// As last seen; a subflow the sender no longer lists is closed.
    pub state: SubflowState,
}

#[derive(Default)]
pub struct FlowTrack {
    pub subs: Vec<SubTrack>,
    /// The sender namespace's sock_diag socket (MPTCP flows on kernel hosts).
    pub diag: Option<Rc<SharedDiag>>,
    /// A balanced download's backends, (node, namespace): the diag socket
    /// opens in the one that accepts.
    pub diag_at: Vec<(usize, String)>,
    /// Whether the subflows came from MPTCP_FULL_INFO / flags from sock_diag (meta.json).
    pub full_info: bool,
    pub diag_flags: bool,
    pub srtt_sum_ms: f64,
    pub srtt_n: u64,
    pub last_delivered: u64,
}

/// The sender's socket of a flow (the one whose TCP_INFO tells about the data direction).
pub fn sender_fd(f: &network::Flow, st: &FlowState) -> Option<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd;
    let s = if mplab_backend::apps::server_sends(&f.app) { st.server.get() } else { st.client.get() };
    s.map(|s| s.as_raw_fd())
}

/// Reads the subflows of a flow's sender into the tracker; returns the
/// first subflow's info (for the "all" row).
pub fn observe(f: &network::Flow, st: &FlowState, tr: &mut FlowTrack, tick: u64) -> Option<TcpInfo> {
    if !st.connected.load(Ordering::Relaxed) {
        return None;
    }
    if tr.diag.is_none() && f.transport == Transport::MPTCP {
        if let Some(ns) = st.server_node.get().and_then(|n| tr.diag_at.iter().find(|(k, _)| k == n)).map(|(_, ns)| ns.clone()) {
            tr.diag = probes::SockDiag::open(&ns).ok().map(|d| Rc::new(SharedDiag::new(d)));
            tr.diag_at.clear();
        }
    }
    let stack = st.stack_subflows.lock().ok().and_then(|g| g.as_ref().map(|x| x.0.clone()));
    // mplab's stack lists its subflows with their state, as the kernel's
    // TCP_INFO carries it.
    let plain = |l: String, r: String, info: TcpInfo, st: Option<u8>| probes::SubflowInfo { local: l, remote: r, info, id: None, flags: None, tcp_state: st.or(Some(1)) };
    let subs: Vec<probes::SubflowInfo> = if let (None, Some(v)) = (sender_fd(f, st), stack) {
        v.into_iter().map(|(l, r, i, state)| plain(l, r, i, Some(state))).collect()
    } else {
        let fd = sender_fd(f, st)?;
        apps::check_fallback(f, st);
        match (f.transport == Transport::MPTCP, probes::mptcp_subflows(fd)) {
            (true, Some(mut v)) if !v.is_empty() => {
                tr.full_info |= v.iter().any(|s| s.id.is_some());
                // Backup and the other subflow flags are not in
                // MPTCP_FULL_INFO: the kernel reports them per TCP subflow
                // through sock_diag, matched here by addresses and ports.
                if let Some(flags) = tr.diag.as_ref().and_then(|d| d.flags(tick)) {
                    for s in v.iter_mut() {
                        s.flags = flags.get(&(s.local.clone(), s.remote.clone())).copied();
                        tr.diag_flags |= s.flags.is_some();
                    }
                }
                v
            }
            _ => {
                let (info, st) = probes::tcp_info_and_state(fd)?;
                let (l, r) = apps::local_peer(fd);
                vec![plain(l, r, info, st)]
            }
        }
    };
    let mut first = None;
    let mut seen = vec![false; tr.subs.len()];
    for probes::SubflowInfo { local: l, remote: r, info, id, flags, tcp_state } in subs {
        if info.snd_mss == 0 || r.ends_with(":0") {
            // Not usable yet (still connecting: keep what we know) or gone
            // (its addresses read 0: left unseen, so closed below).
            if info.snd_mss == 0 {
                if let Some(k) = id.and_then(|i| tr.subs.iter().position(|s| s.id == Some(i))) {
                    seen[k] = true;
                }
            }
            continue;
        }
        let state = tcp_state.map_or(SubflowState::Established, probes::subflow_state);
        first.get_or_insert(info);
        // A plain TCP connection is one "subflow" (its addresses may read
        // as 0.0.0.0:0 once the peer has gone).
        let tcp = f.transport == Transport::TCP || st.fell_back.load(Ordering::Relaxed);
        // The kernel's id tells a new subflow from an old one that used
        // the same addresses and ports; without ids, the addresses.
        let known = if tcp && !tr.subs.is_empty() {
            Some(0)
        } else if id.is_some() {
            tr.subs.iter().position(|s| s.id == id)
        } else {
            tr.subs.iter().position(|s| s.local == l && s.remote == r)
        };
        let backup = flags.map(|x| x.backup());
        match known {
            Some(k) => {
                let s = &mut tr.subs[k];
                s.info = info;
                s.backup = backup.or(s.backup);
                s.state = state;
                seen[k] = true;
            }
            None => {
                tr.subs.push(SubTrack { local: l, remote: r, info, last_acked: 0, id, backup, state });
                seen.push(true);
                // Creation order, as the simulator numbers its subflows
                // (a stable sort: subflows without ids keep their order).
                let mut both: Vec<(SubTrack, bool)> = std::mem::take(&mut tr.subs).into_iter().zip(seen.drain(..)).collect();
                both.sort_by_key(|(s, _)| s.id.unwrap_or(u32::MAX));
                (tr.subs, seen) = both.into_iter().unzip();
            }
        }
    }
    // The kernel drops a subflow from its list once it is closed.
    for (s, seen) in tr.subs.iter_mut().zip(seen) {
        if !seen {
            s.state = SubflowState::Closed;
        }
    }
    first
}

/// One sock_diag socket per namespace that sends MPTCP data on the
/// kernel, and each flow's tracker holding its sender's (a balanced
/// download's: opened later in the backend that accepts).
pub fn trackers(plan: &Plan, node_ns: &[String]) -> (BTreeMap<usize, Rc<SharedDiag>>, Vec<FlowTrack>) {
    let net = plan.net;
    let mut diags: BTreeMap<usize, Rc<SharedDiag>> = BTreeMap::new();
    for f in net.flows.iter().filter(|f| f.transport == Transport::MPTCP) {
        let sender = Plan::sender(f);
        if plan.on_kernel[sender] && !(f.servers.len() > 1 && sender != f.from) && !diags.contains_key(&sender) {
            if let Ok(d) = probes::SockDiag::open(&node_ns[sender]) {
                diags.insert(sender, Rc::new(SharedDiag::new(d)));
            }
        }
    }
    let tracks = net
        .flows
        .iter()
        .map(|f| {
            // The data sender's namespace holds the subflows whose flags we read.
            let sender = Plan::sender(f);
            if f.servers.len() > 1 && sender != f.from {
                let diag_at = f.servers.iter().filter(|&&n| plan.on_kernel[n]).map(|&n| (n, node_ns[n].clone())).collect();
                return FlowTrack { diag_at, ..Default::default() };
            }
            let diag = (f.transport == Transport::MPTCP && plan.on_kernel[sender]).then(|| diags.get(&sender).cloned()).flatten();
            FlowTrack { diag, ..Default::default() }
        })
        .collect();
    (diags, tracks)
}
