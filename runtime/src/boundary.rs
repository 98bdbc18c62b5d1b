//! Tuple-shaped entry parameters, flattened at the boundary: the compiled program takes
//! one array per leaf (flattened tuple order, parameter after parameter), and the entry
//! rebuilds each tuple from its leaves with `tuple` instructions (which the planner
//! aliases, and `get-tuple-element`s of which simplify away). [`Executable::run`] accepts
//! the arguments as the module declares them (a [`Literal::Tuple`] per tuple parameter)
//! and passes their leaves. Nested tuples inside the program and in its result need no
//! rewriting: the planner keeps a tuple as the list of its leaves.
//!
//! [`Executable::run`]: crate::Executable::run

use std::collections::HashSet;

use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, Instruction, Payload};
use hlo::pass::{Pass, PassError};
use hlo::{InstrId, Literal, Module, Opcode, Shape};

/// The pass that flattens tuple-shaped entry parameters (see the module docs): the first
/// of every compilation ([`crate::plan`]), registered with the others
/// ([`crate::pipeline::all_passes`]) so `hloc opt --passes flatten-tuple-parameters` runs
/// it alone, its time shows in `--time-passes` and dumps name it.
#[derive(Debug, Default)]
pub struct FlattenTupleParameters;

impl Pass for FlattenTupleParameters {
    fn name(&self) -> &str {
        "flatten-tuple-parameters"
    }

    fn description(&self) -> &str {
        "gives the entry one array parameter per leaf of its tuple-shaped parameters (rebuilt inside with tuples), as the compiled program takes them"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        Ok(flatten_tuple_parameters(module))
    }
}

/// Rewrites `module`'s entry so that no parameter is tuple-shaped (see the module docs);
/// returns whether it changed anything.
fn flatten_tuple_parameters(module: &mut Module) -> bool {
    let entry = module.entry();
    if !entry
        .params
        .iter()
        .any(|&p| entry.instr(p).shape().is_tuple())
    {
        return false;
    }
    let mut names = NameGen::new(module);
    let id = module.entry_id();
    let c = module.computation_mut(id);
    let mut params = Vec::new();
    for p in c.params.clone() {
        let shape = c.instr(p).shape().clone();
        if !shape.is_tuple() {
            params.push(p);
            continue;
        }
        let name = c.instr(p).name().to_string();
        let rebuilt = leaves_to_tuple(c, &shape, &name, &mut names, &mut params);
        edit::replace_uses(c, p, rebuilt);
        edit::remove_instructions(c, &HashSet::from([p]));
    }
    for (n, &p) in params.iter().enumerate() {
        c.instr_mut(p).payload = Payload::Parameter(n as i64);
    }
    c.params = params;
    edit::repair_order(c);
    // The declared entry layout names the old parameters.
    module
        .attrs_mut()
        .retain(|a| a.name != "entry_computation_layout");
    true
}

/// A new parameter per array leaf of `shape` (appended to `params`) and the tuples that
/// rebuild `shape` from them; returns the outermost.
fn leaves_to_tuple(
    c: &mut Computation,
    shape: &Shape,
    name: &str,
    names: &mut NameGen,
    params: &mut Vec<InstrId>,
) -> InstrId {
    if !shape.is_tuple() {
        let p = edit::add(
            c,
            Instruction::parameter(names.fresh(name), 0, shape.clone()),
        );
        params.push(p);
        return p;
    }
    let elements: Vec<InstrId> = shape
        .tuple_shapes()
        .iter()
        .map(|s| leaves_to_tuple(c, s, name, names, params))
        .collect();
    edit::add(
        c,
        Instruction::new(names.fresh(name), Opcode::Tuple, shape.clone(), elements),
    )
}

/// The arguments' array leaves in flattened order (a tuple argument gives its leaves).
pub(crate) fn flatten_arguments(args: &[Literal]) -> Vec<Literal> {
    fn push(l: &Literal, out: &mut Vec<Literal>) {
        match l {
            Literal::Tuple(t) => t.iter().for_each(|x| push(x, out)),
            other => out.push(other.clone()),
        }
    }
    let mut out = Vec::new();
    args.iter().for_each(|a| push(a, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuple_parameters_become_leaves_in_order() {
        let mut m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  \
             p = (f32[3], (s32[4], f32[5])) parameter(1)\n  \
             q = (s32[4], f32[5]) get-tuple-element(p), index=1\n  \
             ROOT r = s32[4] get-tuple-element(q), index=0\n}",
        )
        .unwrap();
        assert!(flatten_tuple_parameters(&mut m));
        let e = m.entry();
        let shapes: Vec<String> = e
            .params
            .iter()
            .map(|&p| e.instr(p).shape().to_string_without_layout())
            .collect();
        assert_eq!(shapes, ["f32[2]", "f32[3]", "s32[4]", "f32[5]"]);
        for (n, &p) in e.params.iter().enumerate() {
            assert_eq!(e.instr(p).parameter_number(), Some(n as i64));
        }
        assert!(hlo::verifier::verify(&m).is_ok());
        assert!(!flatten_tuple_parameters(&mut m));
    }
}
