//! Tree-reduction rewriting: a long reduction becomes two reduces, so that no single
//! reduction is long. One reduced dimension `d` of `n` elements is padded with the init
//! value to `outer * inner` elements and reshaped to `[outer, inner]` there; the first
//! reduce folds `inner` and every other reduced dimension, the second folds `outer`.
//!
//! Where to split is a rule: by default ([`TreeReductionRewriter::default`]) any reduce over
//! one dimension longer than 4096 splits it into about `sqrt(n)` by `sqrt(n)`, and a reduce
//! over several dimensions of more than 4096 elements per output, with too few outputs to
//! spread over threads, splits its longest reduced dimension the same way
//! ([`multi_dim_split`]); a target
//! gives its own ([`TreeReductionRewriter::with_rule`]: a GPU splits a reduction whose
//! launch would leave the device idle, so that the first reduce spreads over many blocks).
//!
//! Only for one-input reduces whose reducer is a recognized binary op (add, multiply,
//! max, min, and, or) and whose init is that op's identity (padding with the identity
//! and applying the init twice then changes nothing), on inputs in the default layout.
//! Floats: the sum is taken in another order, so rounding may differ (XLA accepts this).

use std::fmt;
use std::sync::Arc;

use super::algsimp::{reduce_dot::is_identity, reducer_kind, scalar};
use hlo::attrs::{AttrName, AttrValue, PaddingConfig, PaddingDim};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::{ElementType, Opcode};

/// Where a reduce splits: reduced dimension `dim` of its input, whose `n` elements become
/// `outer` parts of `ceil(n / outer)` (padded with the init value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceSplit {
    /// The reduced dimension of the input that splits.
    pub dim: usize,
    /// Its parts, folded by the second reduce (at least 2, fewer than its extent).
    pub outer: i64,
}

/// A target's choice of where the reduce `id` of a computation splits (`None`: it stays
/// whole). Asked only for reduces the rewriting can take (see the module docs).
pub type SplitRule =
    Arc<dyn Fn(&Module, &Computation, InstrId) -> Option<ReduceSplit> + Send + Sync>;

/// The pass (`tree-reduction-rewriter`).
pub struct TreeReductionRewriter {
    rule: SplitRule,
}

impl fmt::Debug for TreeReductionRewriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TreeReductionRewriter")
    }
}

/// Reductions of one dimension longer than this split under the default rule.
pub const DEFAULT_THRESHOLD: i64 = 4096;

impl Default for TreeReductionRewriter {
    fn default() -> TreeReductionRewriter {
        TreeReductionRewriter::with_threshold(DEFAULT_THRESHOLD)
    }
}

impl TreeReductionRewriter {
    /// Splits every reduce over one dimension longer than `threshold` into about
    /// `sqrt(n)` by `sqrt(n)`, and every reduce over several dimensions of more than
    /// `threshold` elements per output with fewer than [`FEW_OUTPUTS`] outputs
    /// ([`multi_dim_split`]).
    pub fn with_threshold(threshold: i64) -> TreeReductionRewriter {
        TreeReductionRewriter::with_rule(Arc::new(move |_, comp, id| {
            let r = comp.instr(id);
            let input = &comp.instr(r.operands[0]).shape;
            let dims = input.dims();
            match r.dimensions()? {
                &[d] => {
                    let d = usize::try_from(d).ok()?;
                    let n = *dims.get(d)?;
                    (n > threshold).then(|| ReduceSplit {
                        dim: d,
                        outer: ceil_sqrt(n),
                    })
                }
                // bf16/f16 sums over several dimensions fold in XLA:CPU's order (the
                // column kernel, checked bit for bit against XLA): they stay whole.
                _ if keeps_order(input.element_type()?) => None,
                reduced => multi_dim_split(dims, reduced, threshold),
            }
        }))
    }
    /// Splits only reduces over several dimensions ([`multi_dim_split`] at
    /// [`DEFAULT_THRESHOLD`]): the CPU's rule, whose emitters fold one long dimension in
    /// their own order but run a reduce with few outputs as few blocks.
    pub fn several_dimensions() -> TreeReductionRewriter {
        TreeReductionRewriter::with_rule(Arc::new(|_, comp, id| {
            let r = comp.instr(id);
            let input = &comp.instr(r.operands[0]).shape;
            if keeps_order(input.element_type()?) {
                return None;
            }
            multi_dim_split(input.dims(), r.dimensions()?, DEFAULT_THRESHOLD)
        }))
    }

