//! Convolution as im2col and one GEMM: a `convolution` becomes a patches array, one
//! `gather` of the input at positions computed from iotas, masked by a `select` where the
//! window reads padding (`gather.rs`), one `dot` in GEMM form with the kernel (transposed
//! into the patches' order), and `bitcast`s and a `transpose` to the convolution's result.
//!
//! With `n` spatial dimensions, batch `B`, input features `C`, window sizes `K_j`
//! (`W` window positions), output sizes `O_j` (`P` output positions) and output features
//! `F`, the patches are cut into parts, either
//! - by window position (when `W <= P`): one part per window position `k`, holding
//!   along each spatial dimension the `O_j` elements at `o * stride + k * rhs_dilate`
//!   of the padded input; or
//! - by output position (when `P < W`, as in weight gradients, whose window is a whole
//!   activation): one part per output position `p`, holding the `K_j` elements at
//!   `p * stride + k * rhs_dilate`.
//!
//! The gather reads every part at once, the part (window or output position) one of its
//! index dimensions: its kernel is one loop nest whatever the window (the stack of one
//! `pad(slice)` per part it replaced compiled to an `if` chain of one loop per part, most
//! of gcc's time on convolution programs). Where the window reaches into the
//! convolution's padding (or between the elements `lhs_dilate` spreads) the mask gives
//! zeros; no padded copy of the input is made.
//!
//! The parts are stacked, in row-major position order, along a new dimension: by
//! window, right before the features (so `[B, O..., W, C]` for NHWC, `[B, W, C, O...]` for
//! NCHW); by output, right after the batch when it comes first, right before it when it
//! comes last. The patches are then `[outer, contracted, inner]` up to a `bitcast`: the
//! contracted dimensions (window positions and features) in one block, the free ones
//! (batch and output positions) around it. The dot is
//! - `[outer, k] x [k, F]` when nothing follows the block (NHWC);
//! - `[F, k] x [k, inner]` when nothing precedes it (a weight gradient whose batch is
//!   last);
//! - `[G, F, k] x [G, k, inner]` batched over `outer` otherwise, the kernel broadcast `G`
//!   times (NCHW: `G = B`; only when the broadcast kernel is no larger than the patches);
//!
//! and its result, bitcast back to the free dimensions, is transposed to the
//! convolution's `dim_labels` (no transpose for NHWC and NCHW). The input is never
//! transposed by default (a transpose kernel of its own before the patches):
//! [`ConvToGemm::transpose_input`] allows it for inputs whose layout fits no form above
//! (the batch between spatial dimensions); other convolutions are left alone. A 1x1 window with stride 1 and no padding needs no patches: just the dot.
//!
//! Two shapes take other routes, without the zeros and copies im2col would make:
//! - a window that tiles its input (stride equal to the window size, no dilation, a ViT
//!   patch embedding) is a `reshape` splitting (output, window) positions, one
//!   `transpose` and one GEMM (`patchify.rs`): no gather, and no limit on the parts;
//! - an input-dilated (`lhs_dilate`) convolution, a transposed convolution or the input
//!   gradient of a strided one, is decomposed into one convolution of the undilated
//!   input per output phase, each with a strided slice of the kernel's taps, interleaved
//!   by concatenates and a reshape (`phases.rs`); the phases are then rewritten like any
//!   other convolution, with none of the zero-stuffed input's multiply-adds (the taps
//!   on holes still add their `0 · w`, NaN for an infinite weight, through a per-phase
//!   term added to the phase's kernel: `holes.rs`).
//!
//! A grouped convolution (`feature_group_count` or `batch_group_count` above 1) takes the
//! im2col patches of its whole input and one dot batched over the groups (`grouped.rs`);
//! input dilation is then read by the patches' interior padding. With one output feature
//! per group (depthwise, multiplier 1, and its gradients) it stays direct: nothing in the
//! patches would be reused.
//!
//! Exact up to summation order: the same products are summed. Only convolutions with
//! no window reversal, static non-empty
//! shapes and operands and result all of one type of `f32`, `f64`, `bf16` or `f16` (the
//! GEMM types; a half convolution computes in `f32` there) are rewritten,
//! and only when [`ConvToGemm`]'s limits say it pays: enough multiply-adds (small
//! convolutions run faster as the direct loop nest than as several kernels and a library
//! call), a patches array of bounded size and a bounded number of parts. Convolutions
//! inside fusion bodies are left alone.

