//! Summarising a link capacity trace (`mplab trace-link`): the mean
//! capacity, its distribution over short windows, and the outages, of a
//! file a link's `rate` may name (docs/mobile.md, "Looking at a trace").
//!
//! Two kinds of file, read by the scenario crate's parsers (the same
//! checks and `file:line` errors as in a scenario):
//!
//! * **Mahimahi delivery traces** (the default): one line per delivery
//!   opportunity, the millisecond it occurs. The trace loops, so one
//!   period (its last millisecond) is summarised. Each opportunity counts
//!   [`IP_BYTES_PER_OPPORTUNITY`] = 1500 IP bytes, as the link model does
//!   (mm-link's 1504-byte opportunities less the 4-byte TUN header,
//!   crates/backend/src/link/trace.rs), so the mean is the IP capacity
//!   mplab reports for a traced link.
//! * **Steps CSVs** (`time,rate` lines): a file whose name ends in `.csv`,
//!   or any file with `--steps`. The last rate holds for ever, so the
//!   summary covers up to the last step's time plus one window unless
//!   `--duration` says how long.
//!
//! Window `k` of a trace holds the opportunities at milliseconds
//! `(k·w, (k+1)·w]` (an opportunity at millisecond `t` carries the
//! capacity of the millisecond that ends at `t`; one at 0 counts in window
//! 0); a steps window is `[k·w, (k+1)·w)`. The last window is shorter when
//! `w` does not divide the duration, and its capacity is over its own
//! length. Percentiles are of the per-window capacities, each window
//! counting once, interpolated linearly between ranks.
//!
//! An outage is a gap between consecutive opportunities longer than the
//! threshold (default 200 ms), the trace looping: the time from 0 to the
//! first opportunity is the gap after the previous period's last one. Its
//! length is the gap. The gaps of one period add up to the period, so the
//! fraction of time in outage is their total over the period. A steps file
//! has no outages (a zero rate is refused; a dead link is a `down` event).

use std::path::Path;

use mplab_backend::link::{OPPORTUNITY_BYTES, TUN_HEADER_BYTES};
use mplab_scenario::network::RateStep;
use serde::Serialize;

/// IP bytes a delivery opportunity carries.
pub const IP_BYTES_PER_OPPORTUNITY: u64 = (OPPORTUNITY_BYTES - TUN_HEADER_BYTES) as u64;
pub const DEFAULT_WINDOW_MS: u64 = 100;
pub const DEFAULT_OUTAGE_MS: u64 = 200;
/// Outages listed one by one (the rest only count).
pub const LISTED_OUTAGES: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Mahimahi,
    Steps,
}

impl Kind {
    /// Steps when asked (`--steps`) or when the name ends in `.csv`; a
    /// Mahimahi trace otherwise.
    pub fn of(path: &Path, steps: bool) -> Kind {
        if steps || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) { Kind::Steps } else { Kind::Mahimahi }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Window of the per-window capacity, ms (at least 1).
    pub window_ms: u64,
    /// A gap between opportunities longer than this is an outage, ms.
    pub outage_ms: u64,
    /// Read the file as a steps CSV whatever its name.
    pub steps: bool,
    /// How much of a steps file to summarise, ms (refused for a trace,
    /// whose period is its last line).
    pub duration_ms: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options { window_ms: DEFAULT_WINDOW_MS, outage_ms: DEFAULT_OUTAGE_MS, steps: false, duration_ms: None }
    }
}

