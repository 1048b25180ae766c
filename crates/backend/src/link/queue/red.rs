//! Random Early Detection (Floyd & Jacobson 1993) on a byte-counted queue.

use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::{Probability, Size};

use super::discipline::{Backlog, QueueDiscipline, EMULATOR};
use crate::rng::SimRng;

/// Packet size assumed by RED's idle-time correction: an idle period is
/// treated as if `idle / tx_time(500 B)` empty-queue arrivals had happened
/// (ns-2's `mean_pktsize` default).
const RED_TYPICAL_PACKET_BYTES: f64 = 500.0;

/// RED's parameters and running state. Thresholds and the average are in
/// bytes; the drop probability is per packet (not scaled by packet size,
/// unlike ns-2's `bytes_` option), so small ACKs and full segments are
/// treated alike. `weight` is the EWMA gain w_q, `limit_bytes` a hard
/// capacity, `gentle` ramps the drop probability from `max_p` to 1 between
/// `max_th` and `2 * max_th` instead of jumping to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::link) struct Red {
    min_th: u64,
    max_th: u64,
    limit_bytes: u64,
    max_p: f64,
    weight: f64,
    gentle: bool,
    /// The average queue size in bytes.
    avg: f64,
    /// Packets since the last drop while in the ramp (-1 below min_th).
    count: i64,
}

impl QueueDiscipline for Red {
    const ABOUT: About = About {
        name: "red",
        params: &["min_th", "max_th", "max_p", "limit", "weight", "gentle"],
        what: "Random Early Detection (Floyd & Jacobson), byte thresholds like tc-red",
        kernel: EMULATOR,
    };

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let min_th: Option<Size> = f.get("min_th")?;
        let max_th: Option<Size> = f.get("max_th")?;
        let max_p: Option<Probability> = f.get("max_p")?;
        let limit: Option<Size> = f.get("limit")?;
        let weight: Option<f64> = f.get("weight")?;
        let gentle = f.get_or("gentle", false)?;
        f.finish()?;
        let need = |v: Option<Size>, name: &str| v.ok_or_else(|| f.missing(name));
        let (min_th, max_th) = (need(min_th, "min_th")?, need(max_th, "max_th")?);
        let max_p = max_p.ok_or_else(|| f.missing("max_p"))?;
        let limit = need(limit, "limit")?;
        if min_th.bytes() == 0 || min_th >= max_th {
            return Err(f.error(format!("RED needs 0 < min_th < max_th (min_th = {min_th}, max_th = {max_th})")));
        }
        if max_th > limit {
            return Err(f.error(format!("RED needs max_th <= limit (max_th = {max_th}, limit = {limit})")));
        }
        if max_p.value() == 0.0 {
            return Err(f.error("RED needs max_p > 0"));
        }
        // Floyd's recommended EWMA weight.
        let weight = weight.unwrap_or(0.002);
        if !(weight > 0.0 && weight <= 1.0) {
            return Err(f.error(format!("RED weight must be in (0, 1], got {weight}")));
        }
        Ok(Red::new(min_th.bytes(), max_th.bytes(), limit.bytes(), max_p.value(), weight, gentle))
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![
            ("min_th_bytes", self.min_th.into()),
            ("max_th_bytes", self.max_th.into()),
            ("limit_bytes", self.limit_bytes.into()),
            ("max_p", self.max_p.into()),
            ("weight", self.weight.into()),
            ("gentle", self.gentle.into()),
        ]
    }

    /// The early-drop decision first (it may draw), then the hard limit.
    #[inline]
    fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool {
        let early = self.early_drop(backlog, now, rng);
        !early && backlog.bytes.saturating_add(u64::from(size)) <= self.limit_bytes
    }
}

impl Red {
    /// RED with these parameters and an empty history (no parameter is
    /// checked: the link clamps probabilities into [0, 1]).
    pub(in crate::link) fn new(min_th: u64, max_th: u64, limit_bytes: u64, max_p: f64, weight: f64, gentle: bool) -> Self {
        Red { min_th, max_th, limit_bytes, max_p, weight, gentle, avg: 0.0, count: -1 }
    }

    /// The average queue size in bytes (for tests).
    #[cfg(test)]
    pub(in crate::link) fn average(&self) -> f64 {
        self.avg
    }

    /// RED's early-drop decision (Floyd & Jacobson 1993, section 4).
    /// Inline so that it is compiled into the caller's crate with the rest
    /// of `offer`, as the generic link code is.
    #[inline]
    fn early_drop(&mut self, backlog: Backlog, now: u64, rng: &mut SimRng) -> bool {
        let w = unit(self.weight);
        if backlog.packets == 0 {
            // Idle-period correction: without it, the average would stay
            // at its last busy value through an idle period and the first
            // packets after it would be dropped for congestion long gone.
            let idle = now.saturating_sub(backlog.idle_since) as f64;
            let m = if backlog.rate_bps == 0 {
                if idle > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                }
            } else {
                idle / (RED_TYPICAL_PACKET_BYTES * 8.0 * 1e9 / backlog.rate_bps as f64)
            };
            self.avg *= (1.0 - w).powf(m);
        }
        let q = backlog.bytes as f64;
        self.avg = (1.0 - w) * self.avg + w * q;
        let avg = self.avg;
        let (min, max) = (self.min_th as f64, self.max_th as f64);
        let max_p = unit(self.max_p);
        let pb = if avg < min {
            self.count = -1;
            return false;
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if self.gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            self.count = 0;
            return true;
        };
        self.count += 1;
        // Spread drops evenly: the probability grows with the number of
        // packets since the last drop (pa = pb / (1 - count * pb)).
        let c = self.count as f64 * pb;
        let pa = if c >= 1.0 { 1.0 } else { pb / (1.0 - c) };
        if rng.bernoulli(pa) {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

/// Clamps a probability-like parameter into [0, 1]; NaN becomes 0.
fn unit(x: f64) -> f64 {
    if x > 0.0 {
        x.min(1.0)
    } else {
        0.0
    }
}
