//! Values with units: durations, rates, sizes and probabilities.
//!
//! Each type deserialises from either a string with a unit (`"20ms"`,
//! `"10Mbit"`, `"64KiB"`, `"1%"`) or a bare TOML number in the base unit
//! (seconds, bit/s, bytes, probability 0..=1). Strings must carry a unit:
//! `rate = "100"` is far more likely a forgotten `Mbit` than 100 bit/s, so it
//! is rejected rather than guessed.
//!
//! Decimal prefixes are powers of 1000 (`KB` = 1000 bytes, `Mbit` = 10^6
//! bit/s); binary prefixes are spelled out (`KiB` = 1024 bytes). Values are
//! stored as integers (ns, bit/s, bytes) so resolved scenarios are exact and
//! compare equal across runs.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Why a value with a unit was rejected. Rendered as
/// `invalid rate "10Mbt": expected a number with unit bit/kbit/Mbit/Gbit (e.g. "10Mbit")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    what: &'static str,
    input: String,
    reason: String,
}

impl UnitError {
    fn new(what: &'static str, input: impl Into<String>, reason: impl Into<String>) -> Self {
        UnitError { what, input: input.into(), reason: reason.into() }
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} {}: {}", self.what, self.input, self.reason)
    }
}

impl std::error::Error for UnitError {}

/// A non-negative decimal split into an exact mantissa and a count of
/// fractional digits, so `"1.5"` scaled by 10^9 is exactly 1_500_000_000.
struct Decimal {
    mantissa: u128,
    frac_digits: u32,
}

/// Splits `"12.5ms"` into (`12.5`, `"ms"`). Whitespace between number and
/// unit is allowed (`"10 Mbit"`), a sign or exponent is not.
fn split_number(s: &str) -> Option<(Decimal, &str)> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1 {
        return None;
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    // 30 digits keep the mantissa far below u128::MAX even after scaling.
    if int.len() + frac.len() > 30 {
        return None;
    }
    let mantissa: u128 = format!("{int}{frac}").parse().ok()?;
    Some((Decimal { mantissa, frac_digits: frac.len() as u32 }, unit.trim_start()))
}

/// `dec * mult`, or an error when the result is fractional or overflows u64.
fn scale_exact(dec: &Decimal, mult: u64, what: &'static str, input: &str, base: &str) -> Result<u64, UnitError> {
    let scaled = dec.mantissa.checked_mul(mult as u128).ok_or_else(|| UnitError::new(what, quote(input), "is too large"))?;
    let div = 10u128.pow(dec.frac_digits);
    if scaled % div != 0 {
        return Err(UnitError::new(what, quote(input), format!("is not a whole number of {base}")));
    }
    u64::try_from(scaled / div).map_err(|_| UnitError::new(what, quote(input), "is too large"))
}

/// A bare TOML float in the base unit times `mult`, rounded to the nearest
/// integer (0.1 s is not exactly representable, so exactness can't be asked).
fn scale_float(v: f64, mult: u64, what: &'static str) -> Result<u64, UnitError> {
    if !v.is_finite() {
        return Err(UnitError::new(what, v.to_string(), "must be a finite number"));
    }
    if v < 0.0 {
        return Err(UnitError::new(what, v.to_string(), "must not be negative"));
    }
    let x = (v * mult as f64).round();
    if x >= u64::MAX as f64 {
        return Err(UnitError::new(what, v.to_string(), "is too large"));
    }
    Ok(x as u64)
}

fn scale_int(v: i64, mult: u64, what: &'static str) -> Result<u64, UnitError> {
    let v = u64::try_from(v).map_err(|_| UnitError::new(what, v.to_string(), "must not be negative"))?;
    v.checked_mul(mult).ok_or_else(|| UnitError::new(what, v.to_string(), "is too large"))
}

