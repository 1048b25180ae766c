//! Writing a connection's segments to the TUN, several at a time.
//!
//! Every packet written to a TUN costs a system call, an skb, a route
//! lookup through the host's policy rules and the forwarding path; at
//! Gbit/s that is most of the mplab host's cost. Consecutive full-sized
//! data segments of one subflow that differ only in their sequence numbers
//! (and DSS mapping) are therefore written as one TCP super-segment with a
//! virtio-net header (GSO): the kernel routes it once and cuts it into
//! MSS-sized segments when it leaves on the veth, copying the headers —
//! exactly what Linux's own TSO/GSO does for its MPTCP: every resulting
//! segment carries the same TCP options, so the per-segment DSS mappings
//! become one mapping over the whole super-segment (RFC 8684 3.3.1: a
//! mapping may span several segments). Not merged: anything with SYN, FIN,
//! RST or URG, DSS checksums (one checksum per mapping would have to be
//! recomputed over the data), a DATA_FIN, segments not contiguous in both
//! subflow and data sequence, or with other options that differ
//! (timestamps of another millisecond, SACK blocks, ADD_ADDR, MP_PRIO).
//!
//! Retransmissions: Linux's receiver keeps a subflow's current mapping
//! until all its bytes arrived, and refuses (MAPPING_INVALID: the subflow
//! is reset with MP_TCPRST "MPTCP-specific error") a segment that lies
//! inside the current mapping but carries a different one. So a byte keeps
//! the mapping it first went out with: the writer remembers per subflow
//! the merged mappings it sent and the highest subflow sequence number it
//! mapped. A segment below that is a retransmission: it is never merged
//! (merging resent pieces would map them anew), and if it lies inside a
//! merged mapping it carries that mapping (an identical mapping is always
//! accepted), as Linux's own retransmissions of a TSO skb do. Only
//! full-sized segments are merged, so a retransmission (proto resends
//! whole original segments) never straddles two merged mappings.

use std::net::{IpAddr, SocketAddr};
use std::ops::Range;

use mplab_proto::mptcp::PayloadSource;
use mplab_wire::packet::build_ip_tcp;
use mplab_wire::tcp::flags;
use mplab_wire::{DssMapping, MptcpOption, TcpHeader, TcpOptions};

use super::conn::Out;
use super::host::counters::HostCounters;
use super::tun::Tun;

/// Largest super-segment payload: the IP total length (u16) with 80 bytes
/// of headers, and the DSS data-level length (u16).
const MAX_BYTES: u64 = 65_535 - 120;

/// Scratch buffers and the IP id counter of a host's writer.
pub struct Writer {
    /// What went out on each subflow (see [`Sent`]).
    sent: std::collections::HashMap<(SocketAddr, SocketAddr), Sent>,
    obuf: Vec<u8>,
    pay: Vec<u8>,
    ip_id: u16,
    /// Super-segments written, and the segments they held.
    pub gso_writes: u64,
    pub gso_segments: u64,
}

impl Default for Writer {
    fn default() -> Self {
        Writer { sent: Default::default(), obuf: Vec::with_capacity(65_600), pay: vec![0; 65_536], ip_id: 1, gso_writes: 0, gso_segments: 0 }
    }
}

/// What a writer sent on one subflow: the merged mappings (first SSN,
/// length, mapping), oldest first, and the SSN past the highest byte it
/// sent under any mapping, merged or not. Bytes below `high` went out
/// before: their mapping is fixed.
#[derive(Default)]
struct Sent {
    merged: std::collections::VecDeque<(u32, u32, DssMapping)>,
    high: Option<u32>,
}

impl Sent {
    /// `ssn` was sent before (wrapping comparison).
    fn before_high(&self, ssn: u32) -> bool {
        self.high.is_some_and(|h| (ssn.wrapping_sub(h) as i32) < 0)
    }

    /// Notes `len` bytes sent at `ssn`; `high` never goes back (a
    /// retransmission leaves it where it is).
    fn note(&mut self, ssn: u32, len: u32) {
        let end = ssn.wrapping_add(len);
        if !self.before_high(end) {
            self.high = Some(end);
        }
    }
}

