//! The error report of a random validation: per case the simulator's
//! goodput error against the kernel, judged against the larger of the
//! target and the kernel's own spread in the same run; then median, p90
//! and worst per role (the held-out figures are the ones that count), a
//! scatter of simulator against kernel and a CDF of the errors.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::random::{CaseDraw, TOLERANCE};
use super::suite::Role;
use super::Row;
use crate::plot::{self, LinePlot, Plot, Series};

/// One case's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CaseError {
    pub case: String,
    pub role: &'static str,
    pub description: String,
    /// Goodput (Mbit/s) on the kernel and the simulator's `linux` profile
    /// (a sized transfer's: its bytes over its completion time).
    pub kernel_mbps: Option<f64>,
    pub sim_mbps: Option<f64>,
    /// sim / kernel − 1.
    pub error: Option<f64>,
    /// The kernel's own spread over its runs, relative to its mean.
    pub kernel_spread: Option<f64>,
    /// For cut cases: simulator minus kernel recovery time (s).
    pub recovery_error_s: Option<f64>,
    /// `within`, `outside`, or why there is no verdict.
    pub verdict: String,
}

fn cell(row: &Row, column: &str) -> Option<(f64, f64, f64)> {
    let c = row.cells.iter().find(|c| c.column == column)?;
    Some((c.mean?, c.min?, c.max?))
}

/// A backend ran the case and never reached the metric in any run (a
/// transfer that did not complete in the run's time).
fn never_reached(row: &Row, column: &str) -> bool {
    row.cells.iter().find(|c| c.column == column).is_some_and(|c| c.missing.is_none() && !c.values.is_empty() && c.values.iter().all(Option::is_none))
}

/// The per-case errors, from the validation rows of the drawn cases.
pub fn errors(draws: &[CaseDraw], rows: &[Row]) -> Vec<CaseError> {
    let mut out = Vec::new();
    for d in draws {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.case == d.name).collect();
        let mut e = CaseError { case: d.name.clone(), role: d.role.name(), description: d.description(), kernel_mbps: None, sim_mbps: None, error: None, kernel_spread: None, recovery_error_s: None, verdict: String::new() };
        let Some(main) = mine.first() else {
            e.verdict = "not run".into();
            out.push(e);
            continue;
        };
        // A completion time becomes the goodput of the transfer.
        let to_mbps = |v: f64| match d.bytes {
            Some(b) => b as f64 * 8.0 / v / 1e6,
            None => v,
        };
        match (cell(main, "kernel"), cell(main, "sim linux")) {
            (Some((k, kmin, kmax)), Some((s, _, _))) => {
                let (k, s) = (to_mbps(k), to_mbps(s));
                let (lo, hi) = (to_mbps(kmin).min(to_mbps(kmax)), to_mbps(kmin).max(to_mbps(kmax)));
                let spread = (hi - lo) / k;
                let err = s / k - 1.0;
                e.kernel_mbps = Some(k);
                e.sim_mbps = Some(s);
                e.error = Some(err);
                e.kernel_spread = Some(spread);
                e.verdict = if err.abs() <= TOLERANCE.max(spread) + 1e-9 { "within".into() } else { "outside".into() };
                if spread > TOLERANCE {
                    e.verdict.push_str(" (kernel spread above the target)");
                }
            }
            // One completed in every run, the other in none: the widest
            // disagreement there is, counted as an unbounded error.
            (None, Some(_)) if never_reached(main, "kernel") => e.verdict = "outside: the kernel never completed in the run's time, the simulator did".into(),
            (Some(_), None) if never_reached(main, "sim linux") => e.verdict = "outside: the simulator never completed in the run's time, the kernel did".into(),
            _ => e.verdict = format!("no verdict: {}", main.verdict),
        }
        if let Some(rec) = mine.iter().find(|r| r.metric.starts_with("recovery")) {
            e.recovery_error_s = rec.diff;
        }
        out.push(e);
    }
    out
}

/// Median, p90 and worst of |error| over one role's cases.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub role: &'static str,
    pub cases: usize,
    pub judged: usize,
    pub within: usize,
    pub median: Option<f64>,
    pub p90: Option<f64>,
    pub worst: Option<(String, f64)>,
    pub recovery_cases: usize,
    pub recovery_median_s: Option<f64>,
    pub recovery_worst_s: Option<f64>,
}

/// The nearest-rank quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

pub fn summarise(errs: &[CaseError], role: Role) -> Summary {
    let mine: Vec<&CaseError> = errs.iter().filter(|e| e.role == role.name()).collect();
    // A case one backend never completed counts as an unbounded error.
    let mut abs: Vec<(f64, &str)> = mine.iter().filter_map(|e| e.error.map(f64::abs).or_else(|| e.verdict.starts_with("outside").then_some(f64::INFINITY)).map(|x| (x, e.case.as_str()))).collect();
    abs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let vals: Vec<f64> = abs.iter().map(|a| a.0).collect();
    let mut rec: Vec<f64> = mine.iter().filter_map(|e| e.recovery_error_s.map(f64::abs)).collect();
    rec.sort_by(f64::total_cmp);
    Summary {
        role: role.name(),
        cases: mine.len(),
        judged: vals.len(),
        within: mine.iter().filter(|e| e.verdict.starts_with("within")).count(),
        median: quantile(&vals, 0.5),
        p90: quantile(&vals, 0.9),
        worst: abs.last().map(|(v, c)| (c.to_string(), *v)),
        recovery_cases: rec.len(),
        recovery_median_s: quantile(&rec, 0.5),
        recovery_worst_s: rec.last().copied(),
    }
}

fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_infinite() => "unbounded".into(),
        Some(v) => format!("{:.1} %", v * 100.0),
        None => "-".into(),
    }
}