/// A leading minus gets its own message rather than "expected a number".
fn negative(what: &'static str, s: &str) -> Result<(), UnitError> {
    if s.trim_start().starts_with('-') {
        return Err(UnitError::new(what, quote(s), "must not be negative"));
    }
    Ok(())
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Looks `unit` up in a table of (spelling, multiplier).
fn lookup(unit: &str, table: &[(&str, u64)]) -> Option<u64> {
    table.iter().find(|(name, _)| *name == unit).map(|(_, m)| *m)
}

/// Implements `Deserialize` for a unit type from its `FromStr` and its
/// integer/float conversions, so strings and numbers are both accepted and
/// errors keep the type's own wording.
macro_rules! unit_deserialize {
    ($ty:ident, $expecting:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(|e: UnitError| E::custom(e))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        $ty::from_i64(v).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        match i64::try_from(v) {
                            Ok(v) => $ty::from_i64(v).map_err(E::custom),
                            Err(_) => Err(E::custom(format!("{v} is too large"))),
                        }
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        $ty::from_f64(v).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl Serialize for $ty {
            /// Serialised in the canonical string form so a scenario can be
            /// written back out and read again unchanged.
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

// ---------------------------------------------------------------- Duration

const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("sec", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];
const DURATION_EXPECTED: &str = "expected a number with unit ns/us/ms/s/m/h (e.g. \"20ms\", \"1.5s\")";

/// A time span or instant, in nanoseconds. `"20ms"`, `"1.5s"`, `"200us"`,
/// `"2m"`; a bare number is seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    fn from_i64(v: i64) -> Result<Self, UnitError> {
        scale_int(v, 1_000_000_000, "duration").map(Duration)
    }
    fn from_f64(v: f64) -> Result<Self, UnitError> {
        scale_float(v, 1_000_000_000, "duration").map(Duration)
    }
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        negative("duration", s)?;
        let (dec, unit) = split_number(s).ok_or_else(|| UnitError::new("duration", quote(s), DURATION_EXPECTED))?;
        if unit.is_empty() {
            return Err(UnitError::new("duration", quote(s), format!("missing unit; {DURATION_EXPECTED}")));
        }
        let mult = lookup(unit, DURATION_UNITS).ok_or_else(|| UnitError::new("duration", quote(s), DURATION_EXPECTED))?;
        scale_exact(&dec, mult, "duration", s, "nanoseconds").map(Duration)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Largest unit that represents the value exactly.
        // Minutes and hours would be exact too, but "300s" reads better in
        // an error about a 300 s experiment than "5m".
        for (unit, mult) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
            if self.0 != 0 && self.0 % mult == 0 {
                return write!(f, "{}{unit}", self.0 / mult);
            }
        }
        if self.0 == 0 {
            return f.write_str("0s");
        }
        write!(f, "{}ns", self.0)
    }
}

unit_deserialize!(Duration, "a duration such as \"20ms\" or a number of seconds");

// -------------------------------------------------------------------- Rate

const RATE_EXPECTED: &str = "expected a number with unit bit/kbit/Mbit/Gbit (e.g. \"10Mbit\")";

/// Every accepted spelling of a bit rate. Upper-case `Mbps` is the usual
/// network shorthand for megabits; lower-case `mbps` is *megabytes* in tc,
/// so it is not accepted to avoid a silent factor of 8.
fn rate_multiplier(unit: &str) -> Option<u64> {
    const PREFIXES: &[(&[&str], u64)] = &[
        (&[""], 1),
        (&["k", "K"], 1_000),
        (&["M"], 1_000_000),
        (&["G"], 1_000_000_000),
        (&["T"], 1_000_000_000_000),
    ];
    for (spellings, mult) in PREFIXES {
        for p in *spellings {
            for base in ["bit", "bps", "bit/s", "b/s"] {
                if unit == format!("{p}{base}") {
                    return Some(*mult);
                }
            }
        }
    }
    // tc spells megabits "mbit"/"gbit"/"kbit": accept those lower-case forms.
    match unit {
        "mbit" => Some(1_000_000),
        "gbit" => Some(1_000_000_000),
        "tbit" => Some(1_000_000_000_000),
        _ => None,
    }
}

