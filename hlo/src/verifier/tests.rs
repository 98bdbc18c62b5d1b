//! Structural errors that text cannot express (the parser rejects them first): cycles,
//! forward references, bad layouts, broken parameter lists; and `infer_shape` as a pass
//! would call it.

use super::{infer_shape, verify, InferError};
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
        msgs.iter()
            .any(|s| s.contains("main/a: operand 0 `b` is not defined before its use")),
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
    assert!(
        msgs.iter().any(|s| s.contains("control predecessor `c`")),
        "{msgs:?}"
    );
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
        msgs.iter()
            .any(|s| s.contains("main/b: layout {1} of f32[4] is not a permutation")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|s| s.contains("parameter 0 is missing")),
        "{msgs:?}"
    );
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

#[test]
fn infer_shape_of_reduce_slice_and_concatenate() {
    // A module whose first computation is a scalar f32 adder, for the reducer.
    let mut b = ComputationBuilder::new("add");
    let x = b.add(Instruction::parameter(
        "x",
        0,
        Shape::scalar(ElementType::F32),
    ));
    let y = b.add(Instruction::parameter(
        "y",
        1,
        Shape::scalar(ElementType::F32),
    ));
    b.add(Instruction::new(
        "s",
        Opcode::Add,
        Shape::scalar(ElementType::F32),
        vec![x, y],
    ));
    let add = b.build(None).unwrap();
    let m = Module::new("m", vec![add], CompId::from_index(0)).unwrap();
    let a = Shape::array(ElementType::F32, vec![4, 6, 8]);
    let init = Shape::scalar(ElementType::F32);
    let reduce = Instruction::new("r", Opcode::Reduce, Shape::tuple(vec![]), vec![])
        .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![0, 2]))
        .with_attr(
            AttrName::ToApply,
            AttrValue::Computation(CompId::from_index(0)),
        );
    assert_eq!(
        infer_shape(&m, &reduce, &[&a, &init]),
        Ok(Shape::array(ElementType::F32, vec![6]))
    );
    let slice = Instruction::new("s", Opcode::Slice, Shape::tuple(vec![]), vec![]).with_attr(
        AttrName::Slice,
        AttrValue::Slice(vec![
            crate::attrs::SliceDim {
                start: 1,
                limit: 4,
                stride: 1,
            },
            crate::attrs::SliceDim {
                start: 0,
                limit: 6,
                stride: 4,
            },
            crate::attrs::SliceDim {
                start: 3,
                limit: 8,
                stride: 2,
            },
        ]),
    );
    assert_eq!(
        infer_shape(&m, &slice, &[&a]),
        Ok(Shape::array(ElementType::F32, vec![3, 2, 3]))
    );
    let concat = Instruction::new("c", Opcode::Concatenate, Shape::tuple(vec![]), vec![])
        .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![1]));
    assert_eq!(
        infer_shape(&m, &concat, &[&a, &a]),
        Ok(Shape::array(ElementType::F32, vec![4, 12, 8]))
    );
    // A declared-shape opcode returns its declaration once it is consistent.
    let reshape = Instruction::new(
        "rs",
        Opcode::Reshape,
        Shape::array(ElementType::F32, vec![24, 8]),
        vec![],
    );
    assert_eq!(
        infer_shape(&m, &reshape, &[&a]),
        Ok(Shape::array(ElementType::F32, vec![24, 8]))
    );
    let shuffle = Instruction::new("sh", Opcode::Shuffle, Shape::tuple(vec![]), vec![]);
    let err = infer_shape(&m, &shuffle, &[&a]).unwrap_err();
    assert_eq!(err, InferError::Unsupported(Opcode::Shuffle));
    assert!(err.to_string().starts_with("unsupported"));
    // A broken rule is `Invalid`, its message the rule.
    let bad = Instruction::new("bad", Opcode::Add, Shape::tuple(vec![]), vec![]);
    let b = Shape::array(ElementType::F32, vec![3]);
    let err = infer_shape(&m, &bad, &[&a, &b]).unwrap_err();
    assert!(matches!(err, InferError::Invalid(_)), "{err:?}");
}

#[test]
fn names_are_unique_in_a_module() {
    // The parser renames a name a later computation repeats; a module built in code is
    // checked.
    let mut h = ComputationBuilder::new("helper");
    h.add(Instruction::parameter("a", 0, f32v(4)));
    let helper = h.build(None).unwrap();
    let mut b = ComputationBuilder::new("main");
    b.add(Instruction::parameter("a", 0, f32v(4)));
    let main = b.build(None).unwrap();
    let m = Module::new("m", vec![helper, main], CompId::from_index(1)).unwrap();
    let msgs = messages(&m);
    assert!(
        msgs.iter()
            .any(|e| e.contains("instruction name `a` is used twice")),
        "{msgs:?}"
    );
    let parsed = crate::parse_module(
        "HloModule m\n\nhelper {\n  ROOT a = f32[4] parameter(0)\n}\n\nENTRY main {\n  ROOT a = f32[4] parameter(0)\n}\n",
    )
    .unwrap();
    assert_eq!(
        parsed.entry().root_instr().name(),
        "a",
        "the entry keeps its names"
    );
    assert_eq!(
        parsed
            .computation(CompId::from_index(0))
            .root_instr()
            .name(),
        "a.1"
    );
    assert_eq!(messages(&parsed), Vec::<String>::new());
}
