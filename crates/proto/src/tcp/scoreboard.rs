//! The sender's record of every segment in flight: what was sent when,
//! what the peer SACKed, what is deemed lost and what was retransmitted
//! (RFC 6675's scoreboard). Byte counters are kept incrementally so that
//! the bytes in flight ("pipe") cost O(1) per ACK even with thousands of
//! segments outstanding.

use std::collections::VecDeque;
use core::ops::Range;

use crate::time::Instant;

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted and not yet acknowledged or SACKed.
const RETRANS: u8 = 4;
/// Retransmitted at least once: no RTT sample from it (Karn).
const EVER_RETRANS: u8 = 8;

#[derive(Debug, Clone, Copy)]
struct Seg {
    /// Sequence offsets; a FIN occupies the last one.
    start: u64,
    end: u64,
    sent_at: Instant,
    fin: bool,
    flags: u8,
}

impl Seg {
    fn len(&self) -> u64 {
        self.end - self.start
    }
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// A segment to retransmit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resend {
    pub range: Range<u64>,
    pub fin: bool,
}

/// What a cumulative ACK removed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Acked {
    /// Sequence bytes (payload plus a FIN).
    pub bytes: u64,
    /// Send time of the newest segment acked that was never retransmitted,
    /// when the ACK covers no retransmitted byte: an ACK that does cannot
    /// say which copy arrived, so its sequence gives no RTT sample (Karn,
    /// RFC 6298 3; Linux's FLAG_RETRANS_DATA_ACKED in tcp_clean_rtx_queue).
    pub rtt_from: Option<Instant>,
    /// The ACK covers bytes that were sent more than once.
    pub retrans_acked: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    segs: VecDeque<Seg>,
    sacked: u64,
    lost: u64,
    retrans_out: u64,
    highest_sack: u64,
    /// FACK loss marking has decided every segment below this offset.
    lost_scan: u64,
    /// End of the highest segment ever marked lost: retransmission looks
    /// no further.
    resend_high: u64,
    /// Retransmission has considered every segment below this offset.
    rexmit_scan: u64,
    /// SACK blocks of the previous ACK: only what is new gets walked.
    sack_cache: [Range<u64>; 4],
    /// Retransmissions in the order they were sent: (start, time).
    resent_fifo: VecDeque<(u64, Instant)>,
    /// The most recently sent transmission the peer has received, as
    /// (send time, end offset): RACK's "most recently delivered" one. The
    /// end breaks ties between segments of one burst, which share a send
    /// time (Linux's `tcp_skb_sent_after`).
    delivered_sent_at: Option<(Instant, u64)>,
    /// Every segment below this offset is SACKed or marked lost, for good
    /// (neither mark is ever taken back): RACK starts looking here instead
    /// of rescanning the whole recovery window on every ACK.
    rack_scan: u64,
}

impl Scoreboard {
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn sacked(&self) -> u64 {
        self.sacked
    }
    pub fn lost(&self) -> u64 {
        self.lost
    }
    pub fn highest_sack(&self) -> u64 {
        self.highest_sack
    }

    /// Bytes believed to be in the network (RFC 6675 "pipe").
    pub fn in_flight(&self, outstanding: u64) -> u64 {
        (outstanding + self.retrans_out).saturating_sub(self.sacked + self.lost)
    }

    pub fn push(&mut self, range: Range<u64>, fin: bool, now: Instant) {
        self.segs.push_back(Seg { start: range.start, end: range.end, sent_at: now, fin, flags: 0 });
    }

    /// The first segment ending after `off`. Most lookups (the RACK, loss
    /// and retransmission scans) start at the oldest segment: answering
    /// those from the front spares a binary search whose probes over a
    /// window of hundreds of segments are cache misses.
    fn index_of(&self, off: u64) -> usize {
        match self.segs.front() {
            Some(s) if s.end <= off => self.segs.partition_point(|s| s.end <= off),
            _ => 0,
        }
    }

