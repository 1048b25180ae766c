//! Seeded random streams.
//!
//! Every random element of a simulation (each link direction's loss, jitter
//! and RED draws, each node's ECMP salt, ...) gets its *own* stream, derived
//! from the run's seed and a stable element id. Why one stream per element
//! rather than one global generator: with a shared generator, adding a flow
//! or a probe changes the order of draws and therefore every other element's
//! randomness, so two runs that differ in one detail cannot be compared
//! packet for packet. With per-element streams, an element's draws depend
//! only on `(seed, id)` and on its own history.
//!
//! The generator is ChaCha with 8 rounds (`rand_chacha::ChaCha8Rng`):
//! the key comes from the seed, the 64-bit ChaCha *stream* (nonce) is the
//! element id. ChaCha keeps distinct streams statistically independent by
//! construction (it is a PRF of key, nonce and counter), its output is
//! specified bit for bit (so results are reproducible across platforms and
//! `rand_chacha` releases of the same algorithm), and it is fast enough for
//! per-packet draws thanks to its buffered, SIMD block function.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The seed is expanded into the 256-bit ChaCha key by SplitMix64 (the
/// project's one generator, `mplab_proto::rng`), so that nearby seeds (1,
/// 2, 3, ...) give unrelated keys and the mapping cannot change under a
/// library upgrade (`SeedableRng::seed_from_u64` could).
use mplab_proto::rng::splitmix64;

/// The factory of a run's random streams: one seed, any number of
/// independent, reproducible streams addressed by element id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RngStreams {
    seed: u64,
    key: [u8; 32],
}

impl RngStreams {
    /// Streams for the run seeded with `seed`.
    pub fn new(seed: u64) -> RngStreams {
        let mut st = seed;
        let mut key = [0u8; 32];
        for chunk in key.chunks_exact_mut(8) {
            chunk.copy_from_slice(&splitmix64(&mut st).to_le_bytes());
        }
        RngStreams { seed, key }
    }

    /// The seed these streams were built from (for reports).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream of element `id`. Calling this twice with the same id gives
    /// two generators that produce the same sequence (each starts from the
    /// beginning), so an element should ask once and keep its [`SimRng`].
    pub fn stream(&self, id: u64) -> SimRng {
        let mut inner = ChaCha8Rng::from_seed(self.key);
        inner.set_stream(id);
        SimRng { inner }
    }
}

/// One deterministic random stream, with the few draws the simulator needs.
///
/// All methods are total: no argument makes them panic (degenerate
/// arguments have documented results), because a scenario file can put any
/// number in a loss probability or a jitter bound.
#[derive(Clone, Debug)]
pub struct SimRng {
    inner: ChaCha8Rng,
}

/// 2^-53: scales a 53-bit integer into [0, 1) with every value exactly
/// representable as an f64.
const F64_UNIT: f64 = 1.0 / (1u64 << 53) as f64;

impl SimRng {
    /// A stream without going through [`RngStreams`] (tests, tools).
    /// Identical to `RngStreams::new(seed).stream(id)`.
    pub fn new(seed: u64, id: u64) -> SimRng {
        RngStreams::new(seed).stream(id)
    }

    /// 64 uniformly random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// 32 uniformly random bits.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }

    /// A uniform float in [0, 1): the top 53 bits of one draw, so all values
    /// are equally spaced by 2^-53 and 1.0 is never returned.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * F64_UNIT
    }

    /// True with probability `p`. `p <= 0` (and NaN) is never true and
    /// `p >= 1` always true, *without consuming a draw*: a lossless link
    /// costs nothing per packet, and turning loss on or off does not shift
    /// the stream for other draws of the same element more than necessary.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        if p >= 1.0 {
            true
        } else if p > 0.0 {
            self.uniform() < p
        } else {
            false
        }
    }

    /// A uniform integer in [0, n), unbiased (Lemire's multiply-shift with
    /// rejection, which needs a division only in the rare rejection path).
    /// `below(0)` returns 0 rather than panicking.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        let mut low = m as u64;
        if low < n {
            // Values of `low` below 2^64 mod n would over-represent some
            // results; redraw them.
            let threshold = n.wrapping_neg() % n;
            while low < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// A uniform integer in [0, max], inclusive (a jitter sample in
    /// nanoseconds, say); `max == u64::MAX` is fine.
    #[inline]
    pub fn up_to(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(n) => self.below(n),
            None => self.next_u64(),
        }
    }
}