    /// Splits where `rule` says.
    pub fn with_rule(rule: SplitRule) -> TreeReductionRewriter {
        TreeReductionRewriter { rule }
    }
}

/// Below this many outputs a reduce over several dimensions is too few loop blocks to
/// keep the CPU's threads busy: each output is one block, and one long block per output
/// leaves threads idle (three 1M-element sums ran as three blocks on two threads).
pub const FEW_OUTPUTS: i64 = 16;

/// The default rule for a reduce over several dimensions (`reduced`, of an input of
/// extents `dims`): when the elements per output exceed `threshold` and the outputs are
/// fewer than [`FEW_OUTPUTS`], the longest reduced dimension (the most major among equals,
/// so that each part of the first reduce reads whole rows) splits into about its square
/// root parts; the first reduce then has `outputs * parts` blocks, each still reducing the
/// other reduced dimensions whole. A reduced dimension of fewer than 4 elements does not
/// split (no part count between 2 and its extent); `None` also when no dimension can.
pub fn multi_dim_split(dims: &[i64], reduced: &[i64], threshold: i64) -> Option<ReduceSplit> {
    if reduced.len() < 2 {
        return None;
    }
    let mut per_output: i64 = 1;
    for &d in reduced {
        per_output = per_output.checked_mul(*dims.get(usize::try_from(d).ok()?)?)?;
    }
    let outputs: i64 = dims
        .iter()
        .enumerate()
        .filter(|(i, _)| !reduced.contains(&(*i as i64)))
        .map(|(_, &e)| e)
        .product();
    if per_output <= threshold || outputs >= FEW_OUTPUTS {
        return None;
    }
    let mut best: Option<(usize, i64)> = None;
    for &d in reduced {
        let d = usize::try_from(d).ok()?;
        let e = dims[d];
        if best.is_none_or(|(bd, be)| e > be || (e == be && d < bd)) {
            best = Some((d, e));
        }
    }
    let (dim, n) = best?;
    let outer = ceil_sqrt(n);
    (n >= 4 && outer >= 2 && outer < n).then_some(ReduceSplit { dim, outer })
}

/// Whether reduces of `ty` over several dimensions must keep the emitters' order: floats
/// narrower than `f32`, whose rounding the CPU emitters match to XLA:CPU's bit for bit.
fn keeps_order(ty: ElementType) -> bool {
    ty.is_float() && !matches!(ty, ElementType::F32 | ElementType::F64)
}

/// The smallest `k` with `k * k >= n`.
pub fn ceil_sqrt(n: i64) -> i64 {
    let mut k = (n as f64).sqrt() as i64;
    while k * k < n {
        k += 1;
    }
    while k > 1 && (k - 1) * (k - 1) >= n {
        k -= 1;
    }
    k
}

/// Whether the rewriting can take reduce `id`: one input in the default layout, a
/// recognized reducer, its identity as the init, an array result.
fn splittable(comp: &Computation, id: InstrId, kinds: &[Option<Opcode>]) -> bool {
    let r = comp.instr(id);
    if r.opcode != Opcode::Reduce || r.operands.len() != 2 || r.shape.is_tuple() {
        return false;
    }
    let input = &comp.instr(r.operands[0]).shape;
    let default_layout = input.as_array().is_some_and(|a| {
        a.layout().is_none_or(|l| {
            let rank = a.dims().len() as i64;
            l.minor_to_major.iter().copied().eq((0..rank).rev())
        })
    });
    let Some(ty) = input.element_type() else {
        return false;
    };
    let kind = r
        .to_apply()
        .and_then(|c| kinds.get(c.index()).copied().flatten());
    let identity = match (kind, scalar::splat(comp, r.operands[1])) {
        (Some(k), Some(v)) => is_identity(k, ty, v),
        _ => false,
    };
    default_layout && identity
}

