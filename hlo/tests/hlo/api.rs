//! The public API as later passes use it: navigation, typed attributes, shapes, literals,
//! the async representation, building and mutating modules.

use hlo::attrs::{ComparisonDirection, FusionKind, ReplicaGroups, SliceDim};
use hlo::ir::{ComputationBuilder, Payload};
use hlo::literal::ArrayData;
use hlo::shape::UNBOUNDED_SIZE;
use hlo::{
    parse_module, parse_module_with, print_module, print_module_with, AttrName, AttrValue, CompId,
    ElementType, Instruction, Literal, Module, Opcode, ParseOptions, PrintOptions, Shape,
};

const TEXT: &str = r#"HloModule api, entry_computation_layout={(f32[4,8]{1,0})->f32[8,4]{1,0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%fused (fp: f32[4,8]) -> f32[8,4] {
  %fp = f32[4,8]{1,0} parameter(0)
  ROOT %tr = f32[8,4]{1,0} transpose(%fp), dimensions={1,0}
}

ENTRY %main (p: f32[4,8]) -> f32[8,4] {
  %p = f32[4,8]{1,0} parameter(0)
  %sq = f32[4,8]{1,0} multiply(%p, %p)
  %z = f32[] constant(0)
  %r = f32[4]{0} reduce(%sq, %z), dimensions={1}, to_apply=%add
  %sl = f32[2,8]{1,0} slice(%p), slice={[0:4:2], [0:8:1]}
  %cmp = pred[4,8]{1,0} compare(%p, %sq), direction=GT
  %dot = f32[4,4]{1,0} dot(%p, %sq), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %ar = f32[4]{0} all-reduce(%r), replica_groups=[2,2]<=[4], to_apply=%add
  ROOT %f = f32[8,4]{1,0} fusion(%sq), kind=kLoop, calls=%fused, control-predecessors={%cmp}
}
"#;

#[test]
fn navigation_and_typed_attributes() {
    let m = parse_module(TEXT).unwrap();
    assert_eq!(m.name(), "api");
    assert_eq!(m.computation_count(), 3);
    let layout = m.entry_computation_layout().unwrap();
    assert_eq!(layout.result.dims(), &[8, 4]);
    let e = m.entry();
    assert!(e.is_entry());
    assert_eq!(e.name(), "main");
    let names: Vec<&str> = e.instructions().map(|(_, i)| i.name()).collect();
    assert_eq!(names, ["p", "sq", "z", "r", "sl", "cmp", "dot", "ar", "f"]);
    let p = e.parameter(0).unwrap();
    let sq = e.find("sq").unwrap();
    assert_eq!(e.operands(sq), &[p, p]);
    // `sq` uses `p` twice but is listed once among its users.
    let users: Vec<&str> = e.users(p).iter().map(|&u| e.instr(u).name()).collect();
    assert_eq!(users, ["sq", "sl", "cmp", "dot"]);

    let r = e.instr(e.find("r").unwrap());
    assert_eq!(r.dimensions(), Some(&[1i64][..]));
    let add = r.to_apply().unwrap();
    assert_eq!(m.computation(add).name(), "add");
    assert_eq!(r.called_computations(), vec![add]);

    let sl = e.instr(e.find("sl").unwrap());
    assert_eq!(
        sl.slice().unwrap()[0],
        SliceDim {
            start: 0,
            limit: 4,
            stride: 2
        }
    );
    let cmp = e.instr(e.find("cmp").unwrap());
    assert_eq!(cmp.comparison_direction(), Some(ComparisonDirection::Gt));
    assert_eq!(cmp.comparison_type(), None);
    let dot = e.instr(e.find("dot").unwrap()).dot_dimension_numbers();
    assert_eq!(dot.lhs_contracting_dims, [1]);
    assert!(dot.lhs_batch_dims.is_empty());
    let ar = e.instr(e.find("ar").unwrap());
    let groups = ar.replica_groups().unwrap();
    assert!(matches!(groups, ReplicaGroups::Iota { .. }));
    assert_eq!(groups.groups(64), Some(vec![vec![0, 1], vec![2, 3]]));
    let f = e.root_instr();
    assert_eq!(f.fusion_kind(), Some(FusionKind::Loop));
    assert_eq!(f.control_predecessors(), &[e.find("cmp").unwrap()]);
    assert_eq!(e.control_successors(e.find("cmp").unwrap()), vec![e.root()]);
    let z = e.instr(e.find("z").unwrap());
    match z.literal() {
        Some(Literal::Array(a)) => assert_eq!(a.data(), &ArrayData::F32(vec![0.0])),
        other => panic!("unexpected literal {other:?}"),
    }
    assert_eq!(
        m.instruction_to_string(m.entry_id(), e.find("r").unwrap()),
        "%r = f32[4]{0} reduce(f32[4,8]{1,0} %sq, f32[] %z), dimensions={1}, to_apply=%add"
    );
}

