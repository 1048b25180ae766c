//! Random loss on the wire: Bernoulli or the Gilbert-Elliott two-state
//! chain.

use crate::rng::SimRng;

/// Random loss applied to each packet after serialisation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum LossModel {
    #[default]
    None,
    /// Independent loss with probability `p`.
    Bernoulli { p: f64 },
    /// The two-state Markov chain: per packet, first a transition (good to
    /// bad with `p_gb`, bad to good with `p_bg`), then loss with
    /// `loss_good` or `loss_bad` depending on the new state. Mean loss is
    /// `(p_bg * loss_good + p_gb * loss_bad) / (p_gb + p_bg)`.
    GilbertElliott { p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64 },
}

impl LossModel {
    /// Draws the loss decision of one accepted packet. `bad` is the
    /// Gilbert-Elliott chain's state (in the bad state), kept by the
    /// caller next to its other per-packet fields. Always inlined: it
    /// is on every packet's path and, as a call, cost more than its body.
    #[inline(always)]
    pub(super) fn draw(self, bad: &mut bool, rng: &mut SimRng) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli { p } => rng.bernoulli(p),
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
                if *bad {
                    if rng.bernoulli(p_bg) {
                        *bad = false;
                    }
                } else if rng.bernoulli(p_gb) {
                    *bad = true;
                }
                rng.bernoulli(if *bad { loss_bad } else { loss_good })
            }
        }
    }

    /// Whether switching from `self` to `next` keeps the chain's state:
    /// between Gilbert-Elliott parameter sets the channel does not forget
    /// it is in a burst; any other change restarts it in the good state.
    pub(super) fn keeps_state(self, next: LossModel) -> bool {
        matches!((self, next), (LossModel::GilbertElliott { .. }, LossModel::GilbertElliott { .. }))
    }
}