/// Per-window capacity, Mbit/s.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentiles {
    pub min: f64,
    pub p5: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub p95: f64,
    pub max: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outage {
    /// The opportunity before the gap (0 for a trace that starts with one).
    pub start_s: f64,
    pub length_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outages {
    /// Gaps longer than this are outages.
    pub threshold_ms: u64,
    pub count: usize,
    pub total_s: f64,
    pub longest_s: f64,
    /// Of the duration.
    pub fraction: f64,
    /// The first [`LISTED_OUTAGES`], in time order.
    pub first: Vec<Outage>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub file: String,
    pub kind: Kind,
    /// One period of a trace (its last millisecond); the span summarised
    /// of a steps file.
    pub duration_s: f64,
    /// Delivery opportunities in one period (none for a steps file).
    pub opportunities: Option<u64>,
    /// Steps in the file (none for a trace).
    pub steps: Option<usize>,
    /// Mean IP capacity, Mbit/s: opportunities × 1500 B × 8 / duration
    /// for a trace.
    pub mean_mbps: f64,
    pub window_ms: u64,
    pub percentiles: Percentiles,
    pub outages: Outages,
    /// Capacity of window k (from k × window_ms), Mbit/s.
    pub windows_mbps: Vec<f64>,
}

/// Reads and summarises the file at `path`; the error names the file and,
/// for a bad line, its number.
pub fn summarise(path: &Path, opt: &Options) -> Result<Report, String> {
    if opt.window_ms == 0 {
        return Err("--window must be at least 1ms".into());
    }
    let file = path.display().to_string();
    match Kind::of(path, opt.steps) {
        Kind::Mahimahi => {
            if opt.duration_ms.is_some() {
                return Err(format!("{file}: --duration applies to steps files (a trace's period is its last line; --steps reads a file as steps)"));
            }
            let t = mplab_scenario::read_trace_file(path)?;
            Ok(of_trace(file, &t.ms, opt))
        }
        Kind::Steps => {
            let s = mplab_scenario::read_steps_file(path)?;
            let last_ms = s.last().map_or(0, |l| l.at_ns / 1_000_000);
            let duration_ms = opt.duration_ms.unwrap_or(last_ms + opt.window_ms);
            if duration_ms == 0 {
                return Err(format!("{file}: --duration must be at least 1ms"));
            }
            Ok(of_steps(file, &s, duration_ms, opt))
        }
    }
}

/// The summary of one period of a trace: `ms` non-decreasing, the last
/// one > 0 (as the parser guarantees).
pub fn of_trace(file: String, ms: &[u64], opt: &Options) -> Report {
    let w = opt.window_ms;
    let period = ms.last().copied().unwrap_or(1).max(1);
    let n_win = period.div_ceil(w) as usize;
    let mut counts = vec![0u64; n_win];
    for &t in ms {
        counts[(t.saturating_sub(1) / w) as usize] += 1;
    }
    let bits = (IP_BYTES_PER_OPPORTUNITY * 8) as f64;
    let windows: Vec<f64> = counts.iter().enumerate().map(|(k, &c)| c as f64 * bits / (win_len(k, w, period) as f64 * 1000.0)).collect();
    let mut gaps = Vec::new();
    let mut prev = 0;
    for &t in ms {
        if t - prev > opt.outage_ms {
            gaps.push((prev, t - prev));
        }
        prev = t;
    }
    Report {
        file,
        kind: Kind::Mahimahi,
        duration_s: period as f64 / 1e3,
        opportunities: Some(ms.len() as u64),
        steps: None,
        mean_mbps: ms.len() as f64 * bits / (period as f64 * 1000.0),
        window_ms: w,
        percentiles: percentiles(&windows),
        outages: outages(&gaps, opt.outage_ms, period),
        windows_mbps: windows,
    }
}

/// The summary of `[0, duration_ms)` of a steps file (the first step at 0,
/// times increasing, as the parser guarantees).
pub fn of_steps(file: String, steps: &[RateStep], duration_ms: u64, opt: &Options) -> Report {
    let w = opt.window_ms;
    // Bits sent from 0 to each step's time, then to any time.
    let mut cum = Vec::with_capacity(steps.len());
    let mut acc = 0.0;
    for (i, s) in steps.iter().enumerate() {
        if i > 0 {
            let p = &steps[i - 1];
            acc += p.rate_bps as f64 * (s.at_ns - p.at_ns) as f64 / 1e9;
        }
        cum.push(acc);
    }
    let bits_to = |ms: u64| -> f64 {
        let ns = ms * 1_000_000;
        let j = steps.partition_point(|s| s.at_ns <= ns).saturating_sub(1);
        steps.get(j).map_or(0.0, |s| cum[j] + s.rate_bps as f64 * (ns - s.at_ns) as f64 / 1e9)
    };
    let n_win = duration_ms.div_ceil(w) as usize;
    let windows: Vec<f64> = (0..n_win).map(|k| (bits_to((k as u64 * w + w).min(duration_ms)) - bits_to(k as u64 * w)) / (win_len(k, w, duration_ms) as f64 * 1000.0)).collect();
    Report {
        file,
        kind: Kind::Steps,
        duration_s: duration_ms as f64 / 1e3,
        opportunities: None,
        steps: Some(steps.len()),
        mean_mbps: bits_to(duration_ms) / (duration_ms as f64 * 1000.0),
        window_ms: w,
        percentiles: percentiles(&windows),
        outages: outages(&[], opt.outage_ms, duration_ms),
        windows_mbps: windows,
    }
}

/// Length of window `k`, ms: `w`, or what is left of `total`.
fn win_len(k: usize, w: u64, total: u64) -> u64 {
    (k as u64 * w + w).min(total) - k as u64 * w
}

/// The `q` quantile of sorted values, linear between ranks.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn percentiles(windows: &[f64]) -> Percentiles {
    let mut v = windows.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |x| quantile(&v, x);
    Percentiles { min: q(0.0), p5: q(0.05), p25: q(0.25), median: q(0.5), p75: q(0.75), p95: q(0.95), max: q(1.0) }
}