/// random.md: the summary per role, then every case.
pub fn render(errs: &[CaseError], seed: u64) -> String {
    let mut s = format!("# Random validation, seed {seed}\n\nSimulator (`profile = \"linux\"`) against the kernel backend; goodput error = sim / kernel − 1; a case is within when |error| ≤ max({:.0} %, the kernel's own spread in this run).\n\n", TOLERANCE * 100.0);
    s.push_str("| role | cases | judged | within | median | p90 | worst | cut cases: recovery error median / worst |\n|---|---|---|---|---|---|---|---|\n");
    for role in [Role::HeldOut, Role::Tuning] {
        let m = summarise(errs, role);
        let worst = m.worst.as_ref().map(|(c, v)| format!("{} ({c})", pct(Some(*v)))).unwrap_or_else(|| "-".into());
        let rec = match (m.recovery_median_s, m.recovery_worst_s) {
            (Some(a), Some(b)) => format!("{a:.1} s / {b:.1} s ({} cases)", m.recovery_cases),
            _ => "-".into(),
        };
        let _ = writeln!(s, "| {} | {} | {} | {} | {} | {} | {worst} | {rec} |", m.role, m.cases, m.judged, m.within, pct(m.median), pct(m.p90));
    }
    s.push_str("\n| case | role | kernel (Mbit/s) | sim linux | error | kernel spread | recovery error (s) | verdict | network |\n|---|---|---|---|---|---|---|---|---|\n");
    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    for e in errs {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            e.case,
            e.role,
            f(e.kernel_mbps),
            f(e.sim_mbps),
            e.error.map(|x| format!("{:+.1} %", x * 100.0)).unwrap_or_else(|| "-".into()),
            pct(e.kernel_spread),
            e.recovery_error_s.map(|x| format!("{x:+.1}")).unwrap_or_else(|| "-".into()),
            e.verdict,
            e.description
        );
    }
    s
}

/// scatter.{svg,png} (simulator against kernel, per role, with y = x) and
/// error-cdf.{svg,png}.
pub fn plots(errs: &[CaseError], dir: &Path) -> std::io::Result<()> {
    let mut scatter = Vec::new();
    let mut cdf = Vec::new();
    let mut top: f64 = 1.0;
    for role in [Role::HeldOut, Role::Tuning] {
        let pts: Vec<(f64, f64)> = errs.iter().filter(|e| e.role == role.name()).filter_map(|e| Some((e.kernel_mbps?, e.sim_mbps?))).collect();
        top = pts.iter().fold(top, |m, p| m.max(p.0).max(p.1));
        scatter.push(Series { name: role.name().into(), points: pts, dots: true, ..Default::default() });
        let mut abs: Vec<f64> = errs.iter().filter(|e| e.role == role.name()).filter_map(|e| e.error.map(|x| x.abs() * 100.0)).collect();
        abs.sort_by(f64::total_cmp);
        let n = abs.len() as f64;
        cdf.push(Series { name: role.name().into(), points: abs.iter().enumerate().map(|(i, v)| (*v, (i + 1) as f64 / n)).collect(), step: true, ..Default::default() });
    }
    scatter.push(Series { name: "sim = kernel".into(), points: vec![(0.0, 0.0), (top, top)], ..Default::default() });
    let p = Plot::Line(LinePlot { title: "Random cases: goodput, simulator (linux profile) against kernel".into(), x_label: "kernel (Mbit/s)".into(), y_label: "simulator (Mbit/s)".into(), series: scatter, y_zero: true, ..Default::default() });
    plot::write(&p, &dir.join("scatter"))?;
    let p = Plot::Line(LinePlot { title: "Random cases: |goodput error|".into(), x_label: "|sim / kernel - 1| (%)".into(), y_label: "share of cases".into(), series: cdf, y_zero: true, ..Default::default() });
    plot::write(&p, &dir.join("error-cdf"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::{Cell, Column};

    fn row(case: &str, kernel: Vec<Option<f64>>, sim: Vec<Option<f64>>) -> Row {
        Row {
            case: case.into(),
            description: String::new(),
            metric: "completion".into(),
            unit: "s",
            cells: vec![Cell::new(Column::SimLinux, sim, None), Cell::new(Column::Kernel, kernel, None)],
            diff: None,
            tolerance: None,
            tolerance_from: String::new(),
            verdict: String::new(),
        }
    }

    /// A sized transfer: completion times become goodput; one the kernel
    /// never completed while the simulator did is outside, and counts as
    /// the worst error of its role.
    #[test]
    fn completion_errors_and_a_transfer_one_backend_never_ended() {
        let mut a = super::super::random::draw_case(1, 0);
        a.bytes = Some(1_000_000);
        a.role = Role::HeldOut;
        a.name = "a".into();
        let mut b = a.clone();
        b.name = "b".into();
        let rows = vec![row("a", vec![Some(2.0), Some(2.2)], vec![Some(2.0), Some(2.0)]), row("b", vec![None, None], vec![Some(5.0), Some(5.0)])];
        let e = errors(&[a, b], &rows);
        // 1 MB in 2.1 s (kernel) and 2.0 s (sim): 3.81 and 4.00 Mbit/s.
        assert!((e[0].error.unwrap() - 0.05).abs() < 1e-9, "{:?}", e[0]);
        assert!(e[0].verdict.starts_with("within"));
        assert!(e[1].verdict.starts_with("outside: the kernel never completed"), "{:?}", e[1]);
        let m = summarise(&e, Role::HeldOut);
        assert_eq!((m.judged, m.within), (2, 1));
        assert_eq!(m.worst.map(|w| w.0), Some("b".to_string()));
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(5.0));
        assert_eq!(quantile(&v, 0.9), Some(9.0));
        assert_eq!(quantile(&v, 1.0), Some(10.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