/// The DSS mapping of `h`, if it has one.
fn dss_mapping(h: &TcpHeader) -> Option<DssMapping> {
    h.options.mptcp().find_map(|o| if let MptcpOption::Dss(d) = o { d.mapping } else { None })
}

/// Segments being merged.
pub struct Batch {
    /// Most payload bytes of this batch.
    limit: u64,
    first: Out,
    /// The options without the DSS mapping: must be equal in every segment.
    norm: TcpOptions,
    map: Option<DssMapping>,
    /// Payload bytes of every segment but possibly the last.
    mss: u64,
    total: u64,
    n: u64,
    next_seq: u32,
    data: Range<u64>,
    /// The last segment has PSH (the super-segment's last piece gets it;
    /// the kernel clears it on the others, as for its own TSO: proto sets
    /// PSH whenever a subflow's queue runs dry, which with MPTCP is after
    /// nearly every segment, and PSH means nothing to Linux's receiver).
    psh: bool,
}

/// The options without the DSS mapping, the mapping, and whether the
/// segment is mergeable at all.
fn split(h: &TcpHeader) -> Option<(TcpOptions, Option<DssMapping>)> {
    let mut o = h.options;
    o.clear_mptcp();
    let mut map = None;
    for m in h.options.mptcp() {
        match m {
            MptcpOption::Dss(d) => {
                if d.data_fin || d.mapping.is_some_and(|x| x.checksum.is_some() || x.is_infinite()) {
                    return None;
                }
                map = d.mapping;
                let mut d2 = *d;
                d2.mapping = None;
                o.push_mptcp(MptcpOption::Dss(d2)).ok()?;
            }
            other => o.push_mptcp(*other).ok()?,
        }
    }
    Some((o, map))
}

fn mergeable(t: &Out) -> bool {
    let f = t.header.flags;
    let len = t.data.end - t.data.start;
    f & flags::ACK != 0 && f & (flags::SYN | flags::FIN | flags::RST | flags::URG) == 0 && len > 0 && matches!((t.local.ip(), t.remote.ip()), (IpAddr::V4(_), IpAddr::V4(_)))
}

impl Batch {
    /// Starts a batch with `t`, or gives it back if it cannot be merged.
    /// `limit`: most payload bytes (see [`autosize`]).
    pub fn start(t: Out, limit: u64) -> Result<Batch, Out> {
        if !mergeable(&t) {
            return Err(t);
        }
        let Some((norm, map)) = split(&t.header) else { return Err(t) };
        if map.is_some_and(|m| m.data_len as u64 != t.data.end - t.data.start) {
            return Err(t);
        }
        let len = t.data.end - t.data.start;
        Ok(Batch { limit: limit.clamp(2 * len, MAX_BYTES), norm, map, mss: len, total: len, n: 1, next_seq: t.header.seq.wrapping_add(len as u32), data: t.data.clone(), psh: t.header.flags & flags::PSH != 0, first: t })
    }

    /// Appends `t` if it continues the batch; else gives it back.
    pub fn push(&mut self, t: Out) -> Result<(), Out> {
        let len = t.data.end - t.data.start;
        let h = &t.header;
        let f = &self.first.header;
        let ok = mergeable(&t)
            && (t.local, t.remote) == (self.first.local, self.first.remote)
            && h.seq == self.next_seq
            && h.ack == f.ack
            && h.window == f.window
            && h.flags & !flags::PSH == f.flags & !flags::PSH
            && t.data.start == self.data.end
            // Full-sized segments only (see the module docs).
            && len == self.mss
            && self.total + len <= self.limit;
        if !ok {
            return Err(t);
        }
        let Some((norm, map)) = split(h) else { return Err(t) };
        let contiguous = match (self.map, map) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                b.dsn_wide == a.dsn_wide && b.dsn == a.dsn.wrapping_add(self.total) && b.ssn == a.ssn.wrapping_add(self.total as u32) && b.data_len as u64 == len
            }
            _ => false,
        };
        if norm != self.norm || !contiguous {
            return Err(t);
        }
        self.total += len;
        self.n += 1;
        self.next_seq = self.next_seq.wrapping_add(len as u32);
        self.data.end = t.data.end;
        self.psh = h.flags & flags::PSH != 0;
        Ok(())
    }

    /// The subflow (4-tuple) of the batch.
    pub fn key(&self) -> (std::net::SocketAddr, std::net::SocketAddr) {
        (self.first.local, self.first.remote)
    }

    pub fn full(&self) -> bool {
        self.total + self.mss > self.limit
    }
}

