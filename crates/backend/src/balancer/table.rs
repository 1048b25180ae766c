//! A bounded table with idle expiry, as a balancer keeps its connections
//! and tokens: at most `capacity` entries; an entry not seen for `idle_ns`
//! expires; when the table is full the oldest entry goes, unless it was
//! used since it was queued, in which case it gets a second chance (the
//! CLOCK approximation of least-recently-used that keeps active
//! connections and drops idle ones first).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A multiply-shift hasher: keys here are a few integers, and the table is
/// on every packet's path (SipHash costs more than the whole lookup).
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        super::mix(self.0, 0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(u64::from(v));
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
}

type Fast = BuildHasherDefault<FastHasher>;

#[derive(Debug, Clone, Copy)]
struct Slot<V> {
    value: V,
    last_seen: u64,
    /// Matches the queue entry that stands for this slot.
    generation: u64,
}

/// What happened to entries that left the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCounters {
    pub inserted: u64,
    /// Left because they were idle longer than the timeout.
    pub expired: u64,
    /// Pushed out by a new entry when the table was full.
    pub evicted: u64,
    /// The most entries held at once.
    pub peak: u64,
}

#[derive(Debug, Clone)]
pub struct BoundedTable<K: Hash + Eq + Copy, V: Copy> {
    map: HashMap<K, Slot<V>, Fast>,
    /// Keys in the order they were (re)queued, with the generation and time.
    queue: VecDeque<(K, u64, u64)>,
    capacity: usize,
    idle_ns: u64,
    generation: u64,
    pub counters: TableCounters,
}

impl<K: Hash + Eq + Copy, V: Copy> BoundedTable<K, V> {
    pub fn new(capacity: usize, idle_ns: u64) -> Self {
        BoundedTable { map: HashMap::default(), queue: VecDeque::new(), capacity: capacity.max(1), idle_ns: idle_ns.max(1), generation: 0, counters: TableCounters::default() }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The value for `key` if present and not idle too long; a hit counts
    /// as use.
    pub fn get(&mut self, now: u64, key: &K) -> Option<V> {
        let idle = self.idle_ns;
        let slot = self.map.get_mut(key)?;
        if now.saturating_sub(slot.last_seen) > idle {
            self.map.remove(key);
            self.counters.expired += 1;
            return None;
        }
        slot.last_seen = now;
        Some(slot.value)
    }

    /// The value for `key` without counting it as use.
    pub fn peek(&self, key: &K) -> Option<V> {
        self.map.get(key).map(|s| s.value)
    }

    /// Inserts or replaces; makes room first when full.
    pub fn insert(&mut self, now: u64, key: K, value: V) {
        if let Some(slot) = self.map.get_mut(&key) {
            slot.value = value;
            slot.last_seen = now;
            return;
        }
        self.make_room(now);
        self.generation += 1;
        self.map.insert(key, Slot { value, last_seen: now, generation: self.generation });
        self.queue.push_back((key, self.generation, now));
        self.counters.inserted += 1;
        self.counters.peak = self.counters.peak.max(self.map.len() as u64);
        if self.queue.len() > 2 * self.capacity + 16 {
            // Keys removed by expiry on lookup leave stale queue entries.
            let map = &self.map;
            self.queue.retain(|(k, g, _)| map.get(k).is_some_and(|s| s.generation == *g));
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.map.remove(key).map(|s| s.value)
    }

    fn make_room(&mut self, now: u64) {
        // A second chance requeues an entry stamped now, which cannot look
        // used on its next visit: each entry is looked at most twice.
        let mut budget = 2 * self.queue.len() + 1;
        while self.map.len() >= self.capacity && budget > 0 {
            budget -= 1;
            let Some((key, generation, queued)) = self.queue.pop_front() else { break };
            let Some(slot) = self.map.get(&key).copied() else { continue };
            if slot.generation != generation {
                continue;
            }
            if now.saturating_sub(slot.last_seen) > self.idle_ns {
                self.map.remove(&key);
                self.counters.expired += 1;
            } else if slot.last_seen > queued {
                self.queue.push_back((key, generation, now));
            } else {
                self.map.remove(&key);
                self.counters.evicted += 1;
            }
        }
    }

    /// Removes what has been idle too long at the head of the queue (a
    /// bounded amount of work per call).
    pub fn expire(&mut self, now: u64, max: usize) {
        for _ in 0..max {
            let Some(&(key, generation, _)) = self.queue.front() else { return };
            match self.map.get(&key).copied() {
                Some(slot) if slot.generation == generation => {
                    if now.saturating_sub(slot.last_seen) <= self.idle_ns {
                        // Queue order is not idle order: the head is
                        // active, requeue it behind the others.
                        self.queue.pop_front();
                        self.queue.push_back((key, generation, now));
                        continue;
                    }
                    self.map.remove(&key);
                    self.counters.expired += 1;
                    self.queue.pop_front();
                }
                _ => {
                    self.queue.pop_front();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn idle_entries_expire() {
        let mut t = BoundedTable::new(10, 100);
        t.insert(0, 1u32, 'a');
        assert_eq!(t.get(50, &1), Some('a'));
        assert_eq!(t.get(149, &1), Some('a'), "seen at 50");
        assert_eq!(t.get(250, &1), None);
        assert_eq!(t.counters.expired, 1);
    }

    #[test]
    fn a_full_table_drops_the_oldest_unused_entry() {
        let mut t = BoundedTable::new(3, 1_000_000);
        for k in 0..3u32 {
            t.insert(k as u64, k, k);
        }
        assert_eq!(t.get(10, &0), Some(0), "0 is used: it gets a second chance");
        t.insert(11, 3, 3);
        assert_eq!(t.len(), 3);
        assert_eq!(t.peek(&1), None, "1 was the oldest unused");
        assert!(t.peek(&0).is_some() && t.peek(&2).is_some() && t.peek(&3).is_some());
        assert_eq!(t.counters.evicted, 1);
    }

    proptest! {
        #[test]
        fn never_holds_more_than_its_capacity(ops in proptest::collection::vec((0u8..3, 0u32..64, 0u64..50), 1..400), cap in 1usize..20) {
            let mut t = BoundedTable::new(cap, 200);
            let mut now = 0;
            for (op, k, dt) in ops {
                now += dt;
                match op {
                    0 => t.insert(now, k, k),
                    1 => { if let Some(v) = t.get(now, &k) { prop_assert_eq!(v, k); } }
                    _ => t.expire(now, 4),
                }
                prop_assert!(t.len() <= cap);
                prop_assert!(t.queue.len() <= 2 * cap + 17);
            }
        }
    }
}
