//! Plots of a trace, as tcptrace and mptcptrace draw them: each subflow's
//! time-sequence graph (sequence offset against time, retransmissions
//! apart), the connection's data-sequence graph (DSN against time, one
//! colour per subflow carrying it), and each subflow's RTT over time.

use crate::figures::Figure;
use crate::plot::{LinePlot, Plot, Series};

use super::model::TraceReport;

/// Points kept per series: enough to show a transfer's shape; a long
/// capture is thinned evenly so its SVG stays a few megabytes at most.
const MAX_POINTS: usize = 6000;

fn thin<T: Copy>(v: &[T]) -> Vec<T> {
    let step = v.len().div_ceil(MAX_POINTS).max(1);
    v.iter().step_by(step).copied().collect()
}

fn dots(name: String, points: Vec<(f64, f64)>) -> Series {
    Series { name, points: thin(&points), dots: true, ..Default::default() }
}

fn figure(name: String, title: String, y_label: &str, series: Vec<Series>) -> Figure {
    Figure { name, plot: Plot::Line(LinePlot { title, x_label: "time (s)".into(), y_label: y_label.into(), series, y_zero: true, ..Default::default() }) }
}

/// Every figure of the trace: per MPTCP connection, the time-sequence
/// graph of its subflows, its data-sequence graph and its subflows' RTTs.
pub fn figures(r: &TraceReport) -> Vec<Figure> {
    let mut out = Vec::new();
    for c in &r.connections {
        let mut tsg = Vec::new();
        let mut rtt = Vec::new();
        for sf in &c.subflows {
            for (d, way) in ["forward", "reverse"].iter().enumerate() {
                let sent: Vec<(f64, f64)> = sf.seq[d].iter().filter(|p| !p.2).map(|p| (p.0, p.1 as f64 / 1e3)).collect();
                let again: Vec<(f64, f64)> = sf.seq[d].iter().filter(|p| p.2).map(|p| (p.0, p.1 as f64 / 1e3)).collect();
                let label = format!("sf{} {} -> {}", sf.index, if d == 0 { &sf.src } else { &sf.dst }, if d == 0 { &sf.dst } else { &sf.src });
                if !sent.is_empty() {
                    tsg.push(dots(label.clone(), sent));
                }
                if !again.is_empty() {
                    tsg.push(dots(format!("{label} retransmitted"), again));
                }
                if !sf.rtt[d].is_empty() {
                    rtt.push(dots(format!("sf{} {way} data", sf.index), sf.rtt[d].clone()));
                }
            }
        }
        let mut dsn = Vec::new();
        for (side, name) in ["client", "server"].iter().enumerate() {
            for sf in &c.subflows {
                let pts: Vec<(f64, f64)> = c.dsn[side].iter().filter(|p| p.2 == sf.index).map(|p| (p.0, p.1 as f64 / 1e3)).collect();
                if !pts.is_empty() {
                    dsn.push(dots(format!("from {name} on sf{}", sf.index), pts));
                }
            }
        }
        let id = c.id;
        if !tsg.is_empty() {
            out.push(figure(format!("conn{id}_subflow_sequence"), format!("Connection {id}: subflow sequence over time"), "sequence offset (KB)", tsg));
        }
        if !dsn.is_empty() {
            out.push(figure(format!("conn{id}_data_sequence"), format!("Connection {id}: data sequence (DSN) over time, by subflow"), "data sequence offset (KB)", dsn));
        }
        if !rtt.is_empty() {
            out.push(figure(format!("conn{id}_rtt"), format!("Connection {id}: RTT samples per subflow (segments sent once)"), "RTT (ms)", rtt));
        }
    }
    out
}