    fn forget(&mut self, s: &Seg) {
        let n = s.len();
        if s.has(SACKED) {
            self.sacked -= n;
        }
        if s.has(LOST) {
            self.lost -= n;
        }
        if s.has(RETRANS) {
            self.retrans_out -= n;
        }
    }

    /// Everything below `upto` is cumulatively acknowledged.
    pub fn ack(&mut self, upto: u64) -> Acked {
        let mut a = Acked::default();
        while let Some(front) = self.segs.front().copied() {
            if front.end <= upto {
                self.forget(&front);
                self.delivered(front.sent_at, front.end);
                a.bytes += front.len();
                if front.has(EVER_RETRANS) {
                    a.retrans_acked = true;
                } else {
                    a.rtt_from = Some(front.sent_at);
                }
                self.segs.pop_front();
            } else {
                if front.start < upto {
                    // Acked in the middle (the peer's segmentation differs):
                    // keep the rest, its flags and counters adjusted.
                    self.forget(&front);
                    a.retrans_acked |= front.has(EVER_RETRANS);
                    let seg = self.segs.front_mut().expect("front exists");
                    a.bytes += upto - seg.start;
                    seg.start = upto;
                    let s = *seg;
                    self.count(&s);
                }
                break;
            }
        }
        if a.retrans_acked {
            a.rtt_from = None;
        }
        self.highest_sack = self.highest_sack.max(upto);
        self.lost_scan = self.lost_scan.max(upto);
        self.rexmit_scan = self.rexmit_scan.max(upto);
        a
    }

    fn delivered(&mut self, sent_at: Instant, end: u64) {
        self.delivered_sent_at = Some(self.delivered_sent_at.map_or((sent_at, end), |d| d.max((sent_at, end))));
    }

    fn count(&mut self, s: &Seg) {
        let n = s.len();
        if s.has(SACKED) {
            self.sacked += n;
        }
        if s.has(LOST) {
            self.lost += n;
        }
        if s.has(RETRANS) {
            self.retrans_out += n;
        }
    }

    /// Applies the SACK blocks of one ACK (already clipped to the
    /// outstanding window); returns the bytes newly SACKed.
    pub fn sack(&mut self, blocks: &[Range<u64>]) -> u64 {
        let mut newly = 0;
        for b in blocks {
            // Walk only the parts not covered by last ACK's blocks.
            let mut parts: [Range<u64>; 5] = Default::default();
            let mut np = 0;
            let mut cur = b.start;
            let mut cached: [Range<u64>; 4] = self.sack_cache.clone();
            cached.sort_by_key(|c| c.start);
            for c in cached.iter().filter(|c| !c.is_empty() && c.end > b.start && c.start < b.end) {
                if c.start > cur {
                    parts[np] = cur..c.start;
                    np += 1;
                }
                cur = cur.max(c.end);
            }
            if cur < b.end {
                parts[np] = cur..b.end;
                np += 1;
            }
            for p in &parts[..np] {
                newly += self.mark_sacked(p.clone());
            }
            self.highest_sack = self.highest_sack.max(b.end);
        }
        for (slot, b) in self.sack_cache.iter_mut().zip(blocks.iter().chain(core::iter::repeat(&(0..0)))) {
            *slot = b.clone();
        }
        newly
    }

    fn mark_sacked(&mut self, r: Range<u64>) -> u64 {
        let mut i = self.index_of(r.start);
        let mut newly = 0;
        while i < self.segs.len() && self.segs[i].start < r.end {
            let s = self.segs[i];
            if s.start >= r.start && s.end <= r.end && !s.has(SACKED) {
                self.forget(&s);
                let seg = &mut self.segs[i];
                seg.flags = (seg.flags | SACKED) & !(LOST | RETRANS);
                let s = *seg;
                self.count(&s);
                self.delivered(s.sent_at, s.end);
                newly += s.len();
            }
            i += 1;
        }
        newly
    }