/// Rewrites reduce `id` of `comp` as two reduces split at `split`; returns the second.
fn split_reduce(
    comp: &mut Computation,
    id: InstrId,
    split: ReduceSplit,
    names: &mut NameGen,
) -> Option<InstrId> {
    let r = comp.instr(id).clone();
    let (x, init) = (r.operands[0], r.operands[1]);
    let in_shape = (*comp.instr(x).shape).clone();
    let ty = in_shape.element_type()?;
    let d = split.dim;
    let n = *in_shape.dims().get(d)?;
    let reduced = r.dimensions()?.to_vec();
    if !reduced.contains(&(d as i64)) || split.outer < 2 || split.outer >= n {
        return None;
    }
    let inner = (n + split.outer - 1) / split.outer;
    let mut cur = x;
    let mut dims = in_shape.dims().to_vec();
    if split.outer * inner > n {
        let pad = PaddingConfig {
            dims: (0..dims.len())
                .map(|i| PaddingDim {
                    low: 0,
                    high: if i == d { split.outer * inner - n } else { 0 },
                    interior: 0,
                })
                .collect(),
        };
        dims[d] = split.outer * inner;
        let p = Instruction::new(
            names.fresh(&r.name),
            Opcode::Pad,
            Shape::array(ty, dims.clone()),
            vec![cur, init],
        )
        .with_attr(AttrName::Padding, AttrValue::Padding(pad));
        cur = edit::add(comp, p);
    }
    let mut split_dims = dims.clone();
    split_dims[d] = split.outer;
    split_dims.insert(d + 1, inner);
    cur = edit::add(
        comp,
        Instruction::new(
            names.fresh(&r.name),
            Opcode::Reshape,
            Shape::array(ty, split_dims.clone()),
            vec![cur],
        ),
    );
    // The first reduce folds `inner` and the other reduced dimensions (renumbered past
    // the new one); `outer` stays, at its place among the kept dimensions.
    let first_reduced: Vec<i64> = reduced
        .iter()
        .map(|&r| if r < d as i64 { r } else { r + 1 })
        .collect();
    let first_dims: Vec<i64> = split_dims
        .iter()
        .enumerate()
        .filter(|(i, _)| !first_reduced.contains(&(*i as i64)))
        .map(|(_, &e)| e)
        .collect();
    let outer_at = d as i64 - reduced.iter().filter(|&&r| r < d as i64).count() as i64;
    let mut first = r.clone();
    first.users.clear();
    first.name = names.fresh(&r.name);
    first.operands = vec![cur, init];
    first.set_shape(Shape::array(ty, first_dims));
    first.set_attr(AttrName::Dimensions, AttrValue::IntList(first_reduced));
    let first = edit::add(comp, first);
    let mut second = r.clone();
    second.users.clear();
    second.name = names.fresh(&r.name);
    second.operands = vec![first, init];
    second.set_attr(AttrName::Dimensions, AttrValue::IntList(vec![outer_at]));
    let second = edit::add(comp, second);
    edit::replace_uses(comp, id, second);
    edit::remove_instructions(comp, &std::iter::once(id).collect());
    Some(second)
}

impl Pass for TreeReductionRewriter {
    fn name(&self) -> &str {
        "tree-reduction-rewriter"
    }

    fn description(&self) -> &str {
        "splits a long reduce into two reduces (by default over about sqrt(n) elements each)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let kinds: Vec<Option<Opcode>> = module.computations.iter().map(reducer_kind).collect();
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &module.computations[ci];
            let splits: Vec<(InstrId, ReduceSplit)> = comp
                .instructions()
                .filter(|&(id, _)| splittable(comp, id, &kinds))
                .filter_map(|(id, _)| (self.rule)(module, comp, id).map(|s| (id, s)))
                .collect();
            let comp = &mut module.computations[ci];
            let mut comp_changed = false;
            for (id, split) in splits {
                comp_changed |= split_reduce(comp, id, split, &mut names).is_some();
            }
            if comp_changed {
                edit::repair_order(comp);
                changed = true;
            }
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ceil_sqrt_is_exact() {
        for n in 1..2000 {
            let k = super::ceil_sqrt(n);
            assert!(k * k >= n && (k - 1) * (k - 1) < n, "{n} -> {k}");
        }
    }
}
