//! Shared pieces of the coupled (multipath) algorithms: the paths in
//! floating-point units (windows in segments, RTTs in seconds), and a
//! fractional-byte accumulator for increases smaller than a byte.

use super::{AckEvent, CcState, Coupling};

/// One path as the formulas use it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct P {
    /// Window, segments.
    pub w: f64,
    /// Smoothed RTT, seconds.
    pub rtt: f64,
    /// Bytes between its last two losses (OLIA's l_r).
    pub l: f64,
}

/// The coupled view, when every path has an RTT sample: (paths, my index).
/// Paths without a sample yet are left out (they carry next to nothing);
/// None when this subflow itself has none or there is no coupling.
pub fn paths(ev: &AckEvent<'_>, s: &CcState, buf: &mut Vec<P>) -> Option<usize> {
    let c: &Coupling = ev.coupling?;
    buf.clear();
    let mut me = None;
    for (k, p) in c.paths.iter().enumerate() {
        let Some(rtt) = (if k == c.me { ev.srtt.or(p.srtt) } else { p.srtt }) else {
            if k == c.me {
                return None;
            }
            continue;
        };
        let (cwnd, l) = if k == c.me { (s.cwnd, (s.acked_since_loss.max(s.acked_last_interval)) as f64) } else { (p.cwnd, p.loss_interval as f64) };
        if k == c.me {
            me = Some(buf.len());
        }
        buf.push(P { w: cwnd as f64 / p.mss.max(1) as f64, rtt: rtt.as_secs_f64().max(1e-6), l });
    }
    me
}

/// Adds `inc` bytes (fractional) to cwnd through `acc`.
pub fn grow(s: &mut CcState, acc: &mut f64, inc: f64) {
    *acc += inc.max(0.0);
    // A hair of slack so that exact values (250.0 computed as 249.99..)
    // are not lost to rounding.
    if *acc + 1e-9 >= 1.0 {
        let whole = (*acc + 1e-9).floor();
        *acc -= whole;
        s.cwnd += whole as u64;
    }
}