/// Outages from the gaps (start, length in ms) of a `total_ms` span.
fn outages(gaps: &[(u64, u64)], threshold_ms: u64, total_ms: u64) -> Outages {
    let total: u64 = gaps.iter().map(|g| g.1).sum();
    Outages {
        threshold_ms,
        count: gaps.len(),
        total_s: total as f64 / 1e3,
        longest_s: gaps.iter().map(|g| g.1).max().unwrap_or(0) as f64 / 1e3,
        fraction: total as f64 / total_ms.max(1) as f64,
        first: gaps.iter().take(LISTED_OUTAGES).map(|&(s, l)| Outage { start_s: s as f64 / 1e3, length_s: l as f64 / 1e3 }).collect(),
    }
}

/// The report as a human-readable table.
pub fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = match r.kind {
        Kind::Mahimahi => writeln!(s, "{}: Mahimahi delivery trace (looped)", r.file),
        Kind::Steps => writeln!(s, "{}: steps file, {} steps", r.file, r.steps.unwrap_or(0)),
    };
    let _ = match (r.kind, r.opportunities) {
        (Kind::Mahimahi, Some(n)) => writeln!(s, "  period      {:.3} s, {n} opportunities of {IP_BYTES_PER_OPPORTUNITY} IP bytes", r.duration_s),
        _ => writeln!(s, "  summarised  0 to {:.3} s (the last rate holds for ever; --duration)", r.duration_s),
    };
    let _ = writeln!(s, "  mean        {:.3} Mbit/s", r.mean_mbps);
    let p = &r.percentiles;
    let _ = writeln!(s, "  per {} ms window ({} windows), Mbit/s:", r.window_ms, r.windows_mbps.len());
    let _ = writeln!(s, "    {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}", "min", "p5", "p25", "median", "p75", "p95", "max");
    let _ = writeln!(s, "    {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}", p.min, p.p5, p.p25, p.median, p.p75, p.p95, p.max);
    let o = &r.outages;
    if r.kind == Kind::Steps {
        let _ = writeln!(s, "  outages     none (a steps file's rates are all > 0)");
        return s;
    }
    if o.count == 0 {
        let _ = writeln!(s, "  outages     none (no gap of more than {} ms between opportunities)", o.threshold_ms);
    } else {
        let _ = writeln!(s, "  outages     {} gap{} of more than {} ms between opportunities", o.count, if o.count == 1 { "" } else { "s" }, o.threshold_ms);
        let _ = writeln!(s, "              {:.3} s in all ({:.1} % of the time), longest {:.3} s", o.total_s, o.fraction * 100.0, o.longest_s);
        for g in &o.first {
            let _ = writeln!(s, "              at {:>8.3} s for {:.3} s", g.start_s, g.length_s);
        }
        if o.count > o.first.len() {
            let _ = writeln!(s, "              ... {} more (--json lists the first {LISTED_OUTAGES} too)", o.count - o.first.len());
        }
    }
    s
}

