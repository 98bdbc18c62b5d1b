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
//! classes, `+0` or NaN. It is the sum of the per-residue sums `R_j[ρ][f]` over each
//! dilated dimension `j` and each residue `ρ ≠ k0_j` (a tap outside several classes is
//! counted more than once: harmless, every term is `+0` or NaN). Adding `C[f]` to every
//! weight of the phase's kernel slice leaves a finite weight unchanged and makes every
//! output of the phase NaN when `C[f]` is NaN (each output multiplies at least one of
//! the phase's taps); a phase none of whose taps reads the input is `C` over all taps,
//! broadcast. The sums are small matrix-vector products over the kernel (`w · 0`), not
//! over the input: the multiply-adds per output stay the phase's.

use super::geometry::Role;
use super::rewrite::Rewriter;
use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::InstrId;
use hlo::Opcode;

/// Per spatial dimension and residue `ρ` (mod its base dilation) the `[F]` sums of
/// `0 · w` over the kernel taps `≡ ρ`; empty for an undilated dimension, `None` for a
/// residue no tap has (a window shorter than the dilation).
pub(super) struct HoleSums {
    by_residue: Vec<Vec<Option<InstrId>>>,
}

impl Rewriter<'_> {
    /// The per-residue sums of `rhs`, the convolution's kernel.
    pub(super) fn hole_sums(&mut self, rhs: InstrId) -> HoleSums {
        let geo = self.geo;
        let by_residue = (0..geo.rank())
            .map(|j| {
                let w = &geo.window[j];
                if w.base_dilation == 1 {
                    return Vec::new();
                }
                let s = w.base_dilation;
                (0..s)
                    .map(|rho| {
                        (rho < w.size).then(|| {
                            let count = (w.size - rho + s - 1) / s;
                            let kd = geo.kernel_spatial[j];
                            let taps = self.slice(rhs, |d| (d == kd).then_some((rho, count, s)));
                            self.zero_products(taps)
                        })
                    })
                    .collect()
            })
            .collect();
        HoleSums { by_residue }
    }

    /// `[F]`: per output feature, the sum of `0 · w` over every element of `taps` (a
    /// kernel slice), as `w · 0`.
    fn zero_products(&mut self, taps: InstrId) -> InstrId {
        let geo = self.geo;
        let dims = self.dims(taps);
        let perm: Vec<usize> = std::iter::once(geo.kernel_out)
            .chain((0..dims.len()).filter(|&d| d != geo.kernel_out))
            .collect();
        let f = dims[geo.kernel_out];
        let k: i64 = dims.iter().product::<i64>() / f.max(1);
        let t = self.transpose(taps, &perm);
        let m = self.merge(t, self.shape(vec![f, k]));
        let zero = self.zero();
        let zeros = self.add(
            Opcode::Broadcast,
            self.shape(vec![k]),
            vec![zero],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        );
        self.add(
            Opcode::Dot,
            self.shape(vec![f]),
            vec![m, zeros],
            vec![
                (AttrName::LhsContractingDims, AttrValue::IntList(vec![1])),
                (AttrName::RhsContractingDims, AttrValue::IntList(vec![0])),
            ],
        )
    }

    /// The `[F]` sum of `0 · w` over the taps a phase leaves out: `k0[j]` is the phase's
    /// first tap along dilated dimension `j` (its residue; `None` for a phase reading no
    /// input, which leaves out every tap). `None` when the phase leaves out no tap.
    pub(super) fn left_out(&mut self, sums: &HoleSums, k0: Option<&[i64]>) -> Option<InstrId> {
        let terms: Vec<InstrId> = match k0 {
            Some(k0) => sums
                .by_residue
                .iter()
                .zip(k0)
                .flat_map(|(rs, &k0)| {
                    rs.iter()
                        .enumerate()
                        .filter(move |&(rho, _)| rho as i64 != k0)
                        .filter_map(|(_, &r)| r)
                })
                .collect(),
            // Every tap: the residues of one dilated dimension cover them all.
            None => sums
                .by_residue
                .iter()
                .find(|rs| !rs.is_empty())?
                .iter()
                .filter_map(|&r| r)
                .collect(),
        };
        let f = self.geo.out_features;
        terms
            .into_iter()
            .reduce(|a, b| self.add(Opcode::Add, self.shape(vec![f]), vec![a, b], Vec::new()))
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
