//! The hybrid-access tunnel (`app = "tunnel"`) on the kernel backend: the
//! gateway program of the CPE and of the HAG, as OpenVPN over MPTCP works.
//! Each gateway's namespace gets a TUN device; a policy rule sends every
//! packet arriving on a LAN-side interface (any interface not on a link to
//! the other gateway) into it, instead of forwarding it. The program reads
//! each packet from the TUN, writes it as a length-prefixed frame
//! (`mplab_wire::tunnel`) into the flow's kernel MPTCP (or TCP) socket, and
//! the far gateway's program decodes the frames and writes the packets to
//! its TUN, from where its kernel forwards them on.
//!
//! The program reads the TUN only while the socket takes its frames whole,
//! so a packet waits in the TUN's queue (500 packets) while the send buffer
//! is full, and is dropped there when that queue is full: the same ingress
//! as the simulator's tunnel (crates/sim/src/world/tunnel.rs). Every loop
//! ends at the scenario's duration or on the abort flag.

//!
//! The program's pieces: [`device`] sets up the TUN, its rules and the
//! sockets before the run; the carriers move packets during it, one per
//! way the tunnel is carried: [`stream`] (frames in a kernel MPTCP or TCP
//! connection, or mplab's stack bridged in), [`datagram`] (each packet on
//! every access link over UDP) and [`mpquic`] (one Multipath QUIC
//! connection, DATAGRAM frames and the stream).

use std::os::fd::AsRawFd;
use std::sync::Arc;

use mplab_scenario::network::{Flow, Network};
use mplab_scenario::plugins::transports::Transport;

use crate::apps::{Clock, FlowState};

mod datagram;
mod device;
mod mpquic;
mod stall;
mod stream;

pub use device::{prepare, Gateway};

/// Runs the gateway until the end of the scenario; adds its counts to
/// the flow's tunnel summary. `net` and `seed` make an MPQUIC tunnel's
/// connection end.
pub fn run(net: Arc<Network>, f: Flow, gw: Gateway, seed: u64, st: Arc<FlowState>, clk: Clock) {
    let mut c = if f.transport == Transport::MPQUIC {
        mpquic::carry(&net, &f, &gw, seed, &st, &clk)
    } else {
        let Some(conn) = stream::open(&f, &gw, &st, &clk) else { return };
        if gw.udp.is_empty() {
            stream::carry(&gw, conn.as_raw_fd(), &st, &clk)
        } else {
            datagram::carry(&gw, &clk)
        }
    };
    c.ingress.queue_drops = device::tun_drops(&gw.ns, &gw.tun.name);
    device::record(&st, gw.end, gw.mtu, &c);
}
