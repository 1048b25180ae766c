//! Packet captures of chosen interfaces, written as pcap files that
//! tshark and Wireshark open.
//!
//! A packet leaving an interface is recorded when its last bit leaves
//! (after the queue, like tcpdump on Linux, which sees packets the qdisc
//! released; and at the moment the interface's transmit counter counts
//! it), which the link model knows when the packet is queued — possibly in
//! the future. Records therefore wait in a small time-ordered buffer (at most a
//! queue's worth) and are written once the simulation clock has passed
//! them, so every file is in timestamp order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use mplab_proto::Instant;
use mplab_wire::pcap::PcapSink;

use crate::packet::Packet;

/// IP protocol number of SCTP.
const SCTP: u8 = 132;
/// IP protocol number of UDP.
const UDP: u8 = 17;

struct Pending {
    at: Instant,
    seq: u64,
    pkt: Packet,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

pub struct Capture {
    sink: PcapSink<BufWriter<File>>,
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    payload: Vec<u8>,
    error: Option<String>,
}

impl Capture {
    /// A pcap at `path` keeping `snaplen` bytes of each packet (0: all).
    pub fn create(path: &Path, snaplen: u32) -> std::io::Result<Capture> {
        let f = BufWriter::new(File::create(path)?);
        let sink = PcapSink::with_snaplen(f, snaplen).map_err(std::io::Error::other)?;
        Ok(Capture { sink, pending: BinaryHeap::new(), seq: 0, payload: Vec::new(), error: None })
    }

    /// Records `pkt` as seen at `at` (>= `now`), and writes everything up to `now`.
    pub fn record(&mut self, at: Instant, now: Instant, pkt: &Packet) {
        self.seq += 1;
        self.pending.push(Reverse(Pending { at, seq: self.seq, pkt: pkt.clone() }));
        self.flush_until(now);
    }

    fn flush_until(&mut self, now: Instant) {
        while self.pending.peek().is_some_and(|p| p.0.at <= now) {
            let Some(Reverse(p)) = self.pending.pop() else { break };
            let t = std::time::Duration::from_nanos(p.at.0);
            if let Some(b) = &p.pkt.sctp {
                if let Err(e) = self.sink.write_ipv4(t, p.pkt.src, p.pkt.dst, SCTP, b) {
                    self.error.get_or_insert_with(|| e.to_string());
                }
                continue;
            }
            if let Some(b) = &p.pkt.udp {
                // Checksum 0: none computed, which RFC 768 allows over IPv4.
                let len = 8 + b.len() as u16;
                let mut d = Vec::with_capacity(len as usize);
                for v in [p.pkt.tcp.src_port, p.pkt.tcp.dst_port, len, 0] {
                    d.extend_from_slice(&v.to_be_bytes());
                }
                d.extend_from_slice(b);
                if let Err(e) = self.sink.write_ipv4(t, p.pkt.src, p.pkt.dst, UDP, &d) {
                    self.error.get_or_insert_with(|| e.to_string());
                }
                continue;
            }
            self.payload.resize(p.pkt.payload_len as usize, 0);
            p.pkt.fill_payload(&mut self.payload);
            // A rewriting box changed the first byte (as the receivers see it).
            if p.pkt.corrupted {
                if let Some(b) = self.payload.first_mut() {
                    *b ^= 0xff;
                }
            }
            if let Err(e) = self.sink.write(t, p.pkt.src.into(), p.pkt.dst.into(), &p.pkt.tcp, &self.payload) {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
    }

    /// Writes what was sent by `end` (the rest never left) and closes the
    /// file; the first error, if any.
    pub fn finish(mut self, end: Instant) -> Result<(), String> {
        self.flush_until(end);
        if let Some(e) = self.error {
            return Err(e);
        }
        self.sink.into_inner().flush().map_err(|e| e.to_string())
    }
}