#[test]
fn shapes() {
    let s = hlo::parse_shape("(f32[2,<=3]{1,0:T(8,128)E(16)S(1)}, (s4[?], token[]))").unwrap();
    assert!(s.is_tuple());
    let a = &s.tuple_shapes()[0];
    assert_eq!(a.element_type(), Some(ElementType::F32));
    assert_eq!(a.dims(), &[2, 3]);
    assert!(a.is_dynamic_dim(1) && !a.is_dynamic_dim(0));
    let l = a.layout().unwrap();
    assert_eq!(l.minor_to_major, [1, 0]);
    assert_eq!(l.tiles()[0].dims, [8, 128]);
    assert_eq!((l.element_size_bits(), l.memory_space()), (16, 1));
    assert_eq!(a.element_count(), Ok(6));
    let inner = s.subshape(&[1, 0]).unwrap();
    assert_eq!(inner.dims(), &[UNBOUNDED_SIZE]);
    assert!(inner.element_count().is_err());
    assert!(s.subshape(&[1, 1]).unwrap().is_token());
    assert_eq!(s.leaf_count(), 3);
    assert_eq!(
        s.to_string(),
        "(f32[2,<=3]{1,0:T(8,128)E(16)S(1)}, (s4[?], token[]))"
    );
    assert!(hlo::parse_shape("f32[9223372036854775807,2]").is_err());
    assert!(hlo::parse_shape("f32[2] extra").is_err());
}

#[test]
fn opcodes_round_trip_their_spelling() {
    for &op in Opcode::ALL {
        assert_eq!(op.as_str().parse::<Opcode>(), Ok(op));
    }
    assert_eq!("count-leading-zeros".parse::<Opcode>(), Ok(Opcode::Clz));
}

#[test]
fn short_async_form_builds_the_generic_representation() {
    let text = r#"HloModule a

ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %s = ((f32[8]{0}), f32[8]{0}, s32[]) all-to-all-start(%p), dimensions={0}, metadata={op_name="x"}
  %u = ((f32[8]{0}), f32[8]{0}, s32[]) all-to-all-update(%s)
  ROOT %d = f32[8]{0} all-to-all-done(%u)
}
"#;
    let m = parse_module(text).unwrap();
    let e = m.entry();
    let s = e.instr(e.find("s").unwrap());
    assert_eq!(s.opcode(), Opcode::AsyncStart);
    let wrapped = m.computation(s.calls().unwrap());
    assert_eq!(wrapped.instruction_count(), 2);
    let op = wrapped.root_instr();
    assert_eq!(op.opcode(), Opcode::AllToAll);
    assert_eq!(op.dimensions(), Some(&[0i64][..]));
    assert_eq!(op.shape().dims(), &[8]);
    // Shared attributes stay on the start; the wrapped op holds its own.
    assert!(s.metadata().is_some() && op.metadata().is_none());
    let d = e.root_instr();
    assert_eq!(d.opcode(), Opcode::AsyncDone);
    assert_eq!(d.calls(), s.calls());
    assert_eq!(print_module(&m).trim_end(), text.trim_end());
    // In the long form the wrapped computation is printed and called explicitly.
    let mut m2 = m.clone();
    let cid = s.calls().unwrap();
    let c = m2.computation_mut(cid);
    let root = c.root();
    c.instr_mut(root)
        .set_attr(AttrName::Dimensions, AttrValue::IntList(vec![0]));
    let extra = c
        .add_instruction(Instruction::new(
            "neg",
            Opcode::Negate,
            Shape::array(ElementType::F32, vec![8]),
            vec![root],
        ))
        .unwrap();
    c.set_root(extra).unwrap();
    let long = print_module(&m2);
    assert!(
        long.contains("async-start(%p), calls=%async_wrapped"),
        "{long}"
    );
    assert!(
        long.contains("async-done(%u), calls=%async_wrapped"),
        "{long}"
    );
    assert_eq!(print_module(&parse_module(&long).unwrap()), long);
}

