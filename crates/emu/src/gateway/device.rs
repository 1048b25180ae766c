//! A gateway before the run: its TUN device, the policy rules that send
//! the LAN's packets into it, and its sockets; and after it, what it
//! counted, added to the flow's tunnel summary.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use mplab_backend::results::TunnelDirection;
use mplab_scenario::network::{App, Flow, Network};

use crate::apps::FlowState;
use crate::sys;
use crate::userspace::tun::Tun;

/// The TUN device of a gateway's `k`-th tunnel, and the table its rules
/// point at. The rules sit before the main table's (32766) and after
/// `local` (0), so packets for the gateway itself are still delivered to
/// it, and in flow order: a packet goes into the first tunnel whose class
/// it belongs to, as on the simulator.
fn tun_name(k: usize) -> String {
    format!("gwtun{k}")
}
const TUN_TABLE: usize = 210;
const RULE_PRIORITY: usize = 40;

/// A gateway before the run: its TUN, and its socket (the CPE's unconnected
/// client socket, the HAG's listener).
pub struct Gateway {
    pub(crate) tun: Tun,
    /// The connection's socket: TCP or MPTCP, or for MPQUIC a UDP socket
    /// bound to every address of the gateway.
    pub(crate) sock: OwnedFd,
    /// 0: the CPE (`from`), 1: the HAG.
    pub(crate) end: usize,
    pub(crate) mtu: usize,
    pub(crate) ns: String,
    /// Datagram mode: one UDP socket per access link.
    pub(crate) udp: Vec<OwnedFd>,
    /// `sock` is connected already: the program's end of a connection on
    /// mplab's stack (crates/emu/src/userspace/bridge.rs).
    pub(crate) bridged: bool,
}

/// Datagram mode's UDP port (the simulator's): plus the tunnel's index.
const DATAGRAM_PORT: u16 = 1194;

/// Sets up the gateway `end` of tunnel flow `f` in namespace `ns`; with
/// `bridge`, the flow's connection is that socket (mplab's stack in the
/// gateway) instead of a kernel socket.
pub fn prepare(net: &Network, f: &Flow, end: usize, ns: &str, bridge: Option<OwnedFd>) -> Result<Gateway, String> {
    let App::Tunnel { mtu, class, mode } = f.app else { return Err(format!("flow {} is not a tunnel", f.name)) };
    let datagram = mode == mplab_scenario::network::TunnelMode::Datagram;
    let (node, peer) = if end == 0 { (f.from, f.to) } else { (f.to, f.from) };
    // This tunnel's rank among the tunnels this gateway ends.
    let k = net.flows.iter().filter(|g| matches!(g.app, App::Tunnel { .. }) && (g.from == node || g.to == node)).position(|g| g.id == f.id).unwrap_or(0);
    let name = tun_name(k);
    let lan: Vec<String> = net.nodes[node].interfaces.iter().filter(|i| i.peer != peer).map(|i| i.name.clone()).collect();
    let n2 = name.clone();
    let tun = sys::in_netns(ns, move || {
        let t = Tun::create_plain(&n2)?;
        // Packets come out of the TUN with the far side's source address.
        sys::sysctl_write(&format!("net.ipv4.conf.{n2}.rp_filter"), "0")?;
        sys::sysctl_write("net.ipv4.ip_forward", "1")?;
        Ok(t)
    })
    .map_err(|e| format!("TUN on {}: {e}", net.nodes[node].name))?;
    let (table, prio) = (TUN_TABLE + k, RULE_PRIORITY + k);
    let mut cmds = vec![format!("link set {name} up mtu {mtu} txqueuelen 500"), format!("route replace default dev {name} table {table}")];
    let proto = match class.proto {
        Some(6) => " ipproto tcp",
        Some(17) => " ipproto udp",
        _ => "",
    };
    for i in &lan {
        match class.ports {
            None => cmds.push(format!("rule add priority {prio} iif {i}{proto} table {table}")),
            // The class's port on either side: the server's port is the
            // destination one way and the source the other.
            Some((a, b)) => {
                for dir in ["dport", "sport"] {
                    cmds.push(format!("rule add priority {prio} iif {i}{proto} {dir} {a}-{b} table {table}"));
                }
            }
        }
    }
    crate::topo::ip_batch(Some(ns), &cmds)?;
    // A tunnel narrower than the LAN: the MSS of a TCP SYN going into it
    // is clamped to fit, as on the simulator (OpenVPN's `mssfix`).
    if (mtu as usize) < mplab_scenario::network::DEFAULT_MTU as usize {
        sys::run(&["ip", "netns", "exec", ns, "iptables", "-w", "-t", "mangle", "-A", "FORWARD", "-o", &name, "-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-j", "TCPMSS", "--clamp-mss-to-pmtu"])?;
    }
    let bridged = bridge.is_some();
    let mpquic = f.transport == mplab_scenario::plugins::transports::Transport::MPQUIC;
    let sock = match bridge {
        Some(s) => s,
        // Every path's datagrams name their source: the socket is bound to
        // every address, on the flow's port at each end.
        None if mpquic => {
            let port = if end == 0 { f.sport } else { f.dport };
            crate::datagrams::socket(ns, (std::net::Ipv4Addr::UNSPECIFIED, port), None).map_err(|e| format!("tunnel socket on {}: {e}", net.nodes[node].name))?
        }
        None => {
            let s = if end == 0 { crate::apps::client_socket(ns, f) } else { crate::apps::listen(ns, f) }.map_err(|e| format!("tunnel socket on {}: {e}", net.nodes[node].name))?;
            nodelay(s.as_raw_fd()).map_err(|e| format!("tunnel socket on {}: {e}", net.nodes[node].name))?;
            s
        }
    };
    // Datagram mode: a UDP socket on each access address, towards the
    // other gateway's address on the same link; the port is the
    // simulator's, 1194 plus the tunnel's index.
    let mut udp = Vec::new();
    if datagram {
        let t = net.flows.iter().filter(|g| matches!(g.app, App::Tunnel { .. })).position(|g| g.id == f.id).unwrap_or(0);
        let port = DATAGRAM_PORT + t as u16;
        for i in net.nodes[node].interfaces.iter().filter(|i| i.peer == peer) {
            let l = &net.links[i.link];
            let far = if l.a.node == node { l.b.addr } else { l.a.addr };
            let s = crate::datagrams::socket(ns, (i.addr, port), Some((far, port))).map_err(|e| format!("tunnel datagram socket on {}: {e}", net.nodes[node].name))?;
            udp.push(s);
        }
    }
    Ok(Gateway { tun, sock, end, mtu: mtu as usize, ns: ns.to_string(), udp, bridged })
}

