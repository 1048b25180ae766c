//! The receiving side every application end shares: it reads what the
//! socket has and checks each chunk starts where the previous one ended.

use super::StreamSocket;

/// Receiver-side verification and counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Receiver {
    pub delivered: u64,
    /// Set on the first chunk that did not start where the last one ended.
    pub gap_at: Option<u64>,
}

impl Receiver {
    /// Reads everything readable, checking continuity; returns bytes read.
    pub fn drain(&mut self, s: &mut dyn StreamSocket) -> u64 {
        let mut total = 0;
        loop {
            let avail = s.readable();
            if avail == 0 {
                return total;
            }
            let r = s.recv(avail);
            if r.is_empty() {
                return total;
            }
            if r.start != self.delivered && self.gap_at.is_none() {
                self.gap_at = Some(self.delivered);
            }
            self.delivered = r.end.max(self.delivered);
            total += r.end - r.start;
        }
    }

    pub fn ok(&self) -> bool {
        self.gap_at.is_none()
    }
}

#[cfg(test)]
mod tests {
    use core::ops::Range;

    use super::*;

    #[test]
    fn receiver_flags_a_gap() {
        struct Gappy(u32);
        impl StreamSocket for Gappy {
            fn send_space(&self) -> u64 {
                0
            }
            fn send(&mut self, _: u64) -> u64 {
                0
            }
            fn readable(&self) -> u64 {
                if self.0 < 2 { 10 } else { 0 }
            }
            fn recv(&mut self, _: u64) -> Range<u64> {
                self.0 += 1;
                if self.0 == 1 { 0..10 } else { 20..30 }
            }
            fn close(&mut self) {}
            fn peer_closed(&self) -> bool {
                false
            }
        }
        let mut r = Receiver::default();
        r.drain(&mut Gappy(0));
        assert_eq!(r.gap_at, Some(10));
        assert!(!r.ok());
    }
}
