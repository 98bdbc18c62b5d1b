//! How hloc's CPU kernel computes a `select-and-scatter` (a max-pool gradient), shared by
//! the emitter that builds it (`codegen`'s select-scatter emitter) and the cost model that
//! prices it, so that both see one loop structure.
//!
//! Two forms, both parallel over the elements they write:
//! - **tiled**: the windows tile the operand (stride equal to the size in every dimension,
//!   every operand element in exactly one window). One iteration per window: the select
//!   over its taps, then every tap written once (the scattered value at the chosen one,
//!   the init elsewhere). Scatter targets of two windows never collide.
//! - **gather**: any other window (overlapping, or leaving gaps). One iteration per operand
//!   element: every window that covers it, in the source's row-major order, runs its
//!   select again, and the element folds in the source values of the windows that chose
//!   it. Each target sees exactly the updates, in exactly the order, of the sequential
//!   definition, at the price of repeating each window's select once per covered tap.
//!
//! Neither covers window or base dilation, reversal or negative padding (the runtime's
//! library routine runs those).

use hlo::attrs::WindowDim;

/// Which loop structure the kernel uses (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SasForm {
    /// One iteration per window; every operand element in exactly one window.
    Tiled,
    /// One iteration per operand element, over the windows covering it.
    Gather,
}

/// The kernel's plan for one select-and-scatter.
#[derive(Clone, Debug, PartialEq)]
pub struct SasPlan {
    /// The loop structure.
    pub form: SasForm,
    /// Taps of one window (the product of the window sizes).
    pub taps: i64,
    /// Per dimension, how many windows may cover one operand element
    /// (`ceil(size / stride)`): the gather form's candidate windows.
    pub covering: Vec<i64>,
}

/// The plan of a select-and-scatter whose operand has dimensions `operand`, source
/// (windows) `source`, over `window`; `None` when the kernel does not take it (dilation,
/// reversal, negative padding, a rank mismatch or an empty shape).
pub fn plan(window: &[WindowDim], operand: &[i64], source: &[i64]) -> Option<SasPlan> {
    if window.len() != operand.len() || source.len() != operand.len() {
        return None;
    }
    if operand.iter().chain(source).any(|&n| n <= 0) {
        return None;
    }
    let plain = window.iter().all(|w| {
        w.size >= 1
            && w.stride >= 1
            && w.padding_low >= 0
            && w.base_dilation == 1
            && w.window_dilation == 1
            && !w.reversal
    });
    if !plain {
        return None;
    }
    let tiled = window
        .iter()
        .zip(operand.iter().zip(source))
        .all(|(w, (&n, &s))| w.stride == w.size && s * w.size - w.padding_low >= n);
    let covering = window
        .iter()
        .map(|w| (w.size + w.stride - 1) / w.stride)
        .collect();
    Some(SasPlan {
        form: if tiled {
            SasForm::Tiled
        } else {
            SasForm::Gather
        },
        taps: window.iter().map(|w| w.size).product(),
        covering,
    })
}

impl SasPlan {
    /// Reads of the operand, the source and the init per output element, and the select
    /// evaluations (one comparison each) per output element, as the kernel runs them.
    pub fn per_element(&self, operand_elements: f64, source_elements: f64) -> [f64; 4] {
        let windows_per_element = source_elements / operand_elements.max(1.0);
        match self.form {
            // Each window reads its taps once and its source value once.
            SasForm::Tiled => [
                1.0,
                windows_per_element,
                windows_per_element,
                windows_per_element * self.taps as f64,
            ],
            // Each element runs the select of every window covering it.
            SasForm::Gather => {
                let covering: i64 = self.covering.iter().product();
                let selects = covering as f64 * self.taps as f64;
                [selects, covering as f64, 1.0, selects]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(size: i64, stride: i64, padding_low: i64) -> WindowDim {
        WindowDim {
            size,
            stride,
            padding_low,
            padding_high: 0,
            window_dilation: 1,
            base_dilation: 1,
            reversal: false,
        }
    }

    #[test]
    fn forms() {
        // A 2x2 max pool of stride 2 over NHWC tiles the operand.
        let w = [dim(1, 1, 0), dim(2, 2, 0), dim(2, 2, 0), dim(1, 1, 0)];
        let p = plan(&w, &[4, 8, 8, 3], &[4, 4, 4, 3]).unwrap();
        assert_eq!(p.form, SasForm::Tiled);
        assert_eq!(p.taps, 4);
        // An odd extent with SAME padding: the last window reaches into the padding.
        let p = plan(&[dim(2, 2, 0)], &[5], &[3]).unwrap();
        assert_eq!(p.form, SasForm::Tiled);
        // VALID padding over an odd extent leaves the last element in no window.
        let p = plan(&[dim(2, 2, 0)], &[5], &[2]).unwrap();
        assert_eq!(p.form, SasForm::Gather);
        // 3x3 windows of stride 2 overlap.
        let p = plan(&[dim(3, 2, 1)], &[8], &[4]).unwrap();
        assert_eq!((p.form, p.covering.clone()), (SasForm::Gather, vec![2]));
        // Dilation is the library's.
        let mut d = dim(2, 2, 0);
        d.window_dilation = 2;
        assert!(plan(&[d], &[8], &[3]).is_none());
    }
}
