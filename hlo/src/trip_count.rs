//! The trip count of a while loop, when it is known before the loop runs: XLA's
//! `known_trip_count` backend config, else the count of a counted loop (a module before
//! XLA's passes, as JAX lowers `fori_loop`): a tuple element that starts at an integer
//! constant `i0`, that the condition compares `i < n` (or `n > i`) with a constant `n`,
//! and that the body increments by a positive constant `s` runs `ceil(max(n - i0, 0) / s)`
//! times. Anything else is `None` (unknown). One analysis for every crate that weighs a
//! loop by its trips (spmd's collective bytes, plan's `Thunk::While`).

use crate::attrs::ComparisonDirection;
use crate::literal::ArrayData;
use crate::{Computation, InstrId, Instruction, Literal, Module, Opcode};

/// The trip count of while loop `w` of computation `c`: its `known_trip_count` backend
/// config, else [`counted_trips`].
pub fn known_trips(module: &Module, c: &Computation, w: &Instruction) -> Option<u64> {
    configured_trips(w).or_else(|| counted_trips(module, c, w))
}

/// The `n` of a `"known_trip_count":{"n":"..."}` backend config (XLA writes it after its
/// while-loop analysis).
fn configured_trips(w: &Instruction) -> Option<u64> {
    let config = w.backend_config()?.as_str();
    let rest = &config[config.find("\"known_trip_count\"")?..];
    let rest = &rest[rest.find("\"n\"")? + 3..];
    let digits: String = rest
        .chars()
        .skip_while(|ch| !ch.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u64>().ok()
}

/// The trip count of while loop `w` of computation `c`, when it is a counted loop.
pub fn counted_trips(module: &Module, c: &Computation, w: &Instruction) -> Option<u64> {
    let init = c.instr(*w.operands().first()?);
    let cond = module.get_computation(w.while_condition()?)?;
    let body = module.get_computation(w.while_body()?)?;
    let cmp = cond.root_instr();
    if cmp.opcode() != Opcode::Compare {
        return None;
    }
    let (counter, bound) = match cmp.comparison_direction()? {
        ComparisonDirection::Lt => (cmp.operands()[0], cmp.operands()[1]),
        ComparisonDirection::Gt => (cmp.operands()[1], cmp.operands()[0]),
        _ => return None,
    };
    let k = element_of_parameter(cond, counter)?;
    let n = int_constant(cond.instr(bound))?;
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
    let step = |counter: InstrId, step: InstrId| {
        (element_of_parameter(body, counter) == Some(k))
            .then(|| int_constant(body.instr(step)))
            .flatten()
    };
    let s = step(x, y).or_else(|| step(y, x)).filter(|&s| s > 0)?;
    let span = n.checked_sub(i0)?.max(0);
    u64::try_from(span.div_euclid(s) + i64::from(span.rem_euclid(s) != 0)).ok()
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
        ArrayData::U16(v) => v.first().map(|&x| x as i64),
        ArrayData::U32(v) => v.first().map(|&x| x as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trips(bound: &str, compare: &str, step: &str, config: &str) -> Option<u64> {
        let text = format!(
            "HloModule m\n\ncond {{\n  p = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
             n = s32[] {bound}\n  ROOT lt = pred[] {compare}\n}}\n\n\
             body {{\n  p = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
             one = s32[] constant({step})\n  j = s32[] add(one, i)\n  x = f32[2] get-tuple-element(p), index=1\n  \
             ROOT t = (s32[], f32[2]) tuple(j, x)\n}}\n\n\
             ENTRY e {{\n  x = f32[2] parameter(0)\n  b = s32[] parameter(1)\n  zero = s32[] constant(3)\n  \
             init = (s32[], f32[2]) tuple(zero, x)\n  ROOT w = (s32[], f32[2]) while(init), condition=cond, body=body{config}\n}}\n"
        );
        let m = crate::parse_module(&text).expect("parses");
        let e = m.entry();
        known_trips(&m, e, e.root_instr())
    }

    const LT: &str = "compare(i, n), direction=LT";

    #[test]
    fn counts_counted_loops_only() {
        assert_eq!(trips("constant(8)", LT, "1", ""), Some(5));
        assert_eq!(trips("constant(1)", LT, "1", ""), Some(0));
        // Steps of 2 from 3 below 8: 3, 5, 7.
        assert_eq!(trips("constant(8)", LT, "2", ""), Some(3));
        assert_eq!(trips("constant(9)", LT, "2", ""), Some(3));
        assert_eq!(
            trips("constant(8)", "compare(n, i), direction=GT", "1", ""),
            Some(5)
        );
        // A bound that is not a constant, a step that does not advance, another
        // comparison: unknown.
        assert_eq!(trips("multiply(i, i)", LT, "1", ""), None);
        assert_eq!(trips("constant(8)", LT, "0", ""), None);
        assert_eq!(
            trips("constant(8)", "compare(i, n), direction=NE", "1", ""),
            None
        );
    }

    #[test]
    fn reads_the_known_trip_count_config() {
        let config = r#", backend_config={"known_trip_count":{"n":"7"}}"#;
        assert_eq!(trips("multiply(i, i)", LT, "1", config), Some(7));
    }
}
