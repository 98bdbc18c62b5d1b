//! Which `reduce-window`s XLA:CPU computes as *blocked* scans.
//!
//! XLA's `ReduceWindowRewriter` (registered by XLA:CPU with a base length of 16, run to a
//! fixed point) rewrites every cumulative window longer than the base into a scan of blocks
//! of 16 elements plus the exclusive scan of the block totals. For float sums and products
//! that order, not the window's own left-to-right fold, gives XLA's bits: a cumsum of 50,257
//! f32 probabilities folded in one chain drifts 1e-4 from the exact sum, the blocked one
//! 5e-7, and a threshold on it (nucleus sampling) then keeps a different count of tokens.
//! The rewrite pass (`hlo-transforms`) and the reference evaluator (`hlo-eval`) both follow
//! this description, so the compiled code and the evaluator agree with XLA and each other.

use crate::attrs::WindowDim;
use crate::ir::Instruction;
use crate::Opcode;

/// XLA:CPU's base length: windows of at most this many elements stay as they are, longer
/// ones are scanned in blocks of this size.
pub const BASE_LENGTH: i64 = 16;

/// A cumulative `reduce-window` in the form XLA rewrites: exactly one non-trivial window
/// dimension, as long as the operand's dimension, stride 1, no dilation or reversal, and
/// padding `n - 1` (inclusive) or `n` (exclusive) on one side only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CumulativeWindow {
    /// The scanned dimension.
    pub dim: usize,
    /// Its length in the operand (`n`).
    pub len: i64,
    /// A suffix scan (padding high) rather than a prefix scan (padding low).
    pub reverse: bool,
    /// Padding `n` rather than `n - 1`: the output has `n + 1` elements, the first (last,
    /// reversed) being the init value.
    pub exclusive: bool,
}

impl CumulativeWindow {
    /// True when XLA:CPU rewrites this window into blocks (longer than [`BASE_LENGTH`]).
    pub fn is_blocked(&self) -> bool {
        self.len > BASE_LENGTH
    }
}

/// XLA's trivial window dimension: size 1, stride 1, no padding, dilation or reversal.
fn is_trivial(w: &WindowDim) -> bool {
    w.size == 1
        && w.stride == 1
        && w.padding_low == 0
        && w.padding_high == 0
        && w.base_dilation == 1
        && w.window_dilation == 1
        && !w.reversal
}

/// The cumulative window of `instr`, when it is a `reduce-window` of the form
/// [`CumulativeWindow`] describes (whatever its length); `None` otherwise.
pub fn cumulative_window(instr: &Instruction, operand_dims: &[i64]) -> Option<CumulativeWindow> {
    if instr.opcode() != Opcode::ReduceWindow {
        return None;
    }
    let window = instr.window()?;
    if window.dims.len() != operand_dims.len() {
        return None;
    }
    let mut non_trivial = window
        .dims
        .iter()
        .enumerate()
        .filter(|(_, w)| !is_trivial(w));
    let (dim, w) = non_trivial.next()?;
    if non_trivial.next().is_some() {
        return None;
    }
    let n = operand_dims[dim];
    let side = |pad: i64| pad == n - 1 || pad == n;
    let forward = side(w.padding_low) && w.padding_high == 0;
    let reverse = side(w.padding_high) && w.padding_low == 0;
    if w.stride != 1
        || w.size != n
        || !(forward || reverse)
        || w.reversal
        || w.base_dilation != 1
        || w.window_dilation != 1
    {
        return None;
    }
    let exclusive = if forward {
        w.padding_low == n
    } else {
        w.padding_high == n
    };
    Some(CumulativeWindow {
        dim,
        len: n,
        reverse: !forward,
        exclusive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window_of(text: &str) -> Option<CumulativeWindow> {
        let src = format!(
            "HloModule m\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\nENTRY e {{\n  p = f32[4,40] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = {text}, to_apply=add\n}}"
        );
        let m = crate::parse_module(&src).unwrap();
        let r = m.instr("r").unwrap();
        cumulative_window(r.instr(), &[4, 40])
    }

    #[test]
    fn recognises_xlas_four_forms_and_nothing_else() {
        let f = |dim, reverse, exclusive| {
            Some(CumulativeWindow {
                dim,
                len: 40,
                reverse,
                exclusive,
            })
        };
        let w = "reduce-window(p, z), window=";
        assert_eq!(
            window_of(&format!("f32[4,40] {w}{{size=1x40 pad=0_0x39_0}}")),
            f(1, false, false)
        );
        assert_eq!(
            window_of(&format!("f32[4,41] {w}{{size=1x40 pad=0_0x40_0}}")),
            f(1, false, true)
        );
        assert_eq!(
            window_of(&format!("f32[4,40] {w}{{size=1x40 pad=0_0x0_39}}")),
            f(1, true, false)
        );
        assert_eq!(
            window_of(&format!("f32[4,41] {w}{{size=1x40 pad=0_0x0_40}}")),
            f(1, true, true)
        );
        // A window longer than the dimension, a stride, a second window dimension: no.
        assert_eq!(
            window_of(&format!("f32[4,41] {w}{{size=1x41 pad=0_0x40_0}}")),
            None
        );
        assert_eq!(
            window_of(&format!(
                "f32[4,20] {w}{{size=1x40 stride=1x2 pad=0_0x39_0}}"
            )),
            None
        );
        assert_eq!(
            window_of(&format!("f32[4,40] {w}{{size=2x40 pad=1_0x39_0}}")),
            None
        );
        assert!(f(1, false, false).unwrap().is_blocked());
    }
}
