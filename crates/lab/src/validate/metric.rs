//! A metric's value on one run, from its results.

use mplab_sim::RunResults;

use super::suite::{Metric, Subflows};

/// The flow a metric names, or None for "every flow" (its summary index).
fn flow_index(r: &RunResults, flow: &Option<String>) -> Result<Option<usize>, String> {
    match flow {
        None => Ok(None),
        Some(name) => r.summary.flows.iter().position(|f| &f.name == name).map(Some).ok_or_else(|| format!("the run has no flow {name:?}")),
    }
}

/// The value of `m` on the run `r` (None: not reached, e.g. a subflow that
/// never recovered, a transfer that did not complete).
pub fn value(m: &Metric, r: &RunResults) -> Result<Option<f64>, String> {
    match m {
        Metric::Goodput { flow, window, .. } => {
            let idx = flow_index(r, flow)?;
            let Some((a, b)) = *window else {
                let sum: f64 = r.summary.flows.iter().enumerate().filter(|(i, _)| idx.is_none_or(|j| j == *i)).map(|(_, f)| f.goodput_bps).sum();
                return Ok(Some(sum / 1e6));
            };
            // Per sampling time, the connections' totals summed; then the
            // mean over the window.
            let mut by_time: std::collections::BTreeMap<i64, f64> = std::collections::BTreeMap::new();
            for s in r.flows.iter().filter(|s| s.subflow == "all" && s.time_s > a + 1e-9 && s.time_s <= b + 1e-9) {
                if flow.as_ref().is_none_or(|f| *f == s.flow) {
                    *by_time.entry((s.time_s * 1e6).round() as i64).or_default() += s.goodput_bps;
                }
            }
            if by_time.is_empty() {
                return Err(format!("no goodput samples in {a}-{b} s"));
            }
            Ok(Some(by_time.values().sum::<f64>() / by_time.len() as f64 / 1e6))
        }
        Metric::Recovery { flow, on, after, threshold_mbps, .. } => {
            let idx = flow_index(r, flow)?.unwrap_or(0);
            let f = r.summary.flows.get(idx).ok_or("the run has no flows")?;
            // The subflow indices watched: the one named, or every subflow
            // whose path label (`client:eth1 (path1)`) names the link.
            let watched: Vec<String> = match on {
                Subflows::Index(i) => vec![i.to_string()],
                Subflows::Link(l) => {
                    let tag = format!("({l})");
                    f.subflows.iter().enumerate().filter(|(_, s)| s.path.as_deref().is_some_and(|p| p.contains(&tag))).map(|(i, _)| i.to_string()).collect()
                }
            };
            let mut by_time: std::collections::BTreeMap<i64, f64> = std::collections::BTreeMap::new();
            for s in r.flows.iter().filter(|s| s.flow == f.name && s.time_s > *after && watched.contains(&s.subflow)) {
                *by_time.entry((s.time_s * 1e6).round() as i64).or_default() += s.goodput_bps;
            }
            let back = by_time.iter().find(|(_, g)| **g > threshold_mbps * 1e6).map(|(t, _)| *t as f64 / 1e6);
            Ok(back.map(|t| t - after))
        }
        Metric::Completion { flow, .. } => {
            let idx = flow_index(r, flow)?.unwrap_or(0);
            Ok(r.summary.flows.get(idx).ok_or("the run has no flows")?.completion_time_s)
        }
        Metric::Fallback { flow } => {
            let idx = flow_index(r, flow)?.unwrap_or(0);
            Ok(Some(if r.summary.flows.get(idx).ok_or("the run has no flows")?.fallback { 1.0 } else { 0.0 }))
        }
        Metric::LinksUsed { flow } => {
            let idx = flow_index(r, flow)?.unwrap_or(0);
            let f = r.summary.flows.get(idx).ok_or("the run has no flows")?;
            // A subflow's path label names the client's interface and its
            // link: `client:eth1 (access1)`.
            let total: u64 = f.subflows.iter().map(|s| s.bytes_sent).sum();
            let mut links: Vec<&str> = f.subflows.iter().filter(|s| s.bytes_sent * 20 >= total && total > 0).filter_map(|s| s.path.as_deref()).collect();
            links.sort_unstable();
            links.dedup();
            Ok(Some(links.len() as f64))
        }
    }
}
