//! Whole-nanosecond time arithmetic for the link model.
//!
//! A serialiser's timeline is an exact time `ns + rem / rate`: integer
//! nanoseconds plus a remainder in units of `1/rate` ns, so that a long
//! busy period accumulates no rounding drift.

use std::time::Duration;

pub(super) const NS_PER_SEC: u64 = 1_000_000_000;

/// A duration in whole nanoseconds, saturating.
pub(super) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// An exact time `ns + rem/rate` rounded up to whole nanoseconds.
#[inline]
pub(super) fn ceil_ns(ns: u64, rem: u64) -> u64 {
    ns.saturating_add(u64::from(rem != 0))
}

/// Advances the exact time `(ns, rem)` by the serialisation time of `bits`
/// at `rate` (> 0). The common case stays in 64-bit arithmetic; huge
/// packets at tiny rates fall back to 128 bits and saturate.
#[inline]
pub(super) fn add_bits(ns: u64, rem: u64, bits: u64, rate: u64) -> (u64, u64) {
    if rate == 0 {
        return (ns, 0);
    }
    match bits.checked_mul(NS_PER_SEC).and_then(|b| b.checked_add(rem)) {
        Some(num) => (ns.saturating_add(num / rate), num % rate),
        None => div_128(ns, u128::from(bits) * u128::from(NS_PER_SEC) + u128::from(rem), rate),
    }
}

/// `ns + num / rate`, remainder `num % rate`, saturating.
pub(super) fn div_128(ns: u64, num: u128, rate: u64) -> (u64, u64) {
    let r = u128::from(rate.max(1));
    let q = u64::try_from(num / r).unwrap_or(u64::MAX);
    (ns.saturating_add(q), (num % r) as u64)
}