    /// FACK-style loss inference: a segment not SACKed with at least
    /// `thresh` bytes SACKed above it is lost. Returns bytes newly marked.
    pub fn mark_lost_by_sack(&mut self, thresh: u64) -> u64 {
        let limit = self.highest_sack.saturating_sub(thresh);
        if limit <= self.lost_scan {
            return 0;
        }
        let mut i = self.index_of(self.lost_scan);
        let mut newly = 0;
        while i < self.segs.len() && self.segs[i].end <= limit {
            let s = self.segs[i];
            if !s.has(SACKED | LOST) {
                self.segs[i].flags |= LOST;
                self.lost += s.len();
                newly += s.len();
                self.resend_high = self.resend_high.max(s.end);
            }
            self.lost_scan = s.end;
            i += 1;
        }
        newly
    }

    /// The first unacknowledged segment is lost (NewReno, without SACK).
    pub fn mark_head_lost(&mut self) {
        if let Some(s) = self.segs.front().copied() {
            if !s.has(SACKED | LOST) {
                self.segs[0].flags |= LOST;
                self.segs[0].flags &= !RETRANS;
                if s.has(RETRANS) {
                    self.retrans_out -= s.len();
                }
                self.lost += s.len();
            }
            self.lost_scan = self.lost_scan.max(s.end);
            self.resend_high = self.resend_high.max(s.end);
            self.rexmit_scan = self.rexmit_scan.min(s.start);
        }
    }

