//! The receive side of a flow end: the bytes its connection placed,
//! checked and hashed as the application reads them.

use std::ops::Range;

use mplab_backend::apps::pattern_mismatch;
use sha2::{Digest, Sha256};

/// Receive ring: at most a power of two above any receive buffer we
/// advertise; it starts at [`MIN_RING`] and doubles as data arrives further
/// ahead, so an idle connection holds a page, not megabytes.
const RING: usize = 16 << 20;
const MIN_RING: usize = 4096;

/// Receive side of one flow end: a ring the driver fills at each
/// segment's data offset, checked against the pattern as the application
/// reads it, and hashed. The first copy of a byte wins, as in a kernel's
/// receive queue: a later segment placed over bytes already held (a
/// retransmission, or an attacker's overlapping mapping) does not change
/// them.
pub(super) struct RxRing {
    pub(super) buf: Vec<u8>,
    /// One bit per ring byte: held since it was last read.
    held: Vec<u64>,
    pub(super) read: u64,
    pub(super) hash: Sha256,
}

impl RxRing {
    /// The ring's memory comes with the first bytes, grows with the
    /// distance between what was read and what arrives, and goes when the
    /// connection is over ([`RxRing::release`]): a host with many idle or
    /// finished connections keeps little of it.
    pub(super) fn new() -> RxRing {
        RxRing { buf: Vec::new(), held: Vec::new(), read: 0, hash: Sha256::new() }
    }
    /// Room for bytes up to offset `end` (exclusive), within [`RING`] of
    /// what was read.
    fn ensure(&mut self, end: u64) {
        let need = (end.saturating_sub(self.read) as usize).clamp(MIN_RING, RING).next_power_of_two();
        if need <= self.buf.len() {
            return;
        }
        let cap = need.max(2 * self.buf.len()).min(RING);
        let mut buf = vec![0u8; cap];
        let mut held = vec![0u64; cap / 64];
        // The held bytes move to their places in the larger ring.
        let old = self.buf.len();
        for off in self.read..self.read + old as u64 {
            let s = (off % old as u64) as usize;
            if self.held[s / 64] & (1u64 << (s % 64)) != 0 {
                let d = (off % cap as u64) as usize;
                buf[d] = self.buf[s];
                held[d / 64] |= 1u64 << (d % 64);
            }
        }
        self.buf = buf;
        self.held = held;
    }
    /// Gives the ring's memory back (everything placed was read).
    pub(super) fn release(&mut self) {
        self.buf = Vec::new();
        self.held = Vec::new();
    }
    pub(super) fn put(&mut self, r: &Range<u64>, payload: &[u8]) {
        let end = r.end.min(r.start + payload.len() as u64);
        if end <= self.read {
            return;
        }
        self.ensure(end.min(self.read + RING as u64));
        let cap = self.buf.len();
        let mask = (cap - 1) as u64;
        for (i, &b) in payload.iter().enumerate().take((r.end - r.start) as usize) {
            let off = r.start + i as u64;
            if off < self.read || off >= self.read + cap as u64 {
                continue;
            }
            let s = (off & mask) as usize;
            let (w, bit) = (s / 64, 1u64 << (s % 64));
            if self.held[w] & bit == 0 {
                self.held[w] |= bit;
                self.buf[s] = b;
            }
        }
    }
    /// Hashes `r` (the next bytes in order) and appends them to `out`: a
    /// bridged connection's real bytes, not the pattern.
    pub(super) fn take_into(&mut self, r: Range<u64>, out: &mut Vec<u8>) {
        self.ensure(r.end);
        let mask = (self.buf.len() - 1) as u64;
        for off in r.clone() {
            let s = (off & mask) as usize;
            self.held[s / 64] &= !(1u64 << (s % 64));
            out.push(self.buf[s]);
        }
        self.hash.update(&out[out.len() - (r.end - r.start) as usize..]);
        self.read = r.end;
    }
    /// Checks and hashes `r` (the next bytes in order); the first mismatch.
    pub(super) fn take(&mut self, r: Range<u64>) -> Option<String> {
        self.ensure(r.end);
        let cap = self.buf.len();
        let mask = (cap - 1) as u64;
        let mut bad = None;
        let mut off = r.start;
        while off < r.end {
            let s = (off & mask) as usize;
            let n = ((r.end - off) as usize).min(cap - s);
            for k in s..s + n {
                self.held[k / 64] &= !(1u64 << (k % 64));
            }
            let chunk = &self.buf[s..s + n];
            self.hash.update(chunk);
            if bad.is_none() {
                bad = pattern_mismatch(off, chunk);
            }
            off += n as u64;
        }
        self.read = r.end;
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_backend::apps::fill_pattern;

    #[test]
    fn ring_checks_and_hashes_in_order() {
        let mut ring = RxRing::new();
        let mut a = vec![0u8; 3000];
        fill_pattern(1000, &mut a);
        let mut b = vec![0u8; 1000];
        fill_pattern(0, &mut b);
        ring.put(&(1000..4000), &a); // out of order first
        ring.put(&(0..1000), &b);
        assert_eq!(ring.take(0..4000), None);
        let mut bad = vec![0u8; 10];
        fill_pattern(4000, &mut bad);
        bad[3] ^= 0xff;
        ring.put(&(4000..4010), &bad);
        assert!(ring.take(4000..4010).unwrap().contains("offset 4003"));
        // Grows with the data ahead of what was read, keeping what it held.
        let mut far = vec![0u8; 100];
        fill_pattern(200_000, &mut far);
        ring.put(&(200_000..200_100), &far);
        assert!(ring.buf.len() >= 256 * 1024 && ring.buf.len() <= RING, "{}", ring.buf.len());
        let mut near = vec![0u8; 195_990];
        fill_pattern(4010, &mut near);
        ring.put(&(4010..200_000), &near);
        assert_eq!(ring.take(4010..200_100), None);
        // Wraps around the ring.
        let start = ring.buf.len() as u64 * 3 - 5;
        ring.read = start;
        let mut w = vec![0u8; 20];
        fill_pattern(start, &mut w);
        ring.put(&(start..start + 20), &w);
        assert_eq!(ring.take(start..start + 20), None);
    }
}
