//! The serialiser: puts a packet's bits on the wire at the link's rate,
//! one packet after another, on an exact timeline (see [`super::time`]).

use std::collections::VecDeque;

use super::time::{add_bits, ceil_ns, div_128};

/// Per-packet record of a packet that has not finished serialisation.
///
/// 32 bytes, aligned to 32: two records per cache line and none across
/// two lines (each `offer` reads the front record; one straddling a line
/// boundary cost a second cache miss). The record's sequence number is not
/// stored: records are retired from the front in order, so the front's is
/// `next_seq - queue.len()`.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
pub(super) struct Ser {
    /// Exact end of serialisation: `end_ns + end_rem / rate`.
    pub end_ns: u64,
    pub end_rem: u64,
    /// Pre-drawn jitter, kept to recompute the arrival on set_rate/set_delay.
    pub jitter_ns: u64,
    pub size: u32,
    /// Pre-drawn loss decision (the packet itself is not kept).
    pub lost: bool,
}

impl Ser {
    /// The end of serialisation rounded up to whole nanoseconds.
    #[inline]
    pub fn end(&self) -> u64 {
        ceil_ns(self.end_ns, self.end_rem)
    }
}

/// The serialiser's timeline: the exact time it finishes everything
/// accepted so far, `free_ns + free_rem / rate`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Serialiser {
    free_ns: u64,
    free_rem: u64,
}

impl Serialiser {
    /// Schedules `size` bytes offered at `now`; returns the exact end of
    /// their serialisation. A packet starts when both it and the
    /// serialiser are ready; comparing (now, 0) with the exact free time
    /// keeps the carried remainder when the serialiser is busy.
    #[inline]
    pub fn schedule(&mut self, now: u64, size: u32, rate_bps: u64) -> (u64, u64) {
        let (s_ns, s_rem) = if (now, 0) >= (self.free_ns, self.free_rem) { (now, 0) } else { (self.free_ns, self.free_rem) };
        let (end_ns, end_rem) = add_bits(s_ns, s_rem, u64::from(size) * 8, rate_bps);
        self.free_ns = end_ns;
        self.free_rem = end_rem;
        (end_ns, end_rem)
    }

    /// Aborts the frame being serialised: idle from `now`.
    pub fn abort(&mut self, now: u64) {
        self.free_ns = now;
        self.free_rem = 0;
    }

    /// Recomputes the serialisation ends of `queue` after a rate change at
    /// `now` (every record ending by `now` already retired).
    pub fn retime(&mut self, queue: &mut VecDeque<Ser>, now: u64, old_rate: u64, rate: u64) {
        let mut it = queue.iter_mut();
        let Some(head) = it.next() else {
            // Idle: the serialiser is free by now; drop the remainder (it
            // was in units of the old rate), rounding the free time up.
            self.free_ns = ceil_ns(self.free_ns, self.free_rem);
            self.free_rem = 0;
            return;
        };
        // The head is being serialised: it has `(end - now) * old_rate`
        // bit-nanoseconds (i.e. bits * 10^9) left, exactly.
        let left =
            if old_rate == 0 { 0 } else { u128::from(head.end_ns.saturating_sub(now)) * u128::from(old_rate) + u128::from(head.end_rem) };
        let (mut ns, mut rem) = if rate == 0 { (now, 0) } else { div_128(now, left, rate) };
        head.end_ns = ns;
        head.end_rem = rem;
        for r in it {
            (ns, rem) = add_bits(ns, rem, u64::from(r.size) * 8, rate);
            r.end_ns = ns;
            r.end_rem = rem;
        }
        self.free_ns = ns;
        self.free_rem = rem;
    }
}