/// A bit rate in bit/s. `"10Mbit"`, `"10Mbps"`, `"1Gbit"`, `"500kbit"`; a
/// bare number is bit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(u64);

impl Rate {
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn from_mbit(m: u64) -> Self {
        Rate(m * 1_000_000)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    fn from_i64(v: i64) -> Result<Self, UnitError> {
        scale_int(v, 1, "rate").map(Rate)
    }
    fn from_f64(v: f64) -> Result<Self, UnitError> {
        scale_float(v, 1, "rate").map(Rate)
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        negative("rate", s)?;
        let (dec, unit) = split_number(s).ok_or_else(|| UnitError::new("rate", quote(s), RATE_EXPECTED))?;
        if unit.is_empty() {
            return Err(UnitError::new("rate", quote(s), format!("missing unit; {RATE_EXPECTED}")));
        }
        let Some(mult) = rate_multiplier(unit) else {
            let bytes = unit.contains('B') || unit == "mbps" || unit == "kbps" || unit == "gbps";
            let reason = if bytes {
                format!("rates are in bits, not bytes; {RATE_EXPECTED}")
            } else {
                RATE_EXPECTED.to_string()
            };
            return Err(UnitError::new("rate", quote(s), reason));
        };
        scale_exact(&dec, mult, "rate", s, "bit/s").map(Rate)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, mult) in [("Tbit", 1_000_000_000_000u64), ("Gbit", 1_000_000_000), ("Mbit", 1_000_000), ("kbit", 1_000)] {
            if self.0 != 0 && self.0 % mult == 0 {
                return write!(f, "{}{unit}", self.0 / mult);
            }
        }
        write!(f, "{}bit", self.0)
    }
}

unit_deserialize!(Rate, "a rate such as \"10Mbit\" or a number of bit/s");

// -------------------------------------------------------------------- Size

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("bytes", 1),
    ("KB", 1_000),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];
const SIZE_EXPECTED: &str = "expected a number with unit B/KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024) (e.g. \"64KB\")";

/// A size in bytes. `"1500B"`, `"64KB"` (64 000), `"256KiB"` (262 144),
/// `"2MB"`; a bare number is bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(u64);

impl Size {
    pub const fn from_bytes(b: u64) -> Self {
        Size(b)
    }
    pub const fn bytes(self) -> u64 {
        self.0
    }
    fn from_i64(v: i64) -> Result<Self, UnitError> {
        scale_int(v, 1, "size").map(Size)
    }
    fn from_f64(v: f64) -> Result<Self, UnitError> {
        if v.fract() != 0.0 {
            return Err(UnitError::new("size", v.to_string(), "is not a whole number of bytes"));
        }
        scale_float(v, 1, "size").map(Size)
    }
}

impl FromStr for Size {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        negative("size", s)?;
        let (dec, unit) = split_number(s).ok_or_else(|| UnitError::new("size", quote(s), SIZE_EXPECTED))?;
        if unit.is_empty() {
            return Err(UnitError::new("size", quote(s), format!("missing unit; {SIZE_EXPECTED}")));
        }
        let Some(mult) = lookup(unit, SIZE_UNITS) else {
            // iperf's "256K" means KiB while "256KB" here means 1000s: make
            // the user pick instead of guessing.
            let reason = if matches!(unit, "K" | "k" | "M" | "G") {
                format!("ambiguous unit {unit:?}: write {unit}B (powers of 1000) or {}iB (powers of 1024)", unit.to_uppercase())
            } else if unit.ends_with("bit") || unit.ends_with("bps") {
                format!("sizes are in bytes, not bits; {SIZE_EXPECTED}")
            } else {
                SIZE_EXPECTED.to_string()
            };
            return Err(UnitError::new("size", quote(s), reason));
        };
        scale_exact(&dec, mult, "size", s, "bytes").map(Size)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, mult) in [("GB", 1_000_000_000u64), ("GiB", 1 << 30), ("MB", 1_000_000), ("MiB", 1 << 20), ("KB", 1_000), ("KiB", 1 << 10)] {
            if self.0 != 0 && self.0 % mult == 0 {
                return write!(f, "{}{unit}", self.0 / mult);
            }
        }
        write!(f, "{}B", self.0)
    }
}