mod gather;
mod geometry;
mod grouped;
mod holes;
mod patchify;
mod phases;
mod rewrite;

use std::collections::{HashMap, HashSet};

use hlo::ir::edit::{self, NameGen};
use hlo::ir::{CompId, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::{ElementType, Opcode};

use geometry::{Geometry, Plan};
use rewrite::Rewriter;

/// The pass (`conv-to-gemm`), with its profitability limits.
#[derive(Clone, Debug)]
pub struct ConvToGemm {
    /// Convolutions with fewer multiply-adds than this (output elements × window positions
    /// × input features) stay direct. Measured on the CPU backend (2-core AVX-512 host,
    /// f32, 3x3 windows): the direct loop nest wins only below about 600 multiply-adds
    /// (81: 0.2 vs 0.3 us; 576: a tie at 0.5 us; 768: 0.5 vs 0.35 us; 2304: 1.4 vs
    /// 0.7 us), and loses 10x to 100x from about 10^5 on.
    pub min_macs: i64,
    /// Most bytes the patches array may take.
    pub max_patch_bytes: i64,
    /// Most parts (window or output positions) the patches may take.
    pub max_slices: i64,
    /// Whether the input may be transposed to `[B, S..., C]` first, for inputs whose
    /// layout fits no transpose-free form (off by default: see the module docs).
    pub transpose_input: bool,
}

impl Default for ConvToGemm {
    fn default() -> ConvToGemm {
        ConvToGemm {
            min_macs: 512,
            max_patch_bytes: 1 << 30,
            max_slices: 128,
            transpose_input: false,
        }
    }
}

impl ConvToGemm {
    /// Whether convolution `geo` takes the sub-pixel decomposition.
    fn sub_pixel(&self, geo: &Geometry) -> bool {
        !geo.is_grouped()
            && geo.is_input_dilated()
            && geo.macs().is_some_and(|m| m >= self.min_macs)
    }

    /// A scalar `add` computation per element type of the convolutions that take the
    /// sub-pixel decomposition (the reducer of their left-out sums, `holes.rs`), made
    /// before the rewrite borrows a computation.
    fn sub_pixel_reducers(
        &self,
        module: &mut Module,
        names: &mut NameGen,
        skip: &HashSet<CompId>,
    ) -> HashMap<ElementType, CompId> {
        let mut types: Vec<ElementType> = Vec::new();
        for (ci, comp) in module.computations.iter().enumerate() {
            if skip.contains(&CompId::from_index(ci)) {
                continue;
            }
            for (id, i) in comp.instructions() {
                if i.opcode != Opcode::Convolution || i.operands.len() != 2 {
                    continue;
                }
                if let Some(geo) = Geometry::of(comp, id) {
                    if self.sub_pixel(&geo) && !types.contains(&geo.ty) {
                        types.push(geo.ty);
                    }
                }
            }
        }
        types
            .into_iter()
            .map(|ty| {
                (
                    ty,
                    crate::batchnorm_expander::add_computation(module, names, ty),
                )
            })
            .collect()
    }

    /// A pass that rewrites every eligible convolution, whatever its size (for tests).
    pub fn always() -> ConvToGemm {
        ConvToGemm {
            min_macs: 0,
            max_patch_bytes: i64::MAX,
            max_slices: i64::MAX,
            transpose_input: true,
        }
    }
}

impl Pass for ConvToGemm {
    fn name(&self) -> &str {
        "conv-to-gemm"
    }

    fn description(&self) -> &str {
        "rewrites f32/f64 convolutions as im2col patches (one masked gather) and one GEMM-form dot"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let fusion_bodies: HashSet<CompId> = module
            .computations
            .iter()
            .flat_map(|c| c.instructions())
            .filter(|(_, i)| i.opcode == Opcode::Fusion)
            .flat_map(|(_, i)| i.called_computations())
            .collect();
        let adds = self.sub_pixel_reducers(module, &mut names, &fusion_bodies);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            if fusion_bodies.contains(&CompId::from_index(ci)) {
                continue;
            }
            let comp = &mut module.computations[ci];
            let convs: Vec<InstrId> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Convolution && i.operands.len() == 2)
                .map(|(id, _)| id)
                .collect();
            let mut here = false;
            let mut work = convs;
            while let Some(c) = work.pop() {
                let Some(geo) = Geometry::of(comp, c) else {
                    continue;
                };
                let new = if geo.is_grouped() {
                    // One output feature per group (depthwise convolutions and their
                    // gradients): a patch element feeds a single product, so the patches
                    // would only copy what the direct loop nest reads in place (a
                    // depthwise training step measured 2.5x slower through the GEMM).
                    if geo.out_features == geo.groups {
                        continue;
                    }
                    let Some(plan) = self.plan(&geo) else {
                        continue;
                    };
                    Rewriter {
                        comp,
                        names: &mut names,
                        conv: c,
                        geo: &geo,
                    }
                    .rewrite_grouped(&plan)
                } else if self.sub_pixel(&geo) {
                    // Made for every such convolution's type by `sub_pixel_reducers`.
                    let Some(&add) = adds.get(&geo.ty) else {
                        continue;
                    };
                    let (new, phases) = Rewriter {
                        comp,
                        names: &mut names,
                        conv: c,
                        geo: &geo,
                    }
                    .sub_pixel(add);
                    work.extend(phases);
                    new
                } else if geo.is_patchify() && self.pays(&geo) {
                    Rewriter {
                        comp,
                        names: &mut names,
                        conv: c,
                        geo: &geo,
                    }
                    .patchify()
                } else {
                    let Some(plan) = self.plan(&geo) else {
                        continue;
                    };
                    Rewriter {
                        comp,
                        names: &mut names,
                        conv: c,
                        geo: &geo,
                    }
                    .rewrite(&plan)
                };
                edit::replace_uses(comp, c, new);
                edit::remove_instructions(comp, &std::iter::once(c).collect());
                here = true;
            }
            if here {
                edit::repair_order(comp);
                changed = true;
            }
        }
        if !adds.is_empty() {
            // The reducers were appended after their callers: the text format needs
            // every callee first.
            hlo::ir::call_graph::sort_computations(module);
        }
        Ok(changed)
    }
}

impl ConvToGemm {
    /// Whether `geo` has enough multiply-adds and a small enough patches array.
    fn pays(&self, geo: &Geometry) -> bool {
        let (Some(macs), Some(elements)) = (geo.macs(), geo.patch_elements()) else {
            return false;
        };
        let bytes = geo
            .ty
            .bit_width()
            .and_then(|b| elements.checked_mul(i64::from(b / 8)));
        macs >= self.min_macs && bytes.is_some_and(|b| b <= self.max_patch_bytes)
    }

    /// The plan for `geo`, if it pays: the cut taking fewer parts, else the other one,
    /// else (when allowed) the preferred one after transposing the input.
    fn plan(&self, geo: &Geometry) -> Option<Plan> {
        if !self.pays(geo) {
            return None;
        }
        let preferred = geo.out_positions() < geo.window_positions();
        let mut tries = vec![(preferred, false), (!preferred, false)];
        if self.transpose_input {
            tries.push((preferred, true));
        }
        tries
            .into_iter()
            .filter_map(|(by_output, transpose)| Plan::new(geo, by_output, transpose))
            .find(|p| p.parts <= self.max_slices)
    }
}

#[cfg(test)]
mod tests;