#[test]
fn warnings_and_styles() {
    let text = "HloModule m, new_attr={1, 2}\n\ne {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p), sharding={replicated}\n}\n";
    let parsed = parse_module_with(text, &ParseOptions::default()).unwrap();
    assert_eq!(parsed.warnings.len(), 1);
    assert_eq!(
        parsed.warnings[0].to_string(),
        "1:14: warning: unknown module attribute `new_attr` kept verbatim"
    );
    let m = parsed.module;
    let style = m.source_style();
    assert!(!style.sigils && !style.operand_shapes && !style.signatures);
    assert_eq!(
        print_module(&m),
        "HloModule m, new_attr={1, 2}\n\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p), sharding={replicated}\n}\n\n"
    );
    let canonical = print_module_with(&m, &PrintOptions::default());
    assert!(canonical.contains("ENTRY %e (p: f32[]) -> f32[] {"));
    assert!(canonical.contains("ROOT %n = f32[] negate(f32[] %p), sharding={replicated}"));
    assert!(print_module_with(&m, &PrintOptions::short()).contains("negate(p)"));
}

#[test]
fn errors_point_at_the_problem() {
    let text = "HloModule m\n\nENTRY e {\n  ROOT x = f32[2] add(a, b)\n}\n";
    let options = ParseOptions {
        file_name: Some("m.hlo".into()),
        ..ParseOptions::default()
    };
    let e = parse_module_with(text, &options).unwrap_err();
    assert_eq!((e.line(), e.column()), (4, 23));
    assert_eq!(
        e.to_string(),
        "m.hlo:4:23: instruction `a` is not defined\n  ROOT x = f32[2] add(a, b)\n                      ^"
    );
}

#[test]
fn build_mutate_and_print() {
    let s = Shape::array(ElementType::S32, vec![2]);
    let mut b = ComputationBuilder::new("main");
    let p = b.add(Instruction::parameter("p", 0, s.clone()));
    let lit = hlo::literal::ArrayLiteral::new(s.clone(), ArrayData::S32(vec![1, 2])).unwrap();
    let c = b.add(Instruction::constant("c", s.clone(), Literal::Array(lit)));
    let add = b.add(Instruction::new("add", Opcode::Add, s.clone(), vec![p, c]));
    let comp = b.build(Some(add)).unwrap();
    let mut m = Module::new("built", vec![comp], CompId::from_index(0)).unwrap();
    assert_eq!(
        print_module(&m),
        "HloModule built\n\nENTRY %main (p: s32[2]) -> s32[2] {\n  %p = s32[2] parameter(0)\n  %c = s32[2] constant({1, 2})\n  ROOT %add = s32[2] add(s32[2] %p, s32[2] %c)\n}\n\n"
    );
    let e = m.computation_mut(CompId::from_index(0));
    let neg = e
        .add_instruction(Instruction::new("neg", Opcode::Negate, s, vec![p]))
        .unwrap();
    e.replace_all_uses(p, neg).unwrap();
    // Every use moved, including `neg`'s own: point it back at `p`.
    assert_eq!(e.operands(add), &[neg, c]);
    assert!(e.users(p).is_empty());
    e.set_operand(neg, 0, p).unwrap();
    assert_eq!(e.users(p), &[neg]);
    assert!(e.remove_instruction(p).is_err());
    assert!(matches!(e.instr(c).payload(), Payload::Constant(_)));
    // `neg` was appended after its user; the printer still defines it first.
    let text = print_module(&m);
    assert!(
        text.contains("  %neg = s32[2] negate(s32[2] %p)\n  ROOT %add = s32[2] add(s32[2] %neg"),
        "{text}"
    );
    assert_eq!(print_module(&parse_module(&text).unwrap()), text);
    let e = m.computation_mut(CompId::from_index(0));
    let unused = e
        .add_instruction_before(
            Instruction::new(
                "unused",
                Opcode::Abs,
                Shape::array(ElementType::S32, vec![2]),
                vec![c],
            ),
            add,
        )
        .unwrap();
    assert_eq!(e.instruction_ids()[2], unused);
    e.remove_instruction(unused).unwrap();
    assert_eq!(e.instruction_count(), 4);
    assert_eq!(e.users(c), &[add]);
}