    /// Retransmission timeout: everything not SACKed is lost, and earlier
    /// retransmissions are presumed lost too.
    pub fn mark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.flags &= !RETRANS;
            if s.flags & SACKED == 0 {
                s.flags |= LOST;
            }
        }
        self.retrans_out = 0;
        self.resent_fifo.clear();
        self.lost = self.segs.iter().filter(|s| s.has(LOST)).map(Seg::len).sum();
        self.lost_scan = self.segs.back().map_or(0, |s| s.end);
        self.resend_high = self.lost_scan;
        self.rexmit_scan = self.segs.front().map_or(0, |s| s.start);
    }

    /// The next segment marked lost and not yet retransmitted.
    pub fn next_resend(&mut self) -> Option<Resend> {
        // `rexmit_scan` is always a segment boundary, so nothing at or
        // after it starts below `resend_high`: skip the search (this runs
        // on every transmit opportunity).
        if self.rexmit_scan >= self.resend_high {
            return None;
        }
        let mut i = self.index_of(self.rexmit_scan);
        while i < self.segs.len() && self.segs[i].start < self.resend_high {
            let s = self.segs[i];
            if s.has(LOST) && !s.has(RETRANS) {
                return Some(Resend { range: s.start..s.end, fin: s.fin });
            }
            self.rexmit_scan = s.end;
            i += 1;
        }
        None
    }

    /// RACK (RFC 8985 6.2) for original transmissions: a segment sent
    /// before one the peer has received, and not received itself within
    /// an RTT plus the reordering window, is lost. That holds above the
    /// highest SACK too: a cumulative ACK of a retransmission sent after a
    /// burst's lost tail condemns the tail, which no SACK could. Scans at
    /// most `budget` segments from the oldest; returns the bytes newly
    /// marked and when to look again for segments not yet overdue.
    pub fn rack_detect(&mut self, now: Instant, rtt: core::time::Duration, reo_wnd: core::time::Duration, budget: usize) -> (u64, Option<Instant>) {
        let Some(xmit) = self.delivered_sent_at else { return (0, None) };
        let mut newly = 0;
        let mut timer = None;
        let end = self.segs.len().min(budget);
        let mut from = self.index_of(self.rack_scan);
        while from < end && self.segs[from].has(SACKED | LOST) {
            self.rack_scan = self.segs[from].end;
            from += 1;
        }
        for i in from..end {
            let s = self.segs[i];
            if s.has(SACKED | LOST | RETRANS) {
                continue;
            }
            // What is left are originals, sent in sequence order: the first
            // one sent after the delivered transmission ends the scan.
            if (s.sent_at, s.end) > xmit {
                break;
            }
            let deadline = s.sent_at + rtt + reo_wnd;
            if deadline <= now {
                self.segs[i].flags |= LOST;
                self.lost += s.len();
                newly += s.len();
                self.rexmit_scan = self.rexmit_scan.min(s.start);
                self.resend_high = self.resend_high.max(s.end);
            } else {
                timer = Some(timer.map_or(deadline, |t: Instant| t.min(deadline)));
            }
        }
        (newly, timer)
    }

    /// The last segment sent, for a tail loss probe (RFC 8985 7.3): it is
    /// resent as it is, its accounting untouched (no RTT sample from it).
    pub fn probe_tail(&mut self) -> Option<Resend> {
        let s = self.segs.back_mut()?;
        if s.flags & SACKED != 0 {
            return None;
        }
        s.flags |= EVER_RETRANS;
        Some(Resend { range: s.start..s.end, fin: s.fin })
    }

    /// Records that the segment starting at `start` was retransmitted.
    pub fn resent(&mut self, start: u64, now: Instant) {
        let i = self.index_of(start);
        if let Some(s) = self.segs.get_mut(i) {
            if s.start == start && s.flags & RETRANS == 0 {
                s.flags |= RETRANS | EVER_RETRANS;
                s.sent_at = now;
                let n = s.len();
                self.retrans_out += n;
                self.rexmit_scan = self.rexmit_scan.max(s.end);
                self.resent_fifo.push_back((start, now));
            }
        }
    }

    /// RACK's rule for retransmissions (RFC 8985): a retransmission sent
    /// more than `reo_wnd` before a segment the peer has since received is
    /// lost too, so it is resent without waiting for the RTO. Returns the
    /// bytes marked lost again.
    pub fn detect_lost_retransmits(&mut self, reo_wnd: core::time::Duration) -> u64 {
        let Some((delivered, _)) = self.delivered_sent_at else { return 0 };
        let mut newly = 0;
        while let Some(&(start, sent)) = self.resent_fifo.front() {
            let i = self.index_of(start);
            let still_out = self.segs.get(i).is_some_and(|s| s.start == start && s.has(RETRANS) && s.sent_at == sent);
            if !still_out {
                self.resent_fifo.pop_front();
                continue;
            }
            if sent + reo_wnd >= delivered {
                break;
            }
            self.resent_fifo.pop_front();
            // Still marked LOST (and counted in `lost`) since it was first
            // deemed lost: only its retransmission is forgotten.
            let seg = &mut self.segs[i];
            seg.flags &= !RETRANS;
            let n = seg.len();
            self.retrans_out -= n;
            newly += n;
            self.rexmit_scan = self.rexmit_scan.min(start);
        }
        newly
    }
}

impl Scoreboard {
    /// The incremental counters equal what the segments say (tests call
    /// this after every step).
    pub fn assert_consistent(&self) {
        let sum = |f: u8| self.segs.iter().filter(|s| s.has(f)).map(Seg::len).sum::<u64>();
        assert_eq!(self.sacked, sum(SACKED), "sacked counter");
        assert_eq!(self.lost, sum(LOST), "lost counter");
        assert_eq!(self.retrans_out, sum(RETRANS), "retrans counter");
        for w in self.segs.iter().collect::<Vec<_>>().windows(2) {
            assert_eq!(w[0].end, w[1].start, "segments are contiguous");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(i * 100..(i + 1) * 100, false, Instant(i));
        }
        b
    }

