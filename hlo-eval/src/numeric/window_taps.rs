//! The operand positions a window covers, as XLA defines them (padding, base and window
//! dilation, strides, reversal; positions in padding or between dilated elements
//! skipped), and `select-and-scatter`'s choice of one position per window. Shared by
//! the evaluator's `reduce-window` and `select-and-scatter` and the compiled CPU
//! backend's `select-and-scatter`, on logical indices rather than literals.

use super::KernelError;
use hlo::attrs::WindowDim;

/// For each dimension and each output coordinate, the input coordinates the window
/// covers, in window order.
pub struct WindowTaps {
    taps: Vec<Vec<Vec<usize>>>,
}

impl WindowTaps {
    /// The taps of `window` over an input of dimensions `in_dims` for an output (the
    /// windows) of dimensions `out_dims`; `what` names the operation in errors.
    pub fn new(
        window: &[WindowDim],
        in_dims: &[usize],
        out_dims: &[usize],
        what: &str,
    ) -> Result<WindowTaps, KernelError> {
        if window.len() != in_dims.len() || out_dims.len() != in_dims.len() {
            return Err(KernelError::Invalid(format!(
                "{what}: window rank {} does not match operand rank {}",
                window.len(),
                in_dims.len()
            )));
        }
        let mut taps = Vec::with_capacity(in_dims.len());
        for (d, w) in window.iter().enumerate() {
            if w.size < 0 || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1 {
                return Err(KernelError::Invalid(format!(
                    "{what}: bad window in dimension {d}"
                )));
            }
            let n = in_dims[d] as i64;
            let mut per_out = Vec::with_capacity(out_dims[d]);
            for o in 0..out_dims[d] as i64 {
                let mut list = Vec::new();
                for k in 0..w.size {
                    let k = if w.reversal { w.size - 1 - k } else { k };
                    let pos = o
                        .checked_mul(w.stride)
                        .and_then(|p| p.checked_add(k.checked_mul(w.window_dilation)?))
                        .and_then(|p| p.checked_sub(w.padding_low))
                        .ok_or_else(|| {
                            KernelError::Invalid(format!("{what}: window position overflows"))
                        })?;
                    if pos < 0 || pos % w.base_dilation != 0 {
                        continue;
                    }
                    let i = pos / w.base_dilation;
                    if i < n {
                        list.push(i as usize);
                    }
                }
                per_out.push(list);
            }
            taps.push(per_out);
        }
        Ok(WindowTaps { taps })
    }

    /// Calls `f` with the input index of every valid position of the window at output
    /// index `out`, row-major over the window.
    pub fn for_each_tap<E>(
        &self,
        out: &[usize],
        mut f: impl FnMut(&[usize]) -> Result<(), E>,
    ) -> Result<(), E> {
        let lists: Vec<&Vec<usize>> = self.taps.iter().zip(out).map(|(t, &o)| &t[o]).collect();
        if lists.iter().any(|l| l.is_empty()) {
            return Ok(());
        }
        let rank = lists.len();
        let mut pos = vec![0usize; rank];
        let mut index: Vec<usize> = lists.iter().map(|l| l[0]).collect();
        loop {
            f(&index)?;
            let mut k = rank;
            loop {
                if k == 0 {
                    return Ok(());
                }
                k -= 1;
                pos[k] += 1;
                if pos[k] < lists[k].len() {
                    index[k] = lists[k][pos[k]];
                    break;
                }
                pos[k] = 0;
                index[k] = lists[k][0];
            }
        }
    }

    /// `select-and-scatter`'s choice in the window at output (source) index `out`: the
    /// first position, replaced by each later one for which `select(chosen, candidate)`
    /// is false. Writes the choice into `chosen`; false when the window is empty.
    pub fn select<E>(
        &self,
        out: &[usize],
        chosen: &mut Vec<usize>,
        mut select: impl FnMut(&[usize], &[usize]) -> Result<bool, E>,
    ) -> Result<bool, E> {
        let mut found = false;
        self.for_each_tap(out, |cand| {
            if !found || !select(chosen, cand)? {
                chosen.clear();
                chosen.extend_from_slice(cand);
                found = true;
            }
            Ok(())
        })?;
        Ok(found)
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

    /// A 1-D window of 3 with stride 2 and one low padding over 5 elements; select keeps
    /// the first of equal values (`>=`) and moves to a larger one.
    #[test]
    fn taps_and_select() {
        let taps = WindowTaps::new(&[dim(3, 2, 1)], &[5], &[3], "t").unwrap();
        let mut all = Vec::new();
        taps.for_each_tap(&[0], |t| {
            all.push(t[0]);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(all, vec![0, 1]);
        let x = [1.0, 3.0, 3.0, 0.0, 2.0];
        let mut chosen = Vec::new();
        let found = taps
            .select(&[1], &mut chosen, |a, b| Ok::<bool, ()>(x[a[0]] >= x[b[0]]))
            .unwrap();
        assert!(found);
        assert_eq!(chosen, vec![1]);
    }
}
