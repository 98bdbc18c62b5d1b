//! Reducer classification: which called computations (of `reduce`, `reduce-window`,
//! `scatter`, `select-and-scatter`, `all-reduce`, ...) are one associative binary op of
//! their two scalar parameters, so that an evaluator or a code generator can combine
//! values directly instead of calling the computation once per element.

use super::{CompId, Module};
use crate::Opcode;

/// A reducer computation that is one binary op of its two parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reducer {
    /// `add` (for `pred`: `or`, as XLA's `add` on booleans).
    Add,
    /// `multiply` (for `pred`: `and`).
    Mul,
    /// `maximum` (NaN propagates).
    Max,
    /// `minimum` (NaN propagates).
    Min,
    /// `and` (bitwise for integers).
    And,
    /// `or` (bitwise for integers).
    Or,
    /// `xor` (bitwise for integers).
    Xor,
}

impl Reducer {
    /// The opcode the reducer applies.
    pub fn opcode(self) -> Opcode {
        match self {
            Reducer::Add => Opcode::Add,
            Reducer::Mul => Opcode::Multiply,
            Reducer::Max => Opcode::Maximum,
            Reducer::Min => Opcode::Minimum,
            Reducer::And => Opcode::And,
            Reducer::Or => Opcode::Or,
            Reducer::Xor => Opcode::Xor,
        }
    }
}

/// Recognises a computation `(a: T[], b: T[]) -> T[]` made of its two parameters and a
/// root that applies one [`Reducer`] op to them (in either order), and nothing else.
///
/// ```
/// let m = hlo::parse_module("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(b, a)\n}\nENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}").unwrap();
/// let add = m.computation_by_name("add").unwrap();
/// assert_eq!(hlo::ir::reducer::classify(&m, add), Some(hlo::ir::reducer::Reducer::Add));
/// ```
pub fn classify(module: &Module, comp: CompId) -> Option<Reducer> {
    let c = module.get_computation(comp)?;
    if c.parameters().len() != 2 || c.instruction_count() != 3 {
        return None;
    }
    let root = c.root_instr();
    let reducer = match root.opcode() {
        Opcode::Add => Reducer::Add,
        Opcode::Multiply => Reducer::Mul,
        Opcode::Maximum => Reducer::Max,
        Opcode::Minimum => Reducer::Min,
        Opcode::And => Reducer::And,
        Opcode::Or => Reducer::Or,
        Opcode::Xor => Reducer::Xor,
        _ => return None,
    };
    let ty = root.shape().element_type()?;
    if !root.shape().is_scalar() {
        return None;
    }
    let (p0, p1) = (c.parameter(0)?, c.parameter(1)?);
    let ops = root.operands();
    if ops.len() != 2 || !((ops[0] == p0 && ops[1] == p1) || (ops[0] == p1 && ops[1] == p0)) {
        return None;
    }
    [p0, p1]
        .iter()
        .all(|&p| {
            let s = c.instr(p).shape();
            s.is_scalar() && s.element_type() == Some(ty)
        })
        .then_some(reducer)
}

/// True when `comp` has two parameters and returns the second unchanged (scatter's
/// "overwrite" update).
pub fn returns_second_parameter(module: &Module, comp: CompId) -> bool {
    module
        .get_computation(comp)
        .is_some_and(|c| c.parameters().len() == 2 && c.parameter(1) == Some(c.root()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reducer_of(body: &str) -> Option<Reducer> {
        let text = format!(
            "HloModule m\nr {{\n{body}\n}}\nENTRY e {{\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT o = f32[] reduce(p, z), dimensions={{0}}, to_apply=r\n}}"
        );
        let m = crate::parse_module(&text).unwrap();
        classify(&m, m.computation_by_name("r").unwrap())
    }

    #[test]
    fn recognises_each_op_in_either_order() {
        for (op, want) in [
            ("add", Reducer::Add),
            ("multiply", Reducer::Mul),
            ("maximum", Reducer::Max),
            ("minimum", Reducer::Min),
        ] {
            let ab = format!(
                "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] {op}(a, b)"
            );
            let ba = format!(
                "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] {op}(b, a)"
            );
            assert_eq!(reducer_of(&ab), Some(want), "{op}");
            assert_eq!(reducer_of(&ba), Some(want), "{op} swapped");
            assert_eq!(want.opcode().to_string(), op);
        }
    }

    #[test]
    fn rejects_anything_more_than_one_op() {
        let twice =
            "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, a)";
        assert_eq!(reducer_of(twice), None);
        let extra = "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  n = f32[] negate(a)\n  ROOT s = f32[] add(n, b)";
        assert_eq!(reducer_of(extra), None);
        let other =
            "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] subtract(a, b)";
        assert_eq!(reducer_of(other), None);
        let second = "  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)";
        assert_eq!(reducer_of(second), None);
    }
}
