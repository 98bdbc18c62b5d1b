//! The trip count of a counted loop that carries no `known_trip_count` backend config (a
//! module before XLA's passes, as JAX lowers `fori_loop`): a tuple element that starts at
//! an integer constant `i0`, that the condition compares `< n` with a constant `n`, and
//! that the body increments by the constant 1 runs `max(n - i0, 0)` times. Anything else
//! is `None`, and `collective_bytes` says the count is unknown.

use hlo::attrs::ComparisonDirection;
use hlo::literal::ArrayData;
use hlo::{Computation, InstrId, Instruction, Literal, Module, Opcode};

/// The trip count of while loop `w` of computation `c`, when it is a counted loop.
pub(crate) fn counted_trips(module: &Module, c: &Computation, w: &Instruction) -> Option<u64> {
    let init = c.instr(*w.operands().first()?);
    let cond = module.get_computation(w.while_condition()?)?;
    let body = module.get_computation(w.while_body()?)?;
    let cmp = cond.root_instr();
    if cmp.opcode() != Opcode::Compare
        || cmp.comparison_direction() != Some(ComparisonDirection::Lt)
    {
        return None;
    }
    let k = element_of_parameter(cond, cmp.operands()[0])?;
    let n = int_constant(cond.instr(cmp.operands()[1]))?;
    if init.opcode() != Opcode::Tuple {
        return None;
    }
    let i0 = int_constant(c.instr(*init.operands().get(k)?))?;
    let next = body.root_instr();
    if next.opcode() != Opcode::Tuple {
        return None;
    }
    let add = body.instr(*next.operands().get(k)?);
    if add.opcode() != Opcode::Add {
        return None;
    }
    let (x, y) = (add.operands()[0], add.operands()[1]);
    let steps_by_one = |counter: InstrId, step: InstrId| {
        element_of_parameter(body, counter) == Some(k) && int_constant(body.instr(step)) == Some(1)
    };
    if !(steps_by_one(x, y) || steps_by_one(y, x)) {
        return None;
    }
    Some((n - i0).max(0) as u64)
}

/// `k` when `id` is `get-tuple-element(parameter(0)), index=k` of `comp`.
fn element_of_parameter(comp: &Computation, id: InstrId) -> Option<usize> {
    let g = comp.instr(id);
    if g.opcode() != Opcode::GetTupleElement {
        return None;
    }
    let p = comp.instr(*g.operands().first()?);
    (p.opcode() == Opcode::Parameter).then_some(g.tuple_index()? as usize)
}

/// The value of a scalar integer constant.
fn int_constant(i: &Instruction) -> Option<i64> {
    if i.opcode() != Opcode::Constant || !i.shape().dims().is_empty() {
        return None;
    }
    let Some(Literal::Array(a)) = i.literal() else {
        return None;
    };
    match a.data() {
        ArrayData::S8(v) => v.first().map(|&x| x as i64),
        ArrayData::S16(v) => v.first().map(|&x| x as i64),
        ArrayData::S32(v) => v.first().map(|&x| x as i64),
        ArrayData::S64(v) => v.first().copied(),
        ArrayData::U8(v) => v.first().map(|&x| x as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trips(bound: &str) -> Option<u64> {
        let text = format!(
            "HloModule m\n\ncond {{\n  p = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
             n = s32[] {bound}\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\n\
             body {{\n  p = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
             one = s32[] constant(1)\n  j = s32[] add(one, i)\n  x = f32[2] get-tuple-element(p), index=1\n  \
             ROOT t = (s32[], f32[2]) tuple(j, x)\n}}\n\n\
             ENTRY e {{\n  x = f32[2] parameter(0)\n  b = s32[] parameter(1)\n  zero = s32[] constant(3)\n  \
             init = (s32[], f32[2]) tuple(zero, x)\n  ROOT w = (s32[], f32[2]) while(init), condition=cond, body=body\n}}\n"
        );
        let m = hlo::parse_module(&text).expect("parses");
        let e = m.entry();
        counted_trips(&m, e, e.root_instr())
    }

    #[test]
    fn counts_counted_loops_only() {
        assert_eq!(trips("constant(8)"), Some(5));
        assert_eq!(trips("constant(1)"), Some(0));
        // A bound that is not a constant: unknown.
        assert_eq!(trips("multiply(i, i)"), None);
    }
}
