//! The taps the sub-pixel decomposition leaves out, kept in the answer: HLO's base
//! dilation holes and padding are zero-valued elements, so each of those taps adds
//! `0 · w` — nothing for a finite weight, NaN for an infinite or NaN one (the reference
//! evaluator's rule, issue 36 item 4). XLA:CPU skips the holes of an `lhs_dilate`
//! convolution (it multiplies padding taps); this backend follows the HLO semantics.
//!
//! The phase of output `o = s·q + r` along a dilated dimension reads only the taps
//! `k ≡ k0 (mod s)`; every other tap lands in a hole or the padding for each of its
//! outputs. So the left-out taps' sum, per output feature, is the same for every output
//! of a phase: `C[f] = Σ 0 · w[k, i, f]` over the taps outside the phase's residue
//! classes, `+0` or NaN (the products are summed from `+0`). Every phase's `C` comes
//! from one array, the kernel with each phase's own taps zeroed (`hole_sums`). Adding `C[f]` to every
//! weight of the phase's kernel slice leaves a finite weight unchanged and makes every
//! output of the phase NaN when `C[f]` is NaN (each output multiplies at least one of
//! the phase's taps); a phase none of whose taps reads the input is `C` over all taps,
//! broadcast. The sums are small reductions over the kernel, not over the input: the
//! multiply-adds per output stay the phase's.

use super::geometry::Role;
use super::rewrite::Rewriter;
use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{edit, CompId, InstrId, Instruction};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// Every phase's `[F]` sum of `0 · w` over the taps it leaves out, as one array.
pub(super) struct HoleSums {
    /// The kernel.
    rhs: InstrId,
    /// The scalar `add` the sums reduce with.
    add: CompId,
    /// `[s_j..., F]` (one dimension per base-dilated spatial dimension `j`, of its
    /// dilation `s_j`, in order): at the phase of residues `r_j`, its left-out sum;
    /// `None` without a dilated dimension.
    by_phase: Option<InstrId>,
    /// The sum over every tap, for a phase that reads no input (made on first use).
    all: Option<InstrId>,
}

