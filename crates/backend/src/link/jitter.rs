//! Jitter: a random extra propagation delay drawn per packet.

use std::time::Duration;

use super::time::duration_ns;
use crate::rng::SimRng;

/// Random extra propagation delay per packet. Every distribution is
/// non-negative, so no packet arrives before `end + delay`. A zero scale
/// (`max`, `sigma`, `mean`) means no jitter and costs no draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Jitter {
    #[default]
    None,
    /// `delay + U[0, max]`, uniform over whole nanoseconds, `max` inclusive
    /// (one draw).
    Uniform { max: Duration },
    /// `delay + |N(0, sigma)|`: half-normal, mean `sigma * sqrt(2/pi)`,
    /// standard deviation `sigma * sqrt(1 - 2/pi)` (two draws, Box-Muller).
    Normal { sigma: Duration },
    /// `delay + X`, X Pareto (type I) with shape [`PARETO_SHAPE`] and the
    /// given mean: `X >= mean * (shape - 1) / shape`, heavy-tailed above
    /// (one draw, by inversion).
    Pareto { mean: Duration },
}

/// Shape (tail index) of [`Jitter::Pareto`]: 3 gives a finite variance
/// (standard deviation `mean / sqrt(3)`) with a visibly heavy tail.
pub const PARETO_SHAPE: f64 = 3.0;

impl Jitter {
    /// The same distribution with another scale (bound, sigma or mean);
    /// `None` becomes `Uniform`. For changing a link's jitter while keeping
    /// its distribution.
    pub fn with_scale(self, scale: Duration) -> Jitter {
        match self {
            Jitter::None | Jitter::Uniform { .. } => Jitter::Uniform { max: scale },
            Jitter::Normal { .. } => Jitter::Normal { sigma: scale },
            Jitter::Pareto { .. } => Jitter::Pareto { mean: scale },
        }
    }

    /// The scale in whole nanoseconds (0 for `None`).
    pub fn scale_ns(self) -> u64 {
        match self {
            Jitter::None => 0,
            Jitter::Uniform { max: d } | Jitter::Normal { sigma: d } | Jitter::Pareto { mean: d } => duration_ns(d),
        }
    }

    /// One sample in nanoseconds, for a scale of `scale_ns` (> 0, the
    /// cached [`Jitter::scale_ns`]).
    #[inline]
    pub(super) fn sample(self, scale_ns: u64, rng: &mut SimRng) -> u64 {
        match self {
            Jitter::None => 0,
            Jitter::Uniform { .. } => rng.up_to(scale_ns),
            Jitter::Normal { .. } => {
                // Box-Muller: sqrt(-2 ln u1) * cos(2 pi u2) is N(0, 1);
                // u1 in (0, 1] keeps the logarithm finite.
                let u1 = 1.0 - rng.uniform();
                let u2 = rng.uniform();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                to_ns(scale_ns as f64 * z.abs())
            }
            Jitter::Pareto { .. } => {
                // Inversion: x_m * U^(-1/shape), U in (0, 1], has mean
                // x_m * shape / (shape - 1) = the scale.
                let x_m = scale_ns as f64 * (PARETO_SHAPE - 1.0) / PARETO_SHAPE;
                let u = 1.0 - rng.uniform();
                to_ns(x_m * u.powf(-1.0 / PARETO_SHAPE))
            }
        }
    }
}

/// Non-negative float nanoseconds to whole nanoseconds, rounded, saturating
/// (`as` maps NaN to 0 and anything too large to `u64::MAX`).
#[inline]
fn to_ns(x: f64) -> u64 {
    (x + 0.5) as u64
}