/// How many bytes one super-segment of a subflow may carry: about 1 ms
/// at twice the subflow's rate (cwnd / srtt), at least two segments, at
/// most 64 KB — Linux's TSO autosizing (`tcp_tso_autosize`). On a
/// 10 Mbit/s path that is two segments: a 44-segment burst into a
/// 40-packet queue would lose its tail in slow start (seen: a sender
/// driven onto its backup subflow by the losses).
pub fn autosize(cwnd: u64, srtt: Option<std::time::Duration>) -> u64 {
    match srtt {
        Some(r) if !r.is_zero() => ((2 * cwnd as u128 * 1_000_000) / r.as_nanos().max(1)) as u64,
        _ => 0,
    }
}

/// Merged mappings remembered per subflow: enough for any window (the
/// oldest go first).
const SENT_KEEP: usize = 512;

impl Writer {
    /// `t` as it is when it carries new data (it may be merged); `Err`
    /// when it is a retransmission, to be sent alone — with the merged
    /// mapping it first went out under, if it lies inside one.
    pub fn remap(&self, mut t: Out) -> Result<Out, Out> {
        if t.data.is_empty() {
            return Ok(t);
        }
        let Some(m) = dss_mapping(&t.header) else { return Ok(t) };
        let Some(sent) = self.sent.get(&(t.local, t.remote)) else { return Ok(t) };
        if !sent.before_high(m.ssn) {
            return Ok(t);
        }
        let len = m.data_len as u32;
        if let Some(&(_, _, big)) = sent.merged.iter().rev().find(|(s, l, _)| m.ssn.wrapping_sub(*s) < *l && m.ssn.wrapping_sub(*s) + len <= *l) {
            set_mapping(&mut t.header, big);
        }
        Err(t)
    }

    /// Records what `h` (with `len` payload bytes) put on its subflow.
    fn note_sent(&mut self, key: (SocketAddr, SocketAddr), h: &TcpHeader, len: u64) {
        if len == 0 {
            return;
        }
        if let Some(m) = dss_mapping(h).filter(|m| !m.is_infinite()) {
            self.sent.entry(key).or_default().note(m.ssn, len as u32);
        }
    }

    /// Records a merged mapping sent on `key`.
    fn note_merged(&mut self, key: (SocketAddr, SocketAddr), big: DssMapping) {
        let sent = self.sent.entry(key).or_default();
        if sent.merged.len() >= SENT_KEEP {
            sent.merged.pop_front();
        }
        sent.merged.push_back((big.ssn, big.data_len as u32, big));
        sent.note(big.ssn, big.data_len as u32);
    }

