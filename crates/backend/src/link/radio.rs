//! A cellular radio's idle state in front of a link (LTE's RRC_IDLE and
//! RRC_CONNECTED): after `idle` without a packet either way the radio
//! sleeps, and the next packet, whichever way it goes, waits `promotion`
//! while the radio reconnects; packets arriving meanwhile wait with it.
//! Both directions of a link share one [`Radio`]: the caller asks it the
//! time to offer each packet at, and offers the packet then.

/// One link's radio. Starts asleep: the first packet pays the promotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Radio {
    idle_ns: u64,
    promotion_ns: u64,
    /// When the latest packet was let through.
    last_ns: Option<u64>,
    /// When the current promotion ends (the radio is awake from then).
    ready_ns: u64,
    promotions: u64,
}

impl Radio {
    pub fn new(idle_ns: u64, promotion_ns: u64) -> Radio {
        Radio { idle_ns, promotion_ns, last_ns: None, ready_ns: 0, promotions: 0 }
    }

    /// A packet reaches the link at `now` (either direction): when the link
    /// takes it (`now`, or the end of the promotion it waits for). Calls
    /// come in time order.
    pub fn offer_at(&mut self, now: u64) -> u64 {
        let asleep = match self.last_ns {
            None => true,
            Some(last) => now >= self.ready_ns && now.saturating_sub(last) >= self.idle_ns,
        };
        if asleep {
            self.ready_ns = now + self.promotion_ns;
            self.promotions += 1;
        }
        let at = now.max(self.ready_ns);
        self.last_ns = Some(at);
        at
    }

    /// How many times the radio woke up.
    pub fn promotions(&self) -> u64 {
        self.promotions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_first_packet_and_the_first_after_silence_wait() {
        let mut r = Radio::new(10_000 * MS, 260 * MS);
        // Asleep at the start: the first packet and those behind it wait.
        assert_eq!(r.offer_at(0), 260 * MS);
        assert_eq!(r.offer_at(100 * MS), 260 * MS);
        // Awake: packets pass at once, and keep it awake.
        assert_eq!(r.offer_at(300 * MS), 300 * MS);
        assert_eq!(r.offer_at(9_000 * MS), 9_000 * MS);
        // Just under the idle time: still awake.
        assert_eq!(r.offer_at(18_999 * MS), 18_999 * MS);
        // Ten seconds of silence: asleep again.
        assert_eq!(r.offer_at(29_000 * MS), 29_260 * MS);
        assert_eq!(r.promotions(), 2);
    }
}
