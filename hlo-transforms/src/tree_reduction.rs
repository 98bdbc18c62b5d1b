//! Tree-reduction rewriting: a reduce over one dimension longer than
//! [`TreeReductionRewriter::threshold`] becomes two reduces, so that no single reduction
//! is long (on GPUs this avoids atomics): with `k = ceil(sqrt(n))`, the input is padded
//! along the dimension to `k * k` with the init value, reshaped to `[k, k]` there,
//! reduced over the inner `k`, then over the outer `k`.
//!
//! Only for one-input reduces whose reducer is a recognized binary op (add, multiply,
//! max, min, and, or) and whose init is that op's identity (padding with the identity
//! and applying the init twice then changes nothing). Floats: the sum is taken in another
//! order, so rounding may differ (XLA accepts this).

use super::algsimp::{reduce_dot::is_identity, reducer_kind, scalar};
use hlo::attrs::{AttrName, AttrValue, PaddingConfig, PaddingDim};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`tree-reduction-rewriter`).
#[derive(Debug)]
pub struct TreeReductionRewriter {
    /// Reductions over more elements than this are split.
    pub threshold: i64,
}

impl Default for TreeReductionRewriter {
    fn default() -> TreeReductionRewriter {
        TreeReductionRewriter { threshold: 4096 }
    }
}

fn ceil_sqrt(n: i64) -> i64 {
    let mut k = (n as f64).sqrt() as i64;
    while k * k < n {
        k += 1;
    }
    while k > 1 && (k - 1) * (k - 1) >= n {
        k -= 1;
    }
    k
}

impl Pass for TreeReductionRewriter {
    fn name(&self) -> &str {
        "tree-reduction-rewriter"
    }

    fn description(&self) -> &str {
        "splits a reduce over a long dimension into two reduces over about sqrt(n) elements"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let kinds: Vec<Option<Opcode>> = module.computations.iter().map(reducer_kind).collect();
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            let candidates: Vec<InstrId> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Reduce && i.operands.len() == 2)
                .map(|(id, _)| id)
                .collect();
            for id in candidates {
                let r = comp.instr(id).clone();
                let (x, init) = (r.operands[0], r.operands[1]);
                let Some(&[d]) = r.dimensions() else { continue };
                let Ok(d) = usize::try_from(d) else { continue };
                let in_shape = (*comp.instr(x).shape).clone();
                let Some(&n) = in_shape.dims().get(d) else {
                    continue;
                };
                let Some(ty) = in_shape.element_type() else {
                    continue;
                };
                let kind = r
                    .to_apply()
                    .and_then(|c| kinds.get(c.index()).copied().flatten());
                let identity = match (kind, scalar::splat(comp, init)) {
                    (Some(k), Some(v)) => is_identity(k, ty, v),
                    _ => false,
                };
                if n <= self.threshold || !identity || r.shape.is_tuple() {
                    continue;
                }
                let k = ceil_sqrt(n);
                let mut cur = x;
                let mut dims = in_shape.dims().to_vec();
                if k * k > n {
                    let pad = PaddingConfig {
                        dims: (0..dims.len())
                            .map(|i| PaddingDim {
                                low: 0,
                                high: if i == d { k * k - n } else { 0 },
                                interior: 0,
                            })
                            .collect(),
                    };
                    dims[d] = k * k;
                    let p = Instruction::new(
                        names.fresh(&r.name),
                        Opcode::Pad,
                        Shape::array(ty, dims.clone()),
                        vec![cur, init],
                    )
                    .with_attr(AttrName::Padding, AttrValue::Padding(pad));
                    cur = edit::add(comp, p);
                }
                let mut split = dims.clone();
                split[d] = k;
                split.insert(d + 1, k);
                cur = edit::add(
                    comp,
                    Instruction::new(
                        names.fresh(&r.name),
                        Opcode::Reshape,
                        Shape::array(ty, split.clone()),
                        vec![cur],
                    ),
                );
                let mut inner_dims = split.clone();
                inner_dims.remove(d + 1);
                let mut inner = r.clone();
                inner.users.clear();
                inner.name = names.fresh(&r.name);
                inner.operands = vec![cur, init];
                inner.set_shape(Shape::array(ty, inner_dims));
                inner.set_attr(AttrName::Dimensions, AttrValue::IntList(vec![d as i64 + 1]));
                let inner = edit::add(comp, inner);
                let mut outer = r.clone();
                outer.users.clear();
                outer.name = names.fresh(&r.name);
                outer.operands = vec![inner, init];
                let outer = edit::add(comp, outer);
                edit::replace_uses(comp, id, outer);
                edit::remove_instructions(comp, &std::iter::once(id).collect());
                changed = true;
            }
            if changed {
                edit::repair_order(comp);
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
