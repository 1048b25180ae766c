//! What the generators share: a link direction from a generator's scalar
//! fields, queue tables and loss checks (also used for the file's own links) and
//! bounds on counts.

use crate::error::{diag, Diag};
use crate::network::{GilbertElliott, JitterDistribution, LinkDirection, Queue};
use crate::plugins::fields::PluginTable;
use crate::schema::LossModel;
use crate::units::{Duration, Probability, Rate};

/// Link parameters from the generator's scalars.
pub(crate) fn params(rate: Rate, delay: Option<Duration>, loss: Option<Probability>, queue: Option<Queue>) -> LinkDirection {
    LinkDirection {
        rate_bps: rate.bps(),
        trace: None,
        steps: Vec::new(),
        delay_ns: delay.unwrap_or_default().as_nanos(),
        jitter_ns: 0,
        jitter_distribution: JitterDistribution::Uniform,
        reorder: false,
        loss: loss.unwrap_or_default().value(),
        gilbert_elliott: None,
        duplicate: 0.0,
        queue: queue.unwrap_or_default(),
    }
}

/// A queue table found at `path`, kept for the backend's registry of
/// disciplines to check (`mplab_backend::plugins::check`).
pub(crate) fn queue_at(q: &PluginTable, path: &str) -> Queue {
    Queue::new(q.clone(), path)
}

/// Splits a loss model into the plain `loss` / `gilbert_elliott` pair.
pub(crate) fn resolve_loss(loss: Option<Probability>, model: Option<LossModel>, path: &str) -> Result<(f64, Option<GilbertElliott>), Diag> {
    match model.unwrap_or_default() {
        LossModel::Bernoulli => Ok((loss.unwrap_or_default().value(), None)),
        LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
            if loss.is_some_and(|l| l.value() > 0.0) {
                return diag(
                    format!("{path}.loss"),
                    "`loss` is the Bernoulli loss rate; with loss_model = gilbert_elliott set loss_good/loss_bad instead",
                );
            }
            Ok((0.0, Some(GilbertElliott { p_gb: p_gb.value(), p_bg: p_bg.value(), loss_good: loss_good.value(), loss_bad: loss_bad.value() })))
        }
    }
}

/// Bounds-checks a generator count.
pub(crate) fn check_count(value: u32, min: u32, max: u32, path: &str, what: &str) -> Result<(), Diag> {
    if value < min || value > max {
        return diag(path, format!("{what} must be between {min} and {max}, got {value}"));
    }
    Ok(())
}