unit_deserialize!(Size, "a size such as \"64KB\" or a number of bytes");

// ------------------------------------------------------------- Probability

const PROB_EXPECTED: &str = "expected a probability between 0 and 1 or a percentage (e.g. 0.01 or \"1%\")";

/// A probability in [0, 1]: `0.01`, `"0.01"` or `"1%"`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Probability(f64);

impl Probability {
    pub const ZERO: Probability = Probability(0.0);
    /// `None` unless `p` is within [0, 1].
    pub fn new(p: f64) -> Option<Self> {
        (0.0..=1.0).contains(&p).then_some(Probability(p))
    }
    pub fn value(self) -> f64 {
        self.0
    }
    fn from_i64(v: i64) -> Result<Self, UnitError> {
        match v {
            0 | 1 => Ok(Probability(v as f64)),
            _ => Err(UnitError::new("probability", v.to_string(), PROB_EXPECTED)),
        }
    }
    fn from_f64(v: f64) -> Result<Self, UnitError> {
        Probability::new(v).ok_or_else(|| UnitError::new("probability", v.to_string(), PROB_EXPECTED))
    }
}

impl FromStr for Probability {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let bad = || UnitError::new("probability", quote(s), PROB_EXPECTED);
        let t = s.trim();
        let (num, percent) = match t.strip_suffix('%') {
            Some(n) => (n.trim_end(), true),
            None => (t, false),
        };
        // Only plain decimals: "inf", "nan" and exponents are not probabilities users write.
        if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Err(bad());
        }
        let v: f64 = num.parse().map_err(|_| bad())?;
        let p = if percent { v / 100.0 } else { v };
        Probability::new(p).ok_or_else(bad)
    }
}

