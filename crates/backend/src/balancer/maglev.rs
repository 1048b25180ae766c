//! Maglev consistent hashing (Eisenbud et al., NSDI 2016): a lookup table of
//! a prime number of slots filled from per-backend permutations, so that
//! every balancer instance with the same backends builds the same table,
//! and removing one backend moves only the flows that were on it (and a
//! few more).

/// Slots: a prime well above the number of backends (the paper's small
/// table, 65537).
pub const TABLE_SIZE: usize = 65_537;

/// A Maglev lookup table over the backends that are up.
#[derive(Debug, Clone)]
pub struct Maglev {
    /// Backend index per slot (`u16::MAX`: no backend is up).
    slots: Vec<u16>,
}

/// One of two independent hashes of a backend's index and the seed.
fn backend_hash(seed: u64, backend: usize, which: u64) -> u64 {
    super::mix(seed ^ which.wrapping_mul(0x9e37_79b9_7f4a_7c15), backend as u64)
}

impl Maglev {
    /// Builds the table for `up[i]` (backend `i` takes flows) with
    /// `size` slots (a prime; [`TABLE_SIZE`] unless testing).
    pub fn new(up: &[bool], seed: u64, size: usize) -> Maglev {
        let m = size as u64;
        let live: Vec<usize> = (0..up.len()).filter(|&i| up[i]).collect();
        let mut slots = vec![u16::MAX; size];
        if live.is_empty() {
            return Maglev { slots };
        }
        let perm: Vec<(u64, u64)> = live.iter().map(|&b| (backend_hash(seed, b, 1) % m, backend_hash(seed, b, 2) % (m - 1) + 1)).collect();
        let mut next = vec![0u64; live.len()];
        let mut filled = 0;
        'fill: loop {
            for (k, &b) in live.iter().enumerate() {
                let (offset, skip) = perm[k];
                // The backend's next preferred slot that is still free.
                let mut c = (offset + next[k] * skip) % m;
                while slots[c as usize] != u16::MAX {
                    next[k] += 1;
                    c = (offset + next[k] * skip) % m;
                }
                slots[c as usize] = b as u16;
                next[k] += 1;
                filled += 1;
                if filled == size {
                    break 'fill;
                }
            }
        }
        Maglev { slots }
    }

    /// The backend for a flow hash (None when no backend is up).
    pub fn lookup(&self, hash: u64) -> Option<usize> {
        let b = self.slots[(hash % self.slots.len() as u64) as usize];
        (b != u16::MAX).then_some(usize::from(b))
    }

    #[cfg(test)]
    fn share(&self, backend: usize) -> f64 {
        self.slots.iter().filter(|&&b| usize::from(b) == backend).count() as f64 / self.slots.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_evenly_and_is_the_same_on_every_instance() {
        let up = [true; 5];
        let a = Maglev::new(&up, 7, TABLE_SIZE);
        let b = Maglev::new(&up, 7, TABLE_SIZE);
        assert_eq!(a.slots, b.slots);
        for i in 0..5 {
            let s = a.share(i);
            assert!((s - 0.2).abs() < 0.01, "backend {i}: {s}");
        }
    }

    #[test]
    fn losing_a_backend_moves_little_else() {
        let all = Maglev::new(&[true; 5], 1, TABLE_SIZE);
        let less = Maglev::new(&[true, true, false, true, true], 1, TABLE_SIZE);
        let moved = (0..TABLE_SIZE).filter(|&i| all.slots[i] != 2 && all.slots[i] != less.slots[i]).count();
        // The paper reports a few percent of the other slots moving.
        assert!((moved as f64) < 0.1 * TABLE_SIZE as f64, "{moved} slots moved");
        assert!(less.slots.iter().all(|&b| b != 2));
    }

    #[test]
    fn no_backend_no_answer() {
        assert_eq!(Maglev::new(&[false, false], 0, 13).lookup(5), None);
        assert_eq!(Maglev::new(&[], 0, 13).lookup(5), None);
    }
}
