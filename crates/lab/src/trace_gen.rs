//! Synthetic cellular delivery traces for trace-driven links (`mplab
//! trace-gen`), in Mahimahi's format: one line per 1500-byte delivery
//! opportunity, the millisecond it occurs.
//!
//! The capacity follows a finite-state Markov channel (FSMC): H. S. Wang
//! and N. Moayeri, "Finite-state Markov channel — a useful model for radio
//! communication channels", IEEE Trans. Veh. Technol. 44(1), 1995. The
//! fading channel's quality is split into a few levels; every step of
//! `STEP_MS` the state moves at most to an adjacent level (slow fading
//! changes the channel gradually). On top of it, outages (tunnels,
//! handovers) come and go as in a Gilbert-Elliott two-state chain (E. N.
//! Gilbert, "Capacity of a burst-noise channel", Bell Syst. Tech. J. 39,
//! 1960): a good/bad chain with per-step transition probabilities, zero
//! capacity while bad. The series is finally scaled so its mean over the
//! whole trace is the requested rate, and turned into opportunities by
//! accumulating bytes millisecond by millisecond.
//!
//! Deterministic: the same profile, mean, duration and seed give the same
//! file (the simulator's generator, `SimRng`, seeded from `seed`).

use mplab_backend::rng::SimRng;

/// How often the channel state may change.
pub const STEP_MS: u64 = 100;
const OPPORTUNITY_BYTES: f64 = 1500.0;

/// The channel's character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// A moving user: deep fades, fast level changes, outages of a few
    /// seconds every minute or so.
    Commuter,
    /// A parked user: small variations around the mean, no outages.
    Steady,
}

struct Chain {
    /// Capacity of each level, relative (scaled to the mean afterwards).
    levels: &'static [f64],
    /// Per-step probability of moving one level up, and one level down.
    p_up: f64,
    p_down: f64,
    /// Per-step probability of entering an outage, and of leaving one.
    p_outage: f64,
    p_recover: f64,
}

impl Profile {
    fn chain(self) -> Chain {
        match self {
            Profile::Commuter => Chain { levels: &[0.05, 0.2, 0.45, 0.8, 1.2, 1.7, 2.3], p_up: 0.15, p_down: 0.15, p_outage: 0.002, p_recover: 0.05 },
            Profile::Steady => Chain { levels: &[0.85, 0.95, 1.05, 1.15], p_up: 0.05, p_down: 0.05, p_outage: 0.0, p_recover: 1.0 },
        }
    }
}

/// The opportunities (ms, non-decreasing, from 1) of a `duration_ms` trace
/// whose mean IP capacity is `mean_bps`.
pub fn generate(profile: Profile, mean_bps: u64, duration_ms: u64, seed: u64) -> Vec<u64> {
    let c = profile.chain();
    let mut rng = SimRng::new(seed, 0x7ace);
    let steps = duration_ms.div_ceil(STEP_MS).max(1) as usize;
    let mut level = c.levels.len() / 2;
    let mut outage = false;
    let mut rel = Vec::with_capacity(steps);
    for _ in 0..steps {
        let u = rng.uniform();
        if u < c.p_up && level + 1 < c.levels.len() {
            level += 1;
        } else if u >= 1.0 - c.p_down && level > 0 {
            level -= 1;
        }
        let v = rng.uniform();
        outage = if outage { v >= c.p_recover } else { v < c.p_outage };
        rel.push(if outage { 0.0 } else { c.levels[level] });
    }
    let mean_rel = rel.iter().sum::<f64>() / rel.len() as f64;
    let scale = if mean_rel > 0.0 { mean_bps as f64 / mean_rel } else { 0.0 };
    let mut out = Vec::new();
    let mut credit = 0.0;
    for ms in 1..=duration_ms {
        let bps = rel[((ms - 1) / STEP_MS) as usize] * scale;
        credit += bps / 8.0 / 1000.0;
        while credit >= OPPORTUNITY_BYTES {
            out.push(ms);
            credit -= OPPORTUNITY_BYTES;
        }
    }
    if out.is_empty() {
        // A trace needs one opportunity; its last millisecond is its period.
        out.push(duration_ms.max(1));
    }
    out
}

/// The trace as file text.
pub fn render(ms: &[u64]) -> String {
    let mut s = String::with_capacity(ms.len() * 6);
    for m in ms {
        s.push_str(&m.to_string());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_the_mean_and_is_deterministic() {
        for p in [Profile::Commuter, Profile::Steady] {
            let a = generate(p, 10_000_000, 60_000, 1);
            assert_eq!(a, generate(p, 10_000_000, 60_000, 1));
            assert_ne!(a, generate(p, 10_000_000, 60_000, 2));
            let mean = a.len() as f64 * 1500.0 * 8.0 / 60.0;
            assert!((mean - 10e6).abs() < 0.001 * 10e6, "{p:?}: {mean}");
            assert!(a.windows(2).all(|w| w[0] <= w[1]) && a[0] >= 1);
        }
    }
}
