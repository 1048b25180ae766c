//! The send round of a flow end: what its connection sends now, written
//! to the TUN in GSO super-segments where it can.

use std::net::SocketAddr;

use mplab_backend::apps::Pattern;
use mplab_proto::mptcp::PayloadSource;
use mplab_proto::Instant;

use super::counters::HostCounters;
use super::end::End;
use super::end::Demux;
use crate::userspace::gso::{autosize, Batch, Writer};
use crate::userspace::tun::Tun;

/// Most segments one connection sends per round: the loop then reads
/// the ACKs that came meanwhile before sending more (no sleep in between).
const OUT_BATCH: usize = 128;

/// One round of output for `end`: what its connection sends now, batched
/// per subflow into GSO super-segments where the TUN takes them. True when
/// it stopped at [`OUT_BATCH`] segments with more to send.
pub(super) fn send_round(end: &mut End, ei: usize, now: Instant, tun: &Tun, wr: &mut Writer, stack: &mut Demux, c: &mut HostCounters) -> bool {
    let Some(conn) = end.conn.as_mut() else { return false };
    // The bytes: a bridge's real ones, or the applications' pattern.
    let src: &dyn PayloadSource = match &end.bridge {
        Some(b) => b,
        None => &Pattern,
    };
    let mut more = false;
    let mut batches: Vec<Batch> = Vec::new();
    // Super-segment sizes per subflow, from its rate (once a round).
    let sizes: Vec<((SocketAddr, SocketAddr), u64)> = if tun.gso() { conn.subflow_stats().iter().map(|s| ((s.local, s.remote), autosize(s.tcp.cwnd, s.tcp.srtt))).collect() } else { Vec::new() };
    for k in 0..=OUT_BATCH {
        if k == OUT_BATCH {
            more = true;
            break;
        }
        let Some(t) = conn.poll_transmit(now, src) else { break };
        stack.bind_if_new((t.local, t.remote), ei);
        // Merged into its subflow's batch; or that batch goes out
        // and `t` starts the next (or goes out alone). One batch
        // per subflow: schedulers interleave the subflows.
        if !tun.gso() {
            wr.single(tun, &t, c, src);
            continue;
        }
        let key = (t.local, t.remote);
        // A retransmission goes alone, under the mapping its bytes
        // first went out with, after the subflow's pending batch.
        let t = match wr.remap(t) {
            Ok(t) => t,
            Err(t) => {
                if let Some(i) = batches.iter().position(|b| b.key() == key) {
                    wr.flush(tun, batches.swap_remove(i), c, src);
                }
                wr.single(tun, &t, c, src);
                continue;
            }
        };
        let t = match batches.iter().position(|b| b.key() == key) {
            Some(i) => match batches[i].push(t) {
                Ok(()) => {
                    if batches[i].full() {
                        wr.flush(tun, batches.swap_remove(i), c, src);
                    }
                    continue;
                }
                Err(t) => {
                    // Whatever follows on this subflow goes after
                    // the batch, never before it.
                    wr.flush(tun, batches.swap_remove(i), c, src);
                    t
                }
            },
            None => t,
        };
        let limit = sizes.iter().find(|(k, _)| *k == key).map_or(0, |x| x.1);
        match Batch::start(t, limit) {
            Ok(b) => batches.push(b),
            Err(t) => wr.single(tun, &t, c, src),
        }
    }
    for b in batches.drain(..) {
        wr.flush(tun, b, c, src);
    }
    more
}