impl fmt::Display for Probability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'de> Deserialize<'de> for Probability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Probability;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(PROB_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Probability, E> {
                v.parse().map_err(|e: UnitError| E::custom(e))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Probability, E> {
                Probability::from_i64(v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Probability, E> {
                Probability::from_i64(i64::try_from(v).unwrap_or(i64::MAX)).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Probability, E> {
                Probability::from_f64(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Probability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!("20ms".parse::<Duration>().unwrap().as_nanos(), 20_000_000);
        assert_eq!("1.5s".parse::<Duration>().unwrap().as_nanos(), 1_500_000_000);
        assert_eq!("200us".parse::<Duration>().unwrap().as_nanos(), 200_000);
        assert_eq!("2m".parse::<Duration>().unwrap().as_nanos(), 120_000_000_000);
        assert_eq!("10 ms".parse::<Duration>().unwrap().as_nanos(), 10_000_000);
        assert_eq!("0s".parse::<Duration>().unwrap().as_nanos(), 0);
        assert_eq!(Duration::from_f64(0.1).unwrap().as_nanos(), 100_000_000);
        assert_eq!(Duration::from_i64(30).unwrap().as_nanos(), 30_000_000_000);
    }

    #[test]
    fn duration_errors() {
        let e = "20 msec".parse::<Duration>().unwrap_err().to_string();
        assert_eq!(e, "invalid duration \"20 msec\": expected a number with unit ns/us/ms/s/m/h (e.g. \"20ms\", \"1.5s\")");
        assert!("20".parse::<Duration>().unwrap_err().to_string().contains("missing unit"));
        assert!("-1s".parse::<Duration>().is_err());
        assert!("1.5ns".parse::<Duration>().unwrap_err().to_string().contains("whole number of nanoseconds"));
        assert!(Duration::from_i64(-3).unwrap_err().to_string().contains("negative"));
        assert!("".parse::<Duration>().is_err());
        assert!(".5s".parse::<Duration>().is_err());
        assert!("1..5s".parse::<Duration>().is_err());
    }

    #[test]
    fn rates() {
        for (s, v) in [
            ("10Mbit", 10_000_000),
            ("10Mbps", 10_000_000),
            ("10mbit", 10_000_000),
            ("1Gbit", 1_000_000_000),
            ("500kbit", 500_000),
            ("500Kbps", 500_000),
            ("1.5Mbit", 1_500_000),
            ("64bit", 64),
            ("100Mbit/s", 100_000_000),
        ] {
            assert_eq!(s.parse::<Rate>().unwrap().bps(), v, "{s}");
        }
        assert_eq!(Rate::from_f64(1e6).unwrap().bps(), 1_000_000);
    }

    #[test]
    fn rate_errors() {
        assert_eq!(
            "10Mbt".parse::<Rate>().unwrap_err().to_string(),
            "invalid rate \"10Mbt\": expected a number with unit bit/kbit/Mbit/Gbit (e.g. \"10Mbit\")"
        );
        assert!("10MB".parse::<Rate>().unwrap_err().to_string().contains("bits, not bytes"));
        assert!("10mbps".parse::<Rate>().unwrap_err().to_string().contains("bits, not bytes"));
        assert!("10".parse::<Rate>().unwrap_err().to_string().contains("missing unit"));
        assert!(Rate::from_f64(-1.0).is_err());
        assert!(Rate::from_f64(f64::NAN).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!("64KB".parse::<Size>().unwrap().bytes(), 64_000);
        assert_eq!("64KiB".parse::<Size>().unwrap().bytes(), 65_536);
        assert_eq!("1500B".parse::<Size>().unwrap().bytes(), 1500);
        assert_eq!("2MB".parse::<Size>().unwrap().bytes(), 2_000_000);
        assert_eq!("1.5KB".parse::<Size>().unwrap().bytes(), 1500);
        assert_eq!(Size::from_i64(85_300).unwrap().bytes(), 85_300);
        assert!("1.5B".parse::<Size>().is_err());
        assert!("256K".parse::<Size>().unwrap_err().to_string().contains("ambiguous"));
        assert!("8Mbit".parse::<Size>().unwrap_err().to_string().contains("bytes, not bits"));
        assert!(Size::from_f64(1.5).is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!("1%".parse::<Probability>().unwrap().value(), 0.01);
        assert_eq!("0.25".parse::<Probability>().unwrap().value(), 0.25);
        assert_eq!(Probability::from_f64(0.01).unwrap().value(), 0.01);
        assert!("150%".parse::<Probability>().is_err());
        assert!(Probability::from_f64(1.5).is_err());
        assert!("nan".parse::<Probability>().is_err());
        assert!(Probability::from_i64(2).is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["20ms", "3600s", "10Mbit", "64KB", "64KiB", "1500B", "7ns"] {
            let shown = match s {
                _ if s.ends_with("bit") => s.parse::<Rate>().unwrap().to_string(),
                _ if s.ends_with('B') => s.parse::<Size>().unwrap().to_string(),
                _ => s.parse::<Duration>().unwrap().to_string(),
            };
            assert_eq!(shown, s);
        }
    }

    proptest::proptest! {
        #[test]
        fn duration_display_parses_back(ns in 0u64..u64::MAX / 2) {
            let d = Duration::from_nanos(ns);
            proptest::prop_assert_eq!(d.to_string().parse::<Duration>().unwrap(), d);
        }

        #[test]
        fn rate_display_parses_back(bps in 0u64..u64::MAX / 2) {
            let r = Rate::from_bps(bps);
            proptest::prop_assert_eq!(r.to_string().parse::<Rate>().unwrap(), r);
        }

        #[test]
        fn size_display_parses_back(b in 0u64..u64::MAX / 2) {
            let s = Size::from_bytes(b);
            proptest::prop_assert_eq!(s.to_string().parse::<Size>().unwrap(), s);
        }

        #[test]
        fn garbage_never_panics(s in ".{0,12}") {
            let _ = s.parse::<Duration>();
            let _ = s.parse::<Rate>();
            let _ = s.parse::<Size>();
            let _ = s.parse::<Probability>();
        }
    }
}
