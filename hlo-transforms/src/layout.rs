//! Layout assignment and layout normalization.
//!
//! **Layout assignment** (`layout-assignment`) gives every array a layout, from these
//! constraints, in order:
//! 1. the entry parameters and result take `entry_computation_layout` when the module
//!    has one (a result in another layout gets a `copy` into it);
//! 2. a layout already written is kept; a missing one becomes the default descending
//!    layout (`{rank-1, ..., 0}`). A module before XLA's layout assignment writes layouts
//!    that mean nothing: [`crate::ChooseLayouts`] (which the runtime runs on every such
//!    module) chooses them instead, as XLA does;
//! 3. the backend's operand constraints: dot operands in the default layout, custom-call
//!    operands in their `operand_layout_constraints`; elementwise operands in their
//!    result's layout. A conflicting operand gets a `copy` into the required layout.
//!
//! **Layout normalization** (`layout-normalization`) makes physical data movement
//! explicit, so that later passes see every array in the default layout: a `copy` that
//! changes layout becomes `bitcast` (to the operand's physical shape), `transpose` (in the
//! default layout) and `bitcast` (back to the logical shape); a `transpose` whose result
//! layout makes it a no-op in memory becomes a `bitcast`; a reshape with a non-default
//! layout on either side becomes transpose (to the default layout), bitcast (the reshape
//! itself), transpose (to the result's layout).

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{self, default_layouts, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::{Layout, Shape};
use hlo::Opcode;

/// The layout-assignment pass.
#[derive(Debug, Default)]
pub struct LayoutAssignment;

/// The layout-normalization pass.
#[derive(Debug, Default)]
pub struct LayoutNormalization;

fn layout_of(s: &Shape) -> Option<Vec<i64>> {
    s.layout().map(|l| l.minor_to_major.clone())
}

/// Replaces operand `k` of `user` by a copy of it in layout `m2m`.
fn copy_into(comp: &mut Computation, names: &mut NameGen, user: InstrId, k: usize, m2m: &[i64]) {
    let v = comp.instr(user).operands[k];
    let mut shape = (*comp.instr(v).shape).clone();
    shape.set_layout(Some(Layout::new(m2m.to_vec())));
    let c = Instruction::new(
        names.fresh(&format!("copy.{}", comp.instr(v).name)),
        Opcode::Copy,
        shape,
        vec![v],
    );
    let c = edit::add(comp, c);
    comp.instr_mut(user).operands[k] = c;
    comp.recompute_users();
}

impl Pass for LayoutAssignment {
    fn name(&self) -> &str {
        "layout-assignment"
    }

    fn description(&self) -> &str {
        "assigns layouts (entry layout, defaults, dot/custom-call/elementwise operand constraints), copying on conflicts"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        let entry_layout = module.entry_computation_layout().cloned();
        let entry = module.entry.index();
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            if ci == entry {
                if let Some(l) = &entry_layout {
                    for (k, &p) in comp.params.clone().iter().enumerate() {
                        if let Some(s) = l.parameters.get(k) {
                            if comp.instr(p).shape.compatible(s)
                                && comp.instr(p).shape.as_ref() != s
                            {
                                comp.instr_mut(p).set_shape(s.clone());
                                changed = true;
                            }
                        }
                    }
                }
            }
            for id in comp.instruction_ids().to_vec() {
                changed |= default_layouts(comp.instr_mut(id).shape_mut());
            }
            for id in comp.def_before_use_order().into_owned() {
                let i = comp.instr(id).clone();
                let required: Vec<(usize, Vec<i64>)> = match i.opcode {
                    Opcode::Dot => (0..i.operands.len())
                        .map(|k| {
                            (
                                k,
                                Layout::row_major(comp.instr(i.operands[k]).shape.rank())
                                    .minor_to_major,
                            )
                        })
                        .collect(),
                    Opcode::CustomCall => match i.attr(&AttrName::OperandLayoutConstraints) {
                        Some(AttrValue::Shapes(v)) => v
                            .iter()
                            .enumerate()
                            .filter_map(|(k, s)| Some((k, layout_of(s)?)))
                            .collect(),
                        _ => Vec::new(),
                    },
                    op if op.is_elementwise()
                        && op != Opcode::BitcastConvert
                        && i.shape.is_array() =>
                    {
                        let Some(l) = layout_of(&i.shape) else {
                            continue;
                        };
                        (0..i.operands.len())
                            .filter(|&k| comp.instr(i.operands[k]).shape.rank() == i.shape.rank())
                            .map(|k| (k, l.clone()))
                            .collect()
                    }
                    _ => Vec::new(),
                };
                for (k, m2m) in required {
                    let Some(&op) = i.operands.get(k) else {
                        continue;
                    };
                    let s = &comp.instr(op).shape;
                    if s.is_array()
                        && s.rank() == m2m.len()
                        && layout_of(s).as_deref() != Some(&m2m[..])
                    {
                        copy_into(comp, &mut names, id, k, &m2m);
                        changed = true;
                    }
                }
            }
            if ci == entry {
                if let Some(l) = &entry_layout {
                    let root = comp.root;
                    let rs = (*comp.instr(root).shape).clone();
                    if rs.is_array() && rs.compatible(&l.result) && rs != l.result {
                        let c = Instruction::new(
                            names.fresh("copy.result"),
                            Opcode::Copy,
                            l.result.clone(),
                            vec![root],
                        );
                        let c = edit::add(comp, c);
                        comp.root = c;
                        changed = true;
                    }
                }
            }
            edit::repair_order(comp);
        }
        Ok(changed)
    }
}

