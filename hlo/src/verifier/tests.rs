//! Structural errors that text cannot express (the parser rejects them first): cycles,
//! forward references, bad layouts, broken parameter lists; and `infer_shape` as a pass
//! would call it.

use super::{infer_shape, verify};
use crate::attrs::{AttrName, AttrValue};
use crate::ir::{ComputationBuilder, InstrId, Instruction, Module};
use crate::shape::{ElementType, Layout, Shape};
use crate::{CompId, Opcode};

fn f32v(n: i64) -> Shape {
    Shape::array(ElementType::F32, vec![n])
}

/// `p = parameter(0); a = negate(p); b = negate(a); ROOT c = add(a, b)`.
fn small() -> Module {
    let mut b = ComputationBuilder::new("main");
    let p = b.add(Instruction::parameter("p", 0, f32v(4)));
    let a = b.add(Instruction::new("a", Opcode::Negate, f32v(4), vec![p]));
    let n = b.add(Instruction::new("b", Opcode::Negate, f32v(4), vec![a]));
    b.add(Instruction::new("c", Opcode::Add, f32v(4), vec![a, n]));
    let c = b.build(None).unwrap();
    Module::new("m", vec![c], CompId::from_index(0)).unwrap()
}

fn messages(m: &Module) -> Vec<String> {
    match verify(m) {
        Ok(()) => vec![],
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn clean_module_verifies() {
    assert_eq!(messages(&small()), Vec::<String>::new());
}

#[test]
fn cycles_and_forward_references_are_reported() {
    let mut m = small();
    let c = m.computation_mut(CompId::from_index(0));
    // a = negate(b): a cycle a -> b -> a.
    c.instr_mut(InstrId::from_index(1)).operands = vec![InstrId::from_index(2)];
    c.recompute_users();
    let msgs = messages(&m);
    assert!(
        msgs.iter().any(|s| s.contains("main/a: operand 0 `b` is not defined before its use")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|s| s.contains("on a cycle")), "{msgs:?}");
}

#[test]
fn control_predecessor_cycle_is_reported() {
    let mut m = small();
    let c = m.computation_mut(CompId::from_index(0));
    c.instr_mut(InstrId::from_index(1)).set_attr(
        AttrName::ControlPredecessors,
        AttrValue::Instructions(vec![InstrId::from_index(3)]),
    );
    let msgs = messages(&m);
    assert!(msgs.iter().any(|s| s.contains("control predecessor `c`")), "{msgs:?}");
    assert!(msgs.iter().any(|s| s.contains("on a cycle")), "{msgs:?}");
}

#[test]
fn bad_layouts_and_parameters_are_reported() {
    let mut m = small();
    let c = m.computation_mut(CompId::from_index(0));
    c.instr_mut(InstrId::from_index(2))
        .shape_mut()
        .set_layout(Some(Layout::new(vec![1])));
    c.instr_mut(InstrId::from_index(0)).payload = crate::ir::Payload::Parameter(3);
    let msgs = messages(&m);
    assert!(
        msgs.iter().any(|s| s.contains("main/b: layout {1} of f32[4] is not a permutation")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|s| s.contains("parameter 0 is missing")), "{msgs:?}");
}

#[test]
fn infer_shape_builds_new_instructions() {
    let m = small();
    let lhs = Shape::array(ElementType::F32, vec![2, 3]);
    let rhs = Shape::array(ElementType::F32, vec![3, 5]);
    let dot = Instruction::new("d", Opcode::Dot, Shape::tuple(vec![]), vec![])
        .with_attr(AttrName::LhsContractingDims, AttrValue::IntList(vec![1]))
        .with_attr(AttrName::RhsContractingDims, AttrValue::IntList(vec![0]));
    assert_eq!(
        infer_shape(&m, &dot, &[&lhs, &rhs]),
        Ok(Shape::array(ElementType::F32, vec![2, 5]))
    );
    let t = Instruction::new("t", Opcode::Transpose, Shape::tuple(vec![]), vec![])
        .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![1, 0]));
    assert_eq!(
        infer_shape(&m, &t, &[&lhs]),
        Ok(Shape::array(ElementType::F32, vec![3, 2]))
    );
    let add = Instruction::new("a", Opcode::Add, Shape::tuple(vec![]), vec![]);
    assert!(infer_shape(&m, &add, &[&lhs, &rhs]).is_err());
    let cmp = Instruction::new("c", Opcode::Compare, Shape::tuple(vec![]), vec![]).with_attr(
        AttrName::Direction,
        AttrValue::ComparisonDirection(crate::attrs::ComparisonDirection::Lt),
    );
    assert_eq!(
        infer_shape(&m, &cmp, &[&lhs, &lhs]),
        Ok(Shape::array(ElementType::Pred, vec![2, 3]))
    );
}