impl Rewriter<'_> {
    /// The left-out sums of every phase of `rhs`, the convolution's kernel, as one
    /// reduction (`add` its reducer): `0 · w` broadcast along one axis per dilated
    /// dimension (the phase's residue `r`), zero where the tap is in the phase's class
    /// (`k + r ≡ pad_low (mod s)` along every dilated dimension), summed over the taps
    /// and input features. One loop kernel per transposed convolution: a
    /// matrix-vector product `w · 0` per dimension and residue made a transpose kernel
    /// and a library call each (12 of each in a three-layer decoder, a third of the C
    /// compiler's time).
    pub(super) fn hole_sums(&mut self, rhs: InstrId, add: CompId) -> HoleSums {
        let geo = self.geo;
        let dilated: Vec<usize> = (0..geo.rank())
            .filter(|&j| geo.window[j].base_dilation > 1)
            .collect();
        let mut sums = HoleSums {
            rhs,
            add,
            by_phase: None,
            all: None,
        };
        if dilated.is_empty() {
            return sums;
        }
        let kernel = self.dims(rhs);
        let m = dilated.len();
        let mut full: Vec<i64> = dilated
            .iter()
            .map(|&j| geo.window[j].base_dilation)
            .collect();
        full.extend_from_slice(&kernel);
        let products = self.zero_times(rhs);
        let spread = self.add(
            Opcode::Broadcast,
            self.shape(full.clone()),
            vec![products],
            vec![(
                AttrName::Dimensions,
                AttrValue::IntList((m as i64..full.len() as i64).collect()),
            )],
        );
        let outside = self.outside_mask(&dilated, &full);
        let zero = self.zero();
        let zeros = self.add(
            Opcode::Broadcast,
            self.shape(full.clone()),
            vec![zero],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        );
        let kept = self.add(
            Opcode::Select,
            self.shape(full.clone()),
            vec![outside, spread, zeros],
            vec![],
        );
        let reduced: Vec<usize> = (0..kernel.len())
            .filter(|&d| d != geo.kernel_out)
            .map(|d| m + d)
            .collect();
        sums.by_phase = Some(self.sum_over(kept, &reduced, add));
        sums
    }

    /// Where each tap lies outside each phase's residue classes, as a constant: `[s_j...,
    /// K_j...]` (the dilations of the dilated spatial dimensions `dilated`, then their
    /// kernel sizes, taken in the kernel's dimension order) broadcast to `full` (`[s_j...,
    /// kernel dims...]`). True at `(r, k)` where `k + r - pad_low` is not a multiple of
    /// `s` along some dilated dimension. A constant rather than iotas, remainders and
    /// compares: the generated reduction then reads one flag per tap and phase instead of
    /// recomputing each residue in every unrolled lane (a transposed convolution's hole
    /// kernel was 6.5 KB of C, the C compiler's costliest kernel of a decoder).
    fn outside_mask(&mut self, dilated: &[usize], full: &[i64]) -> InstrId {
        let geo = self.geo;
        let m = dilated.len();
        // The taps' kernel dimensions in increasing order, as broadcast wants them.
        let mut taps: Vec<usize> = dilated.to_vec();
        taps.sort_by_key(|&j| geo.kernel_spatial[j]);
        let mut dims: Vec<i64> = dilated
            .iter()
            .map(|&j| geo.window[j].base_dilation)
            .collect();
        dims.extend(taps.iter().map(|&j| geo.window[j].size));
        let count: i64 = dims.iter().product();
        let mut data = hlo::literal::ArrayData::new(ElementType::Pred).expect("pred has storage");
        let mut at = vec![0i64; dims.len()];
        for _ in 0..count {
            let outside = dilated.iter().enumerate().any(|(a, &j)| {
                let w = &geo.window[j];
                let r = at[a];
                let k = at[m + taps.iter().position(|&t| t == j).expect("a tap dimension")];
                (k + r - w.padding_low).rem_euclid(w.base_dilation) != 0
            });
            data.push_bool(ElementType::Pred, outside)
                .expect("a bool is a pred");
            // The next index, row-major.
            for d in (0..dims.len()).rev() {
                at[d] += 1;
                if at[d] < dims[d] {
                    break;
                }
                at[d] = 0;
            }
        }
        let shape = Shape::array(ElementType::Pred, dims);
        let lit =
            hlo::literal::ArrayLiteral::new(shape.clone(), data).expect("one flag per element");
        let name = self.names.fresh(&self.comp.instr(self.conv).name);
        let mask = edit::add(
            self.comp,
            Instruction::constant(name, shape, hlo::literal::Literal::Array(lit)),
        );
        let mut to: Vec<i64> = (0..m as i64).collect();
        to.extend(taps.iter().map(|&j| (m + geo.kernel_spatial[j]) as i64));
        self.add(
            Opcode::Broadcast,
            Shape::array(ElementType::Pred, full.to_vec()),
            vec![mask],
            vec![(AttrName::Dimensions, AttrValue::IntList(to))],
        )
    }

    /// `0 · x`, elementwise.
    fn zero_times(&mut self, x: InstrId) -> InstrId {
        let dims = self.dims(x);
        let zero = self.zero();
        let zeros = self.add(
            Opcode::Broadcast,
            self.shape(dims.clone()),
            vec![zero],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        );
        self.add(Opcode::Multiply, self.shape(dims), vec![zeros, x], vec![])
    }

    /// `x` summed (from `+0`, with `add`) over dimensions `dims`.
    fn sum_over(&mut self, x: InstrId, dims: &[usize], add: CompId) -> InstrId {
        let kept: Vec<i64> = self
            .dims(x)
            .iter()
            .enumerate()
            .filter(|(d, _)| !dims.contains(d))
            .map(|(_, &n)| n)
            .collect();
        let zero = self.zero();
        self.add(
            Opcode::Reduce,
            self.shape(kept),
            vec![x, zero],
            vec![
                (
                    AttrName::Dimensions,
                    AttrValue::IntList(dims.iter().map(|&d| d as i64).collect()),
                ),
                (AttrName::ToApply, AttrValue::Computation(add)),
            ],
        )
    }

    /// The `[F]` sum of `0 · w` over the taps the phase of residues `pick` (one per
    /// spatial dimension, 0 for an undilated one) leaves out; over every tap where the
    /// phase reads no input (`reads_input` false: its taps read only holes or padding).
    /// `None` when the phase leaves out no tap.
    pub(super) fn left_out(
        &mut self,
        sums: &mut HoleSums,
        pick: &[usize],
        reads_input: bool,
    ) -> Option<InstrId> {
        let by_phase = sums.by_phase?;
        let geo = self.geo;
        if !reads_input {
            let all = match sums.all {
                Some(a) => a,
                None => {
                    let rank = self.dims(sums.rhs).len();
                    let products = self.zero_times(sums.rhs);
                    let every: Vec<usize> = (0..rank).filter(|&d| d != geo.kernel_out).collect();
                    let a = self.sum_over(products, &every, sums.add);
                    sums.all = Some(a);
                    a
                }
            };
            return Some(all);
        }
        let dilated: Vec<usize> = (0..geo.rank())
            .filter(|&j| geo.window[j].base_dilation > 1)
            .collect();
        let leaves_some = dilated.iter().any(|&j| {
            let w = &geo.window[j];
            (0..w.size)
                .any(|k| (k + pick[j] as i64 - w.padding_low).rem_euclid(w.base_dilation) != 0)
        });
        if !leaves_some {
            return None;
        }
        let m = dilated.len();
        let at = |d: usize| (d < m).then(|| (pick[dilated[d]] as i64, 1, 1));
        let one = self.slice(by_phase, at);
        // A reshape, not a bitcast: the fusion pass fuses it (and the slice) into the
        // phase's kernel slice that adds it.
        Some(self.reshape(one, vec![geo.out_features]))
    }

    /// `kernel` (a phase's slice of the kernel) with `c[f]` added to every weight of
    /// output feature `f`.
    pub(super) fn add_to_weights(&mut self, kernel: InstrId, c: InstrId) -> InstrId {
        let out = self.geo.kernel_out as i64;
        self.broadcast_add(kernel, c, out)
    }

    /// A phase output of `dims` that reads no input: `c[f]` at every element of output
    /// feature `f`.
    pub(super) fn left_out_only(&mut self, c: InstrId, dims: Vec<i64>) -> InstrId {
        let feature = self
            .geo
            .output
            .iter()
            .position(|&r| r == Role::Feature)
            .expect("a convolution output has a feature dimension") as i64;
        self.add(
            Opcode::Broadcast,
            self.shape(dims),
            vec![c],
            vec![(AttrName::Dimensions, AttrValue::IntList(vec![feature]))],
        )
    }

    /// `x + broadcast(c)`, `c` along dimension `dim` of `x`.
    fn broadcast_add(&mut self, x: InstrId, c: InstrId, dim: i64) -> InstrId {
        let dims = self.dims(x);
        let b = self.add(
            Opcode::Broadcast,
            self.shape(dims.clone()),
            vec![c],
            vec![(AttrName::Dimensions, AttrValue::IntList(vec![dim]))],
        );
        self.add(Opcode::Add, self.shape(dims), vec![x, b], Vec::new())
    }
}
