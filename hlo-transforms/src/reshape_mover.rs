//! Reshape moving: an elementwise instruction whose operands are all either the same kind
//! of reshape (or the same transpose) of arrays of one shape, or broadcasts of scalars,
//! is computed before the reshape instead: `add(reshape(a), reshape(b))` becomes
//! `reshape(add(a, b))`. Reshapes then meet and cancel further down (the algebraic
//! simplifier merges chains). A reshape or transpose read elsewhere too moves only when
//! every instruction reading it moves it the same way (otherwise it stays alive and the
//! move adds one). Exact: the same elementwise function is applied to the same elements.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`reshape-mover`).
#[derive(Debug, Default)]
pub struct ReshapeMover;

impl Pass for ReshapeMover {
    fn name(&self) -> &str {
        "reshape-mover"
    }

    fn description(&self) -> &str {
        "moves reshapes and transposes below elementwise ops so that they can cancel"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            let order = comp.def_before_use_order().into_owned();
            let mut any = false;
            for id in order {
                if let Some(new) = move_one(comp, id, &mut names) {
                    edit::replace_uses(comp, id, new);
                    any = true;
                }
            }
            if any {
                edit::repair_order(comp);
                changed = true;
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

fn is_scalar_broadcast(comp: &Computation, id: InstrId) -> bool {
    let i = comp.instr(id);
    i.opcode == Opcode::Broadcast && comp.instr(i.operands[0]).shape.rank() == 0
}

/// Whether `id` is an elementwise instruction whose operands are all `kind` movements
/// (reshapes, or transposes by `perm`) of arrays of `src_dims`, or scalar broadcasts.
fn reads_only(
    comp: &Computation,
    id: InstrId,
    kind: Opcode,
    perm: &Option<Vec<i64>>,
    src_dims: &[i64],
) -> bool {
    let e = comp.instr(id);
    e.opcode.is_elementwise()
        && e.opcode != Opcode::BitcastConvert
        && !e.shape.is_tuple()
        && !e.operands.is_empty()
        && e.operands.iter().all(|&o| {
            let oi = comp.instr(o);
            is_scalar_broadcast(comp, o)
                || (oi.opcode == kind
                    && oi.shape.dims() == e.shape.dims()
                    && comp.instr(oi.operands[0]).shape.dims() == src_dims
                    && (kind == Opcode::Reshape || oi.dimensions().map(<[i64]>::to_vec) == *perm))
        })
}

fn move_one(comp: &mut Computation, id: InstrId, names: &mut NameGen) -> Option<InstrId> {
    let e = comp.instr(id).clone();
    // bitcast-convert between widths changes the shape: not elementwise for this purpose.
    if !e.opcode.is_elementwise()
        || e.opcode == Opcode::BitcastConvert
        || e.shape.is_tuple()
        || e.operands.is_empty()
        || e.operands
            .iter()
            .any(|&o| comp.instr(o).shape.dims() != e.shape.dims())
    {
        return None;
    }
    // The first reshape/transpose operand fixes the kind of movement.
    let first = *e
        .operands
        .iter()
        .find(|&&o| matches!(comp.instr(o).opcode, Opcode::Reshape | Opcode::Transpose))?;
    let f = comp.instr(first);
    let kind = f.opcode;
    let perm = f.dimensions().map(<[i64]>::to_vec);
    let src_dims = comp.instr(f.operands[0]).shape.dims().to_vec();
    if !reads_only(comp, id, kind, &perm, &src_dims) {
        return None;
    }
    // A movement read elsewhere too: only when every reader moves it as well.
    for &o in &e.operands {
        let oi = comp.instr(o);
        if is_scalar_broadcast(comp, o) || oi.users.len() == 1 {
            continue;
        }
        if !oi
            .users
            .iter()
            .all(|&u| reads_only(comp, u, kind, &perm, &src_dims))
        {
            return None;
        }
    }
    let mut new_ops = Vec::with_capacity(e.operands.len());
    for &o in &e.operands {
        if is_scalar_broadcast(comp, o) {
            let oi = comp.instr(o).clone();
            let ty = oi.shape.element_type()?;
            let b = Instruction::new(
                names.fresh(&oi.name),
                Opcode::Broadcast,
                Shape::array(ty, src_dims.clone()),
                vec![oi.operands[0]],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(Vec::new()));
            new_ops.push(edit::add(comp, b));
        } else {
            new_ops.push(comp.instr(o).operands[0]);
        }
    }
    let ty = e.shape.element_type()?;
    let mut inner = e.clone();
    inner.users.clear();
    inner.name = names.fresh(&e.name);
    inner.operands = new_ops;
    inner.set_shape(Shape::array(ty, src_dims));
    let inner = edit::add(comp, inner);
    let mut outer = Instruction::new(names.fresh(&e.name), kind, (*e.shape).clone(), vec![inner]);
    if let (Opcode::Transpose, Some(p)) = (kind, perm) {
        outer.set_attr(AttrName::Dimensions, AttrValue::IntList(p));
    }
    Some(edit::add(comp, outer))
}
