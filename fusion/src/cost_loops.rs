//! A kernel's contractions that run as loops ([`crate::cost_contraction`]), summed for
//! [`CostModel::kernel`]: their taps at the loop's price replace the vector rate the flops
//! table would charge them.

use crate::cost::{CompInfo, CostModel, Evaluation};

/// The contractions of one kernel run as loops: the flops the composition counted for them
/// and the seconds the loops take.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoopTime {
    /// Flops [`crate::cost::evaluate`] counted for the contractions (at the vector rate).
    pub flops: f64,
    /// Seconds of their loops.
    pub seconds: f64,
}

impl CostModel<'_> {
    /// The loops of the contractions among a kernel's members, from its evaluation `ev`;
    /// `None` where it has none or the device prices no loops.
    pub fn loop_contractions(&self, info: &CompInfo, ev: &Evaluation) -> Option<LoopTime> {
        let mut t = LoopTime::default();
        let mut any = false;
        for (&m, &e) in &ev.evals {
            let Some(op) = info.op(m) else { continue };
            let Some(lc) = op.contraction.as_ref() else {
                continue;
            };
            t.seconds += lc.seconds(self.device, e)?;
            t.flops += e * op.flops_per_element;
            any = true;
        }
        any.then_some(t)
    }
}
