//! Variadic (multi-operand) reductions on the GPU's row and column reduction emitters: an
//! argmax or argmin (a value and its index, the reducer choosing one pair by comparing
//! them), or several independent reductions over one index space. The lanes of a row or
//! the rows of a column tile reassociate the reduction as for one operand, so the
//! reducer must give the same result in any order: each of its results is either a
//! `select` between the accumulator's and the element's value of that operand (the whole
//! reducer picks values, never computes new ones: no rounding, whatever the type), or one
//! associative and commutative op of that operand's pair of values (as
//! `hlo::ir::reducer` classifies a single-operand reducer, with the same type rule). HLO
//! leaves a reduction's order unspecified; a selection reducer whose choice is a strict
//! order with ties broken by index (JAX's argmax and argmin) gives the evaluator's answer
//! in every order.
//!
//! A fusion whose root is a tuple (the variadic reduce's results, read by elementwise
//! epilogues at the output index) has that reduce as its hero ([`tuple_hero`]).

use std::collections::HashMap;

use hlo::{InstrId, Opcode};

/// Whether the `n`-operand reducer `comp` (parameters: `n` accumulators, then `n`
/// elements) may be reassociated by the GPU's lanes: every tuple result `k` is a `select`
/// of parameters `k` and `n + k`, or one associative and commutative op of them (on a type
/// of 32 bits or more, or a max or min of narrower floats). Complex values are refused.
pub fn reassociable_variadic(module: &hlo::Module, comp: hlo::CompId, n: usize) -> bool {
    let Some(c) = module.get_computation(comp) else {
        return false;
    };
    if n < 2 || c.parameters().len() != 2 * n {
        return false;
    }
    let root = c.root_instr();
    if root.opcode() != Opcode::Tuple || root.operands().len() != n {
        return false;
    }
    let param = |id: InstrId| -> Option<usize> {
        let i = c.instr(id);
        (i.opcode() == Opcode::Parameter)
            .then(|| i.parameter_number())
            .flatten()
            .and_then(|p| usize::try_from(p).ok())
    };
    root.operands().iter().enumerate().all(|(k, &r)| {
        let ri = c.instr(r);
        let Some(ty) = ri.shape().element_type() else {
            return false;
        };
        if ty.is_complex() || !ri.shape().is_scalar() {
            return false;
        }
        let pair = |a: InstrId, b: InstrId| {
            matches!((param(a), param(b)), (Some(x), Some(y)) if (x, y) == (k, n + k) || (x, y) == (n + k, k))
        };
        let ops = ri.operands();
        match ri.opcode() {
            Opcode::Select => ops.len() == 3 && pair(ops[1], ops[2]),
            Opcode::Maximum | Opcode::Minimum => ops.len() == 2 && pair(ops[0], ops[1]),
            Opcode::Add | Opcode::Multiply | Opcode::And | Opcode::Or | Opcode::Xor => {
                let narrow_float = ty.is_float() && ty.byte_width().is_some_and(|w| w < 4);
                ops.len() == 2 && pair(ops[0], ops[1]) && !narrow_float
            }
            _ => false,
        }
    })
}

/// The reduce a fusion rooted at the tuple `root` computes (its hero): every tuple
/// element is that reduce's `get-tuple-element` or elementwise ops of the output's
/// dimensions over such elements (an epilogue computed at the output index), and no
/// element reaches another reduce. A root that is itself a reduce is its own hero.
pub fn tuple_hero(c: &hlo::Computation, root: InstrId) -> Option<InstrId> {
    let r = c.instr(root);
    if r.opcode() == Opcode::Reduce {
        return Some(root);
    }
    if r.opcode() != Opcode::Tuple {
        return None;
    }
    let dims = c
        .instr(*r.operands().first()?)
        .shape()
        .as_array()?
        .dims()
        .to_vec();
    let mut hero = None;
    let mut memo = HashMap::new();
    for &op in r.operands() {
        if c.instr(op).shape().as_array()?.dims() != dims.as_slice() {
            return None;
        }
        if !reaches_hero(c, op, &dims, &mut hero, &mut memo)? {
            return None;
        }
    }
    hero
}