/// True for the default descending layout.
fn is_default(m2m: &[i64]) -> bool {
    m2m.iter()
        .enumerate()
        .all(|(i, &d)| d == (m2m.len() - 1 - i) as i64)
}

/// `x` in the layout of `out` (same dimensions): bitcast to `x`'s physical shape, a
/// transpose in the default layout, bitcast to `out`.
fn physical_transpose(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    x: InstrId,
    out: &Shape,
) -> InstrId {
    let xs = (*comp.instr(x).shape).clone();
    let (Some(lx), Some(ly), Some(ty)) = (layout_of(&xs), layout_of(out), out.element_type())
    else {
        return x;
    };
    let rank = out.rank();
    let (mx, my) = (major_to_minor(&lx), major_to_minor(&ly));
    let d = out.dims();
    let px: Vec<i64> = mx.iter().map(|&k| d[k]).collect();
    let py: Vec<i64> = my.iter().map(|&k| d[k]).collect();
    let perm: Vec<i64> = my
        .iter()
        .map(|k| mx.iter().position(|j| j == k).unwrap_or(0) as i64)
        .collect();
    let with =
        |dims: Vec<i64>| Shape::array_with(ty, dims, Vec::new(), Some(Layout::row_major(rank)));
    let b1 = edit::add(
        comp,
        Instruction::new(names.fresh(base), Opcode::Bitcast, with(px), vec![x]),
    );
    let t = Instruction::new(names.fresh(base), Opcode::Transpose, with(py), vec![b1])
        .with_attr(AttrName::Dimensions, AttrValue::IntList(perm));
    let t = edit::add(comp, t);
    edit::add(
        comp,
        Instruction::new(names.fresh(base), Opcode::Bitcast, out.clone(), vec![t]),
    )
}

/// Dimensions in major-to-minor order for a layout.
fn major_to_minor(m2m: &[i64]) -> Vec<usize> {
    m2m.iter().rev().map(|&d| d as usize).collect()
}

impl Pass for LayoutNormalization {
    fn name(&self) -> &str {
        "layout-normalization"
    }

    fn description(&self) -> &str {
        "makes layout changes explicit: layout-changing copies become bitcast-transpose-bitcast"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            for id in comp.def_before_use_order().into_owned() {
                let i = comp.instr(id).clone();
                if !i.shape.is_array() || i.operands.len() != 1 {
                    continue;
                }
                let x = i.operands[0];
                let xs = (*comp.instr(x).shape).clone();
                let (Some(lx), Some(ly)) = (layout_of(&xs), layout_of(&i.shape)) else {
                    continue;
                };
                let rank = i.shape.rank();
                if ly.len() != rank || lx.len() != xs.rank() {
                    continue;
                }
                if i.opcode != Opcode::Reshape && xs.rank() != rank {
                    continue;
                }
                match i.opcode {
                    Opcode::Copy if lx != ly => {
                        let new = physical_transpose(comp, &mut names, &i.name, x, &i.shape);
                        edit::replace_uses(comp, id, new);
                        changed = true;
                    }
                    Opcode::Reshape if !is_default(&lx) || !is_default(&ly) => {
                        // Transpose to the default layout, reshape there (a bitcast),
                        // transpose to the result's layout.
                        let mut cur = x;
                        if !is_default(&lx) {
                            let mut s = xs.clone();
                            s.set_layout(Some(Layout::row_major(xs.rank())));
                            cur = physical_transpose(comp, &mut names, &i.name, cur, &s);
                        }
                        let mut mid = (*i.shape).clone();
                        mid.set_layout(Some(Layout::row_major(rank)));
                        let bc =
                            Instruction::new(names.fresh(&i.name), Opcode::Bitcast, mid, vec![cur]);
                        cur = edit::add(comp, bc);
                        if !is_default(&ly) {
                            cur = physical_transpose(comp, &mut names, &i.name, cur, &i.shape);
                        }
                        edit::replace_uses(comp, id, cur);
                        changed = true;
                    }
                    Opcode::Transpose => {
                        // A no-op in memory when the physical orders agree: logical dim
                        // perm[k] of the operand is dim k of the result.
                        let Some(perm) = i.dimensions() else { continue };
                        let mx = major_to_minor(&lx);
                        let my: Vec<usize> = major_to_minor(&ly)
                            .iter()
                            .map(|&k| perm[k] as usize)
                            .collect();
                        if mx == my {
                            let b = edit::add(
                                comp,
                                Instruction::new(
                                    names.fresh(&i.name),
                                    Opcode::Bitcast,
                                    (*i.shape).clone(),
                                    vec![x],
                                ),
                            );
                            edit::replace_uses(comp, id, b);
                            changed = true;
                        }
                    }
                    _ => {}
                }
            }
            if changed {
                edit::repair_order(comp);
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}