    #[test]
    fn sack_loss_and_retransmit() {
        let mut b = board(10);
        assert_eq!(b.in_flight(1000), 1000);
        // Segment 0 lost; 1..5 SACKed.
        assert_eq!(b.sack(&[100..500]), 400);
        assert_eq!(b.sack(&[100..600]), 100, "only the new part is walked");
        assert_eq!(b.mark_lost_by_sack(300), 100);
        assert_eq!(b.in_flight(1000), 1000 - 500 - 100);
        let r = b.next_resend().unwrap();
        assert_eq!(r.range, 0..100);
        b.resent(0, Instant(50));
        assert_eq!(b.in_flight(1000), 500);
        assert!(b.next_resend().is_none());
        let a = b.ack(600);
        assert_eq!(a.bytes, 600);
        assert_eq!(a.rtt_from, None, "segment 0 was sent twice: no sample from this ACK (Karn)");
        assert!(a.retrans_acked);
        assert_eq!((b.sacked(), b.lost()), (0, 0));
        assert_eq!(b.in_flight(400), 400);
    }

    #[test]
    fn rto_marks_everything_unsacked() {
        let mut b = board(5);
        b.sack(&[200..300]);
        b.mark_all_lost();
        assert_eq!(b.lost(), 400);
        assert_eq!(b.in_flight(500), 0);
        let mut got = vec![];
        while let Some(r) = b.next_resend() {
            got.push(r.range.start);
            b.resent(r.range.start, Instant(9));
        }
        assert_eq!(got, vec![0, 100, 300, 400]);
        assert_eq!(b.in_flight(500), 400);
    }

    #[test]
    fn newreno_head_loss_and_partial_ack() {
        let mut b = board(4);
        b.mark_head_lost();
        assert_eq!(b.next_resend().unwrap().range, 0..100);
        b.resent(0, Instant(7));
        b.ack(100);
        b.mark_head_lost();
        assert_eq!(b.next_resend().unwrap().range, 100..200);
    }

    #[test]
    fn a_lost_retransmission_is_detected_when_later_data_arrives() {
        let mut b = board(6);
        b.sack(&[100..400]);
        b.mark_lost_by_sack(200);
        b.resent(0, Instant(10));
        assert!(b.next_resend().is_none());
        // Segment 4 (sent at t=4) arrives: says nothing about the resend at t=10.
        b.sack(&[100..500]);
        assert_eq!(b.detect_lost_retransmits(core::time::Duration::ZERO), 0);
        // A segment sent after the retransmission arrived, the retransmission did not.
        b.push(600..700, false, Instant(20));
        b.sack(&[100..500, 600..700]);
        assert_eq!(b.detect_lost_retransmits(core::time::Duration::ZERO), 100);
        b.assert_consistent();
        assert_eq!(b.lost(), 100);
        assert_eq!(b.next_resend().unwrap().range, 0..100);
    }

    /// A burst's tail sent before a retransmission that is cumulatively
    /// acknowledged is lost, though no SACK covers anything above it: RACK
    /// judges by send time, not up to the highest SACK
    /// (`tcp_rack_detect_loss`). Otherwise only the retransmission timeout
    /// recovers such a tail.
    #[test]
    fn rack_condemns_a_lost_tail_once_a_later_retransmission_is_acked() {
        let ms = |n: u64| core::time::Duration::from_millis(n);
        let at = |n: u64| Instant(n * 1_000_000);
        let mut b = Scoreboard::default();
        for i in 0..4 {
            b.push(i * 100..(i + 1) * 100, false, at(0));
        }
        b.ack(100);
        b.sack(&[200..300]);
        b.mark_lost_by_sack(100);
        assert_eq!(b.next_resend().unwrap().range, 100..200);
        b.resent(100, at(30));
        // The resend arrives: nothing above 300 was ever SACKed.
        b.ack(300);
        assert_eq!(b.rack_detect(at(52), ms(21), ms(5), 256), (100, None), "the tail 300..400 is lost");
        assert_eq!(b.next_resend().unwrap().range, 300..400);
        b.assert_consistent();
    }

    /// Segments of one burst share a send time: an ACK of the burst's first
    /// segment says nothing about the ones after it (Linux breaks the tie
    /// by sequence, `tcp_skb_sent_after`), however long they queue.
    #[test]
    fn rack_does_not_condemn_the_rest_of_the_delivered_burst() {
        let ms = |n: u64| core::time::Duration::from_millis(n);
        let mut b = Scoreboard::default();
        for i in 0..40 {
            b.push(i * 100..(i + 1) * 100, false, Instant(0));
        }
        b.ack(100);
        assert_eq!(b.rack_detect(Instant(500_000_000), ms(20), ms(5), 256), (0, None));
        assert_eq!(b.lost(), 0);
    }