/// Whether `id` reads the hero (a reduce reached through its `get-tuple-element`s, stored
/// in `hero`; the first one found is the only one allowed) only through elementwise ops of
/// `dims`; `None` when it reads another reduce or reads the hero otherwise.
fn reaches_hero(
    c: &hlo::Computation,
    id: InstrId,
    dims: &[i64],
    hero: &mut Option<InstrId>,
    memo: &mut HashMap<InstrId, bool>,
) -> Option<bool> {
    if let Some(&r) = memo.get(&id) {
        return Some(r);
    }
    let instr = c.instr(id);
    let r = match instr.opcode() {
        Opcode::Reduce => return None,
        Opcode::GetTupleElement => {
            let src = *instr.operands().first()?;
            if c.instr(src).opcode() != Opcode::Reduce {
                return None;
            }
            if hero.is_some_and(|h| h != src) {
                return None;
            }
            *hero = Some(src);
            true
        }
        _ => {
            let mut any = false;
            for &o in instr.operands() {
                any |= reaches_hero(c, o, dims, hero, memo)?;
            }
            if any {
                let elementwise = instr.opcode().is_elementwise()
                    && instr.shape().as_array().is_some_and(|a| a.dims() == dims);
                if !elementwise {
                    return None;
                }
            }
            any
        }
    };
    memo.insert(id, r);
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARGMAX: &str = "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  \
        bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n  \
        gt = pred[] compare(av, bv), direction=GT\n  eq = pred[] compare(av, bv), direction=EQ\n  \
        lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n  \
        keep = pred[] or(gt, tie)\n  v = f32[] select(keep, av, bv)\n  \
        i = s32[] select(keep, ai, bi)\n  ROOT r = (f32[], s32[]) tuple(v, i)\n}\n";

    fn module(reducer: &str, entry: &str) -> hlo::Module {
        hlo::parse_module(&format!("HloModule m\n{reducer}\nENTRY e {{\n{entry}}}\n")).unwrap()
    }

    const ENTRY: &str =
        "  x = f32[8,16] parameter(0)\n  io = s32[8,16] iota(), iota_dimension=1\n  \
        ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n  \
        r = (f32[8], s32[8]) reduce(x, io, ninf, z), dimensions={1}, to_apply=argmax\n  \
        v = f32[8] get-tuple-element(r), index=0\n  i = s32[8] get-tuple-element(r), index=1\n  \
        c = s32[8] add(i, i)\n  ROOT t = (f32[8], s32[8]) tuple(v, c)\n";

    #[test]
    fn argmax_and_independent_sums_reassociate_others_do_not() {
        let m = module(ARGMAX, ENTRY);
        let red = m.computation_by_name("argmax").unwrap();
        assert!(reassociable_variadic(&m, red, 2));
        let sums = "red {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  \
            c = f32[] parameter(2)\n  d = s32[] parameter(3)\n  s = f32[] add(a, c)\n  \
            t = s32[] maximum(d, b)\n  ROOT r = (f32[], s32[]) tuple(s, t)\n}\n";
        let m = module(sums, "  ROOT x = f32[] parameter(0)\n");
        assert!(reassociable_variadic(
            &m,
            m.computation_by_name("red").unwrap(),
            2
        ));
        // A component that mixes operands (a weighted sum) is not a pick nor one op.
        let mixed = "red {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
            c = f32[] parameter(2)\n  d = f32[] parameter(3)\n  s = f32[] add(a, d)\n  \
            t = f32[] add(b, c)\n  ROOT r = (f32[], f32[]) tuple(s, t)\n}\n";
        let m = module(mixed, "  ROOT x = f32[] parameter(0)\n");
        assert!(!reassociable_variadic(
            &m,
            m.computation_by_name("red").unwrap(),
            2
        ));
        // A 16-bit float sum keeps its order.
        let half = "red {\n  a = f16[] parameter(0)\n  b = s32[] parameter(1)\n  \
            c = f16[] parameter(2)\n  d = s32[] parameter(3)\n  s = f16[] add(a, c)\n  \
            t = s32[] add(b, d)\n  ROOT r = (f16[], s32[]) tuple(s, t)\n}\n";
        let m = module(half, "  ROOT x = f32[] parameter(0)\n");
        assert!(!reassociable_variadic(
            &m,
            m.computation_by_name("red").unwrap(),
            2
        ));
    }

    #[test]
    fn a_tuple_of_the_reduces_results_and_their_epilogues_has_the_reduce_as_hero() {
        let m = module(ARGMAX, ENTRY);
        let c = m.entry();
        let id = |n: &str| c.instructions().find(|(_, i)| i.name == n).unwrap().0;
        assert_eq!(tuple_hero(c, c.root()), Some(id("r")));
        assert_eq!(tuple_hero(c, id("r")), Some(id("r")));
        // A tuple element reading the result at another index (a reverse) is no epilogue.
        let other = ENTRY.replace(
            "c = s32[8] add(i, i)",
            "c = s32[8] reverse(i), dimensions={0}",
        );
        let m = module(ARGMAX, &other);
        assert_eq!(tuple_hero(m.entry(), m.entry().root()), None);
    }
}