/// Capacity over time, per window, with the mean: a figure for
/// [`crate::plot::write`].
pub fn figure(r: &Report) -> crate::figures::Figure {
    use crate::plot::{LinePlot, Plot, Series};
    let w = r.window_ms as f64 / 1e3;
    // A step line: each window's capacity from its start to the next's.
    let mut points: Vec<(f64, f64)> = r.windows_mbps.iter().enumerate().map(|(k, &c)| (k as f64 * w, c)).collect();
    if let Some(&last) = r.windows_mbps.last() {
        points.push((r.duration_s, last));
    }
    let name = Path::new(&r.file).file_stem().map_or("trace".into(), |s| s.to_string_lossy().into_owned());
    let series = vec![
        Series { name: format!("per {} ms", r.window_ms), points, step: true, ..Default::default() },
        Series { name: format!("mean {:.2} Mbit/s", r.mean_mbps), points: vec![(0.0, r.mean_mbps), (r.duration_s, r.mean_mbps)], ..Default::default() },
    ];
    crate::figures::Figure {
        name: format!("{name}-capacity"),
        plot: Plot::Line(LinePlot { title: format!("Capacity of {name}"), x_label: "time (s)".into(), y_label: "capacity (Mbit/s)".into(), series, y_zero: true, ..Default::default() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mplab-trace-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// 100 ms, 10 ms windows: one opportunity a millisecond 1..=40 and
    /// 70..=100 (71 in all), nothing from 40 to 70.
    #[test]
    fn a_tiny_trace_by_hand() {
        let ms: Vec<u64> = (1..=40).chain(70..=100).collect();
        let text: String = ms.iter().map(|m| format!("{m}\n")).collect();
        let p = tmp("tiny.trace", &text);
        let r = summarise(&p, &Options { window_ms: 10, outage_ms: 20, ..Default::default() }).unwrap();
        assert_eq!(r.kind, Kind::Mahimahi);
        assert_eq!(r.opportunities, Some(71));
        assert!(close(r.duration_s, 0.1));
        // 71 × 1500 B × 8 / 100 ms.
        assert!(close(r.mean_mbps, 71.0 * 12_000.0 / 100e3), "{}", r.mean_mbps);
        // Windows (0,10] .. (30,40] and (70,80] .. (90,100]: 10 each, 12
        // Mbit/s; (40,50] and (50,60]: 0; (60,70]: the one at 70, 1.2.
        let want = [12.0, 12.0, 12.0, 12.0, 0.0, 0.0, 1.2, 12.0, 12.0, 12.0];
        assert_eq!(r.windows_mbps.len(), 10);
        assert!(r.windows_mbps.iter().zip(want).all(|(a, b)| close(*a, b)), "{:?}", r.windows_mbps);
        // Sorted: 0 0 1.2 12 ×7; p25 at rank 2.25: 1.2 + 0.25 × 10.8.
        let pc = &r.percentiles;
        assert!(close(pc.min, 0.0) && close(pc.p5, 0.0) && close(pc.p25, 3.9) && close(pc.median, 12.0) && close(pc.p95, 12.0) && close(pc.max, 12.0), "{pc:?}");
        // One gap over 20 ms: 40 -> 70.
        let o = &r.outages;
        assert_eq!((o.count, o.first.len()), (1, 1));
        assert!(close(o.first[0].start_s, 0.04) && close(o.first[0].length_s, 0.03) && close(o.longest_s, 0.03) && close(o.fraction, 0.3), "{o:?}");
        // A threshold of 30 ms: a gap of exactly 30 is not an outage.
        let r = summarise(&p, &Options { window_ms: 10, outage_ms: 30, ..Default::default() }).unwrap();
        assert_eq!(r.outages.count, 0);
        let text = render(&r);
        assert!(text.contains("71 opportunities") && text.contains("outages     none (no gap of more than 30 ms"), "{text}");
    }

    /// The trace loops: the time before its first opportunity is a gap, and
    /// a partial last window counts over its own length; several
    /// opportunities in one millisecond all count.
    #[test]
    fn a_leading_gap_and_a_partial_window() {
        let p = tmp("late.trace", "300\n300\n305\n");
        let r = summarise(&p, &Options::default()).unwrap();
        assert!(close(r.duration_s, 0.305));
        // Windows (0,100], (100,200], (200,300], (300,305]: 0, 0, 2, 1 opportunities.
        let want = [0.0, 0.0, 2.0 * 12_000.0 / 100e3, 12_000.0 / 5e3];
        assert!(r.windows_mbps.iter().zip(want).all(|(a, b)| close(*a, b)), "{:?}", r.windows_mbps);
        assert_eq!(r.outages.count, 1);
        assert!(close(r.outages.first[0].start_s, 0.0) && close(r.outages.total_s, 0.3));
    }

    /// 10 Mbit/s for 250 ms then 2 Mbit/s; by default up to the last step
    /// plus one window (350 ms), or --duration.
    #[test]
    fn a_steps_file() {
        let p = tmp("s.csv", "# a comment\n0s,10Mbit\n250ms,2Mbit\n");
        let r = summarise(&p, &Options::default()).unwrap();
        assert_eq!((r.kind, r.steps, r.opportunities), (Kind::Steps, Some(2), None));
        assert!(close(r.duration_s, 0.35));
        // [200,300): half at 10, half at 2; [300,350): 2.
        let want = [10.0, 10.0, 6.0, 2.0];
        assert!(r.windows_mbps.iter().zip(want).all(|(a, b)| close(*a, b)), "{:?}", r.windows_mbps);
        assert!(close(r.mean_mbps, (0.25 * 10.0 + 0.1 * 2.0) / 0.35), "{}", r.mean_mbps);
        assert!(close(r.percentiles.median, 8.0) && r.outages.count == 0);
        let r = summarise(&p, &Options { duration_ms: Some(1000), ..Default::default() }).unwrap();
        assert!(close(r.mean_mbps, 0.25 * 10.0 + 0.75 * 2.0));
        // The same file under another name, with --steps.
        let q = tmp("s.txt", "0s,10Mbit\n250ms,2Mbit\n");
        let by_flag = summarise(&q, &Options { steps: true, ..Default::default() }).unwrap();
        assert_eq!((by_flag.kind, by_flag.windows_mbps.len()), (Kind::Steps, 4));
        // Without it, the file is read as a trace, and refused.
        assert!(summarise(&q, &Options::default()).unwrap_err().contains("s.txt:1:"));
    }

    /// The scenario crate's errors: the file and the line.
    #[test]
    fn bad_files_name_the_file_and_line() {
        let p = tmp("bad.trace", "1\n5\n3\n");
        let e = summarise(&p, &Options::default()).unwrap_err();
        assert!(e.contains("bad.trace:3: times must not decrease: 3 after 5"), "{e}");
        let p = tmp("bad.csv", "0s,10Mbit\n1s,fast\n");
        let e = summarise(&p, &Options::default()).unwrap_err();
        assert!(e.contains("bad.csv:2: invalid rate \"fast\""), "{e}");
        let e = summarise(Path::new("/nonexistent/x.trace"), &Options::default()).unwrap_err();
        assert!(e.contains("cannot read trace /nonexistent/x.trace"), "{e}");
        let p = tmp("ok.trace", "1\n");
        assert!(summarise(&p, &Options { duration_ms: Some(5), ..Default::default() }).unwrap_err().contains("--duration"));
    }
}