#[test]
fn mesh_replica_groups_expand() {
    let mesh = |axes: &[(&str, i64)], group: &[&str]| ReplicaGroups::Mesh {
        axes: axes.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
        device_ids: None,
        group_axes: group.iter().map(|n| n.to_string()).collect(),
    };
    // Devices row-major over (x, y): 0 1 / 2 3.
    let g = mesh(&[("x", 2), ("y", 2)], &["y"]);
    assert_eq!(g.groups(16), Some(vec![vec![0, 1], vec![2, 3]]));
    assert_eq!(g.group_size(), Some(2));
    assert_eq!(g.to_string(), "mesh['x'=2,'y'=2] {'y'}");
    let g = mesh(&[("x", 2), ("y", 2)], &["x"]);
    assert_eq!(g.groups(16), Some(vec![vec![0, 2], vec![1, 3]]));
    // Listed axes order the members: y slowest here.
    let g = mesh(&[("x", 2), ("y", 3)], &["y", "x"]);
    assert_eq!(g.groups(16), Some(vec![vec![0, 3, 1, 4, 2, 5]]));
    // No axis: every device alone.
    let g = mesh(&[("x", 2)], &[]);
    assert_eq!(g.groups(16), Some(vec![vec![0], vec![1]]));
    // Unknown axis, or more devices than allowed.
    assert_eq!(mesh(&[("x", 2)], &["z"]).groups(16), None);
    assert_eq!(mesh(&[("x", 2)], &["z"]).group_size(), None);
    assert_eq!(mesh(&[("x", 64)], &["x"]).groups(16), None);
}

/// `mesh[..], device_ids=(..) {..}` (XLA's after-optimization collectives of a mesh whose
/// devices are not in order) expands to the same groups as an enumeration written here:
/// every mesh position's coordinates, the device placed there, grouped by the
/// coordinates along the axes the groups do not span.
#[test]
fn mesh_device_ids_groups_match_enumeration() {
    fn enumerate(sizes: &[i64], ids: &[i64], group: &[usize]) -> Vec<Vec<i64>> {
        let n: i64 = sizes.iter().product();
        // (coordinates along the listed axes, device) of one group's members.
        type Members = Vec<(Vec<i64>, i64)>;
        let mut groups: Vec<(Vec<i64>, Members)> = Vec::new();
        for pos in 0..n {
            let mut coords = vec![0i64; sizes.len()];
            let mut rest = pos;
            for k in (0..sizes.len()).rev() {
                coords[k] = rest % sizes[k];
                rest /= sizes[k];
            }
            let key: Vec<i64> = (0..sizes.len())
                .filter(|k| !group.contains(k))
                .map(|k| coords[k])
                .collect();
            // Members ordered by their coordinates along the listed axes, in list order.
            let order: Vec<i64> = group.iter().map(|&k| coords[k]).collect();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push((order, ids[pos as usize])),
                None => groups.push((key, vec![(order, ids[pos as usize])])),
            }
        }
        groups.sort();
        groups
            .into_iter()
            .map(|(_, mut m)| {
                m.sort();
                m.into_iter().map(|(_, d)| d).collect()
            })
            .collect()
    }
    let parse = |attr: &str| {
        let text = format!(
            "HloModule m, replica_count=8\n\nadd {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}}\n\nENTRY e {{\n  p = f32[8] parameter(0)\n  ROOT ar = f32[8] all-reduce(p), replica_groups={attr}, to_apply=add\n}}\n"
        );
        let m = parse_module(&text).unwrap();
        let e = m.entry();
        e.root_instr().replica_groups().unwrap().groups(64).unwrap()
    };
    // iota(8) reshaped [4,2], transposed: positions hold 0,2,4,6,1,3,5,7.
    let transposed = [0, 2, 4, 6, 1, 3, 5, 7];
    let g = parse(
        "mesh['axis_0'=2,'axis_1'=2,'axis_2'=1,'axis_3'=2], device_ids=([4,2]T(1,0)) {'axis_0'}",
    );
    assert_eq!(g, enumerate(&[2, 2, 1, 2], &transposed, &[0]));
    assert_eq!(g, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
    let g = parse("mesh['a'=2,'b'=4], device_ids=([4,2]T(1,0)) {'b','a'}");
    assert_eq!(g, enumerate(&[2, 4], &transposed, &[1, 0]));
    let g = parse("mesh['a'=2,'b'=2,'c'=2], device_ids=(7,3,5,1,6,2,4,0) {'c','a'}");
    assert_eq!(g, enumerate(&[2, 2, 2], &[7, 3, 5, 1, 6, 2, 4, 0], &[2, 0]));
    // Without device_ids the positions are the devices.
    let g = parse("mesh['a'=2,'b'=4] {'a'}");
    assert_eq!(g, enumerate(&[2, 4], &[0, 1, 2, 3, 4, 5, 6, 7], &[0]));
}