/// So that `rand` distributions can be driven by a simulator stream.
impl RngCore for SimRng {
    fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.inner.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_chacha::rand_core::Error> {
        self.inner.try_fill_bytes(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(r: &mut SimRng, n: usize) -> Vec<u64> {
        (0..n).map(|_| r.next_u64()).collect()
    }

    #[test]
    fn same_seed_and_id_same_sequence() {
        let a = RngStreams::new(42);
        let b = RngStreams::new(42);
        assert_eq!(take(&mut a.stream(7), 1000), take(&mut b.stream(7), 1000));
        assert_eq!(take(&mut a.stream(7), 10), take(&mut SimRng::new(42, 7), 10));
        // A clone continues from the same point.
        let mut r = a.stream(3);
        r.next_u64();
        let mut c = r.clone();
        assert_eq!(take(&mut r, 100), take(&mut c, 100));
    }

    #[test]
    fn different_ids_and_seeds_differ() {
        let s = RngStreams::new(1);
        let x = take(&mut s.stream(0), 64);
        let y = take(&mut s.stream(1), 64);
        let z = take(&mut RngStreams::new(2).stream(0), 64);
        assert_ne!(x, y);
        assert_ne!(x, z);
        // No shared values at all between the first 64 draws (a shifted or
        // overlapping stream would share many).
        assert!(x.iter().all(|v| !y.contains(v) && !z.contains(v)));
    }

    /// Pins the exact output, so any change of algorithm, key derivation or
    /// dependency that would silently change every simulation result fails
    /// here first.
    #[test]
    fn golden_values() {
        let mut r = RngStreams::new(0x5eed).stream(0x11_0000);
        let got = take(&mut r, 3);
        assert_eq!(got, GOLDEN);
    }
    const GOLDEN: [u64; 3] = [14_978_853_220_741_176_900, 8_525_714_331_038_868_553, 13_776_991_803_944_247_421];

    #[test]
    fn uniform_in_range_and_mean() {
        let mut r = SimRng::new(9, 9);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        let mean = sum / n as f64;
        // sd of the mean = sqrt(1/12/n) ~ 0.00065; allow 5 sigma.
        assert!((mean - 0.5).abs() < 0.0033, "mean {mean}");
    }

    #[test]
    fn bernoulli_edges_and_rate() {
        let mut r = SimRng::new(1, 2);
        let before = r.clone();
        for _ in 0..1000 {
            assert!(!r.bernoulli(0.0));
            assert!(!r.bernoulli(-1.0));
            assert!(!r.bernoulli(f64::NAN));
            assert!(r.bernoulli(1.0));
            assert!(r.bernoulli(7.0));
            assert!(r.bernoulli(f64::INFINITY));
        }
        // Degenerate probabilities consume nothing.
        assert_eq!(r.clone().next_u64(), before.clone().next_u64());
        let n = 100_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.3)).count() as f64;
        let sd = (n as f64 * 0.3 * 0.7).sqrt();
        assert!((hits - 0.3 * n as f64).abs() < 5.0 * sd, "hits {hits}");
    }

    #[test]
    fn below_is_bounded_and_uniform() {
        let mut r = SimRng::new(5, 5);
        assert_eq!(r.below(0), 0);
        assert_eq!(r.below(1), 0);
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            let v = r.below(7);
            counts[v as usize] += 1;
        }
        for c in counts {
            // expected 10000, sd ~ 93; 5 sigma
            assert!((c as i64 - 10_000).abs() < 470, "{counts:?}");
        }
        for _ in 0..1000 {
            assert!(r.below(u64::MAX) < u64::MAX);
            assert!(r.below(3) < 3);
            assert!(r.up_to(3) <= 3);
        }
        let _ = r.up_to(u64::MAX);
        assert_eq!(r.up_to(0), 0);
    }

    /// Not a benchmark, just a sanity print: `cargo test -p mplab-sim --lib
    /// --release -- --ignored --nocapture rng_speed`.
    #[test]
    #[ignore]
    fn rng_speed() {
        let mut r = SimRng::new(1, 1);
        let n = 100_000_000u64;
        let t = std::time::Instant::now();
        let mut acc = 0u64;
        for _ in 0..n {
            acc = acc.wrapping_add(r.next_u64());
        }
        let dt = t.elapsed().as_secs_f64();
        println!("next_u64: {:.2} ns/draw ({acc})", dt * 1e9 / n as f64);
        let t = std::time::Instant::now();
        let mut hits = 0u64;
        for _ in 0..n {
            hits += r.bernoulli(0.01) as u64;
        }
        let dt = t.elapsed().as_secs_f64();
        println!("bernoulli: {:.2} ns/draw ({hits})", dt * 1e9 / n as f64);
    }
}