    /// Builds `h` with the pattern bytes `data` as payload into `obuf`,
    /// the payload generated in place and the TCP checksum left partial
    /// (pseudo-header sum) for the kernel; the IP + TCP header length.
    fn build_partial(&mut self, src: IpAddr, dst: IpAddr, h: &TcpHeader, data: Range<u64>, bytes: &dyn PayloadSource) -> Option<usize> {
        self.ip_id = self.ip_id.wrapping_add(1);
        build_ip_tcp(src, dst, 64, self.ip_id, h, &[], &mut self.obuf).ok()?;
        let hdr = self.obuf.len();
        let ihl = (self.obuf[0] & 0x0f) as usize * 4;
        let len = (data.end - data.start) as usize;
        let total = hdr + len;
        if total > 65_535 {
            return None;
        }
        self.obuf.resize(total, 0);
        bytes.fill(data.start, &mut self.obuf[hdr..]);
        self.obuf[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        self.obuf[10..12].copy_from_slice(&[0, 0]);
        let mut acc = 0u32;
        for ch in self.obuf[..ihl].chunks_exact(2) {
            acc += u16::from_be_bytes([ch[0], ch[1]]) as u32;
        }
        while acc >> 16 != 0 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        self.obuf[10..12].copy_from_slice(&(!(acc as u16)).to_be_bytes());
        let ck = pseudo_sum(&self.obuf[12..20], (total - ihl) as u32);
        self.obuf[ihl + 16..ihl + 18].copy_from_slice(&ck.to_be_bytes());
        Some(hdr)
    }

    /// Writes one segment as it is.
    pub fn single(&mut self, tun: &Tun, t: &Out, c: &mut HostCounters, bytes: &dyn PayloadSource) {
        self.note_sent((t.local, t.remote), &t.header, t.data.end - t.data.start);
        if tun.gso() && matches!((t.local.ip(), t.remote.ip()), (IpAddr::V4(_), IpAddr::V4(_))) {
            let Some(hdr) = self.build_partial(t.local.ip(), t.remote.ip(), &t.header, t.data.clone(), bytes) else { return };
            match tun.send_partial(&self.obuf, hdr, None) {
                Ok(true) => c.tx_packets += 1,
                _ => c.tx_dropped += 1,
            }
            return;
        }
        let len = (t.data.end - t.data.start) as usize;
        if self.pay.len() < len {
            self.pay.resize(len, 0);
        }
        bytes.fill(t.data.start, &mut self.pay[..len]);
        self.ip_id = self.ip_id.wrapping_add(1);
        if build_ip_tcp(t.local.ip(), t.remote.ip(), 64, self.ip_id, &t.header, &self.pay[..len], &mut self.obuf).is_err() {
            return;
        }
        match tun.send(&self.obuf) {
            Ok(true) => c.tx_packets += 1,
            _ => c.tx_dropped += 1,
        }
    }

    /// Writes a batch: a single segment as it is, more as a super-segment.
    pub fn flush(&mut self, tun: &Tun, b: Batch, c: &mut HostCounters, bytes: &dyn PayloadSource) {
        if b.n == 1 {
            return self.single(tun, &b.first, c, bytes);
        }
        let mut h = b.first.header;
        h.flags = (h.flags & !flags::PSH) | if b.psh { flags::PSH } else { 0 };
        if let Some(m) = b.map {
            // One mapping over the whole super-segment, in every piece.
            let big = DssMapping { data_len: b.total as u16, ..m };
            set_mapping(&mut h, big);
            self.note_merged(b.key(), big);
        }
        let Some(hdr) = self.build_partial(b.first.local.ip(), b.first.remote.ip(), &h, b.data.clone(), bytes) else { return };
        // The kernel numbers the pieces' IP ids from the first one on.
        self.ip_id = self.ip_id.wrapping_add(b.n as u16 - 1);
        match tun.send_gso(&self.obuf, hdr, b.mss as usize) {
            Ok(true) => {
                c.tx_packets += b.n;
                self.gso_writes += 1;
                self.gso_segments += b.n;
            }
            _ => c.tx_dropped += b.n,
        }
    }
}

/// Replaces the DSS mapping of `h`.
fn set_mapping(h: &mut TcpHeader, m: DssMapping) {
    let mut o = h.options;
    o.clear_mptcp();
    for x in h.options.mptcp() {
        match x {
            MptcpOption::Dss(d) => {
                let mut d2 = *d;
                d2.mapping = Some(m);
                let _ = o.push_mptcp(MptcpOption::Dss(d2));
            }
            other => {
                let _ = o.push_mptcp(*other);
            }
        }
    }
    h.options = o;
}

/// The TCP pseudo-header sum (addresses, protocol, TCP length), folded and
/// not complemented: what a CHECKSUM_PARTIAL TCP header carries for the
/// kernel to finish (`~tcp_v4_check(len, saddr, daddr, 0)` in Linux).
fn pseudo_sum(addrs: &[u8], tcp_len: u32) -> u16 {
    let mut acc: u32 = 6 + tcp_len;
    for ch in addrs.chunks_exact(2) {
        acc += u16::from_be_bytes([ch[0], ch[1]]) as u32;
    }
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::Dss;
    use std::net::Ipv4Addr;

    fn seg(seq: u32, dsn: u64, len: u64, psh: bool) -> Out {
        let mut o = TcpOptions::new();
        let map = DssMapping { dsn, dsn_wide: true, ssn: seq - 1000, data_len: len as u16, checksum: None };
        o.push_mptcp(MptcpOption::Dss(Dss { data_ack: None, mapping: Some(map), data_fin: false })).unwrap();
        let header = TcpHeader { src_port: 1, dst_port: 2, seq, ack: 5, flags: flags::ACK | if psh { flags::PSH } else { 0 }, window: 100, urgent: 0, options: o };
        let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 1);
        let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 2);
        Out { local: a, remote: b, header, data: dsn..dsn + len }
    }

    #[test]
    fn merges_contiguous_segments_and_stops_at_gaps() {
        let mut b = Batch::start(seg(2000, 0, 1400, false), MAX_BYTES).ok().unwrap();
        assert!(b.push(seg(3400, 1400, 1400, false)).is_ok());
        // A gap in the data sequence: not merged.
        assert!(b.push(seg(4800, 9999, 1400, false)).is_err());
        // Full-sized segments only.
        assert!(b.push(seg(4800, 2800, 100, false)).is_err());
        assert_eq!((b.n, b.total, b.data.clone()), (2, 2800, 0..2800));
        // PSH does not stop a batch; the last segment's PSH is the batch's.
        let mut b = Batch::start(seg(2000, 0, 1400, true), MAX_BYTES).ok().unwrap();
        assert!(b.push(seg(3400, 1400, 1400, true)).is_ok());
        assert!(b.push(seg(4800, 2800, 1400, false)).is_ok());
        assert!(!b.psh && b.n == 3);
        // Full at 64 KB.
        for k in 3..46 {
            if b.full() {
                break;
            }
            let k = k as u64;
            assert!(b.push(seg(2000 + 1400 * k as u32, 1400 * k, 1400, false)).is_ok());
        }
        assert!(b.full() && b.total <= MAX_BYTES, "{}", b.total);
    }

    #[test]
    fn retransmissions_inside_a_merged_mapping_get_it() {
        let mut w = Writer::default();
        let mut b = Batch::start(seg(2000, 0, 1400, false), MAX_BYTES).ok().unwrap();
        for k in 1..4u32 {
            assert!(b.push(seg(2000 + 1400 * k, 1400 * k as u64, 1400, false)).is_ok());
        }
        // Recorded as a flush would (no TUN here).
        let m = DssMapping { dsn: 0, dsn_wide: true, ssn: 1000, data_len: 5600, checksum: None };
        w.note_merged(b.key(), m);
        // The third piece again: the merged mapping.
        let r = w.remap(seg(4800, 2800, 1400, false)).err().expect("remapped");
        assert_eq!(dss_mapping(&r.header).unwrap(), m);
        // New data past it: untouched.
        assert!(w.remap(seg(7600, 5600, 1400, false)).is_ok());
    }

    /// The failure seen against Linux 6.18 (its subflow reset with
    /// MP_TCPRST "MPTCP-specific error"): two segments sent alone, then
    /// both resent and merged into one new mapping, moved the writer's
    /// notion of "sent" back, so a later retransmission inside an older
    /// merged mapping went out with a mapping of its own.
    #[test]
    fn resent_segments_are_neither_merged_nor_remapped_anew() {
        let mut w = Writer::default();
        let key = (seg(0, 0, 1, false).local, seg(0, 0, 1, false).remote);
        // SSN 1000.. and 2400.. sent alone (their own mappings), then
        // 3800.. and 5200.. merged into (SSN 3800, 2800 bytes).
        for (sq, d) in [(2000u32, 0u64), (3400, 1400)] {
            let t = seg(sq, d, 1400, false);
            w.note_sent(key, &t.header, 1400);
        }
        let big = DssMapping { dsn: 2800, dsn_wide: true, ssn: 3800, data_len: 2800, checksum: None };
        w.note_merged(key, big);
        // Both early segments are resent: each goes alone with its own
        // (original) mapping, never merged.
        let r0 = w.remap(seg(2000, 0, 1400, false)).err().expect("a retransmission goes alone");
        assert_eq!(dss_mapping(&r0.header).unwrap().data_len, 1400);
        w.note_sent(key, &r0.header, 1400);
        assert!(w.remap(seg(3400, 1400, 1400, false)).is_err());
        // Sending them again did not move "sent" back: the second half of
        // the merged mapping, resent, still carries the merged mapping.
        let r = w.remap(seg(6200, 4200, 1400, false)).err().expect("remapped");
        assert_eq!(dss_mapping(&r.header).unwrap(), big);
        // New data is new.
        assert!(w.remap(seg(7600, 5600, 1400, false)).is_ok());
    }

    #[test]
    fn partial_build_completes_to_the_full_packet() {
        // build_partial + the kernel's completion (summing from csum_start
        // into csum_offset) gives what build_ip_tcp builds.
        let t = seg(2000, 0, 1400, false);
        let mut full = Vec::new();
        let mut pay = vec![0u8; 1400];
        mplab_backend::apps::fill_pattern(0, &mut pay);
        build_ip_tcp(t.local.ip(), t.remote.ip(), 64, 1, &t.header, &pay, &mut full).unwrap();
        let mut w = Writer { ip_id: 0, ..Default::default() };
        w.build_partial(t.local.ip(), t.remote.ip(), &t.header, t.data.clone(), &mplab_backend::apps::Pattern).unwrap();
        let mut p = w.obuf.clone();
        let mut acc = 0u32;
        for ch in p[20..].chunks(2) {
            acc += u16::from_be_bytes([ch[0], *ch.get(1).unwrap_or(&0)]) as u32;
        }
        while acc >> 16 != 0 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        p[36..38].copy_from_slice(&(!(acc as u16)).to_be_bytes());
        assert_eq!(p, full);
    }

    #[test]
    fn batches_are_sized_by_the_rate() {
        use std::time::Duration;
        // 10 Mbit/s-ish: 31 KB over 25 ms -> 2.5 KB per ms: two segments.
        let a = autosize(31_000, Some(Duration::from_millis(25)));
        let mut b = Batch::start(seg(2000, 0, 1400, false), a).ok().unwrap();
        assert!(b.push(seg(3400, 1400, 1400, false)).is_ok());
        assert!(b.full());
        assert!(b.push(seg(4800, 2800, 1400, false)).is_err());
        // Unshaped: 4 MB over 3 ms: 64 KB.
        assert!(autosize(4 << 20, Some(Duration::from_millis(3))) > MAX_BYTES);
        // No RTT yet: two segments.
        assert_eq!(Batch::start(seg(2000, 0, 1400, false), autosize(1 << 20, None)).ok().unwrap().limit, 2800);
    }

    #[test]
    fn pseudo_sum_matches_a_full_checksum() {
        // The pseudo sum plus the sum over the TCP bytes, complemented, is
        // the checksum build_ip_tcp computes.
        let t = seg(2000, 0, 10, false);
        let mut out = Vec::new();
        build_ip_tcp(t.local.ip(), t.remote.ip(), 64, 1, &t.header, b"0123456789", &mut out).unwrap();
        let full = u16::from_be_bytes([out[36], out[37]]);
        let mut tcp = out[20..].to_vec();
        tcp[16] = 0;
        tcp[17] = 0;
        let mut acc = pseudo_sum(&out[12..20], tcp.len() as u32) as u32;
        for ch in tcp.chunks(2) {
            acc += u16::from_be_bytes([ch[0], *ch.get(1).unwrap_or(&0)]) as u32;
        }
        while acc >> 16 != 0 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        assert_eq!(!(acc as u16), full);
    }
}