impl Gateway {
    /// 0: the CPE, 1: the HAG.
    pub fn end(&self) -> usize {
        self.end
    }
}

/// What one gateway counted: its ingress direction, and the far side's
/// datagrams it took out.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) ingress: TunnelDirection,
    pub(crate) egress_out: u64,
    /// Datagram mode: second copies dropped at the egress (over MPQUIC:
    /// DATAGRAM frames too short to hold a packet).
    pub(crate) duplicates: u64,
}

/// A frame goes out at once: a tunnel of calls and games must not hold
/// small frames back for an acknowledgement (Nagle), and mplab's stack,
/// the simulator's gateway, never does.
pub(crate) fn nodelay(fd: RawFd) -> std::io::Result<()> {
    sys::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1i32, "TCP_NODELAY")
}

/// Packets the TUN's queue dropped (it was full while the socket could
/// not take them).
pub(crate) fn tun_drops(ns: &str, tun: &str) -> u64 {
    let path = format!("/sys/class/net/{tun}/statistics/tx_dropped");
    sys::in_netns(ns, move || Ok(std::fs::read_to_string(&path).unwrap_or_default().trim().parse().unwrap_or(0))).unwrap_or(0)
}

/// Adds a gateway's counts to the flow's summary: its ingress is the
/// direction it writes (the CPE's upstream), its egress the other.
pub(crate) fn record(st: &FlowState, end: usize, mtu: usize, c: &Counts) {
    let Ok(mut t) = st.tunnel.lock() else { return };
    t.mtu = mtu as u32;
    let t = &mut *t;
    let (mine, far) = if end == 0 { (&mut t.upstream, &mut t.downstream) } else { (&mut t.downstream, &mut t.upstream) };
    mine.datagrams_in += c.ingress.datagrams_in;
    mine.oversize += c.ingress.oversize;
    mine.queue_drops += c.ingress.queue_drops;
    mine.frame_bytes += c.ingress.frame_bytes;
    mine.quic_datagrams += c.ingress.quic_datagrams;
    mine.quic_datagram_bytes += c.ingress.quic_datagram_bytes;
    far.datagrams_out += c.egress_out;
    far.duplicates += c.duplicates;
}