    /// RACK as it was before `rack_scan`: every segment from the front.
    fn rack_from_the_front(b: &mut Scoreboard, now: Instant, rtt: core::time::Duration, reo: core::time::Duration, budget: usize) -> (u64, Option<Instant>) {
        let Some(xmit) = b.delivered_sent_at else { return (0, None) };
        let (mut newly, mut timer) = (0, None);
        for i in 0..b.segs.len().min(budget) {
            let s = b.segs[i];
            if s.has(SACKED | LOST | RETRANS) {
                continue;
            }
            if (s.sent_at, s.end) > xmit {
                break;
            }
            let deadline = s.sent_at + rtt + reo;
            if deadline <= now {
                b.segs[i].flags |= LOST;
                b.lost += s.len();
                newly += s.len();
                b.rexmit_scan = b.rexmit_scan.min(s.start);
                b.resend_high = b.resend_high.max(s.end);
            } else {
                timer = Some(timer.map_or(deadline, |t: Instant| t.min(deadline)));
            }
        }
        (newly, timer)
    }

    proptest::proptest! {
        /// Starting RACK's scan past the segments already SACKed or lost
        /// changes nothing: same verdicts, same timer, same marks, whatever
        /// mix of SACKs, ACKs, losses, retransmissions and timeouts came
        /// before.
        #[test]
        fn rack_scan_skips_only_settled_segments(ops in proptest::collection::vec((0u8..8, 0u64..40, 0u64..40), 1..120)) {
            let mut b = Scoreboard::default();
            let (mut next, mut t) = (0u64, 0u64);
            for (op, x, y) in ops {
                t += 1;
                match op {
                    0 | 1 => {
                        for _ in 0..=x % 4 {
                            b.push(next..next + 100, false, Instant(t));
                            next += 100;
                        }
                    }
                    2 => {
                        let (lo, hi) = ((x.min(y)) * 100, (x.max(y) + 1) * 100);
                        b.sack(std::slice::from_ref(&(lo.min(next)..hi.min(next))));
                    }
                    3 => { b.ack((x * 100).min(next)); }
                    4 => { b.mark_lost_by_sack(300); }
                    5 => {
                        if let Some(r) = b.next_resend() {
                            b.resent(r.range.start, Instant(t));
                        }
                        if y % 3 == 0 { b.mark_head_lost(); }
                        if y % 7 == 0 { b.detect_lost_retransmits(core::time::Duration::ZERO); }
                    }
                    6 if y % 5 == 0 => b.mark_all_lost(),
                    _ => {
                        let (now, rtt) = (Instant(t + x), core::time::Duration::from_nanos(y));
                        let budget = if x % 2 == 0 { 256 } else { 1 + y as usize % 6 };
                        let mut want = b.clone();
                        let expected = rack_from_the_front(&mut want, now, rtt, core::time::Duration::from_nanos(2), budget);
                        let got = b.rack_detect(now, rtt, core::time::Duration::from_nanos(2), budget);
                        proptest::prop_assert_eq!(got, expected);
                        let flags = |b: &Scoreboard| b.segs.iter().map(|s| (s.start, s.flags)).collect::<Vec<_>>();
                        proptest::prop_assert_eq!(flags(&b), flags(&want));
                        proptest::prop_assert_eq!((b.lost, b.rexmit_scan, b.resend_high), (want.lost, want.rexmit_scan, want.resend_high));
                    }
                }
                b.assert_consistent();
            }
        }
    }

    #[test]
    fn ack_in_the_middle_of_a_segment() {
        let mut b = board(2);
        let a = b.ack(150);
        assert_eq!(a.bytes, 150);
        assert_eq!(b.in_flight(50), 50);
    }
}
