//! The public entry points on instruction handles: which instructions each accepts, the
//! errors for the others, and the per-op tables used on their own.

use indexing::{IndexingError, OperandIndexing};

const MODULE: &str = r#"
HloModule m
fused {
  p0 = f32[4,8] parameter(0)
  t = f32[8,4] transpose(p0), dimensions={1,0}
  ROOT e = f32[8,4] exponential(t)
}
ENTRY main {
  a = f32[4,8] parameter(0)
  f = f32[8,4] fusion(a), kind=kLoop, calls=fused
  n = f32[8,4] negate(f)
  ROOT tup = (f32[8,4], f32[8,4]) tuple(f, n)
}
"#;

fn module() -> hlo::Module {
    hlo::parse_module(MODULE).expect("the test module parses")
}

#[test]
fn analyze_takes_a_fusion_handle_and_rejects_other_instructions() {
    let m = module();
    let fusion = m.instr("f").expect("f");
    let maps = indexing::analyze(&fusion).expect("a fusion is analysed");
    assert_eq!(
        indexing::format_grouped(&maps.outputs),
        "operand id = 0\n  (d0, d1) -> (d1, d0), domain: d0 in [0, 7], d1 in [0, 3]\n"
    );
    // output_to_input agrees on a fusion.
    assert_eq!(indexing::output_to_input(&fusion).unwrap(), maps.outputs);
    let negate = m.instr("n").expect("n");
    assert_eq!(
        indexing::analyze(&negate),
        Err(IndexingError::NotAFusion("n".to_string()))
    );
}

#[test]
fn output_to_input_works_on_fused_instructions_alone() {
    let m = module();
    let t = m
        .instr("t")
        .expect("t is found inside the fused computation");
    assert_ne!(t.comp_id(), m.entry_id());
    assert_eq!(
        indexing::format_grouped(&indexing::output_to_input(&t).unwrap()),
        "operand id = 0\n  (d0, d1) -> (d1, d0), domain: d0 in [0, 7], d1 in [0, 3]\n"
    );
    let back = indexing::input_to_output(&t, 0).unwrap();
    assert_eq!(
        indexing::format_in_to_out(&back),
        "output id = 0\n  (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 7]\n"
    );
}

#[test]
fn input_to_output_checks_the_operand() {
    let m = module();
    let fusion = m.instr("f").unwrap();
    let err = indexing::input_to_output(&fusion, 1).unwrap_err();
    assert_eq!(
        err,
        IndexingError::NoSuchOperand {
            instr: "f".to_string(),
            count: 1,
            operand: 1
        }
    );
    // Through the fusion: the epilogue from the parameter.
    let maps = indexing::input_to_output(&fusion, 0).unwrap();
    assert_eq!(
        indexing::format_in_to_out(&maps),
        "output id = 0\n  (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 7]\n"
    );
}

#[test]
fn producer_consumer_needs_an_operand_edge_in_one_computation() {
    let m = module();
    let (f, n, t) = (
        m.instr("f").unwrap(),
        m.instr("n").unwrap(),
        m.instr("t").unwrap(),
    );
    let values = indexing::producer_consumer(&f, &n).unwrap();
    let names: Vec<&str> = values[0]
        .values
        .iter()
        .map(|(name, _, _)| name.as_str())
        .collect();
    assert_eq!(names, ["n", "f", "e", "t", "a"]);
    let not_an_edge = |p: &hlo::InstrRef<'_>, c: &hlo::InstrRef<'_>| {
        Err(IndexingError::NotProducerConsumer {
            producer: p.name().to_string(),
            consumer: c.name().to_string(),
        })
    };
    assert_eq!(indexing::producer_consumer(&n, &f), not_an_edge(&n, &f));
    // Different computations, and different modules, are never a producer-consumer pair.
    assert_eq!(indexing::producer_consumer(&t, &n), not_an_edge(&t, &n));
    let other = module();
    let other_n = other.instr("n").unwrap();
    assert_eq!(
        indexing::producer_consumer(&f, &other_n),
        not_an_edge(&f, &other_n)
    );
}

#[test]
fn epilogue_runs_from_any_instruction_to_its_computations_root() {
    let m = module();
    let t = m.instr("t").unwrap();
    let maps = indexing::epilogue_indexing(&t).unwrap();
    assert_eq!(
        indexing::format_in_to_out(&maps),
        "output id = 0\n  (d0, d1) -> (d0, d1), domain: d0 in [0, 7], d1 in [0, 3]\n"
    );
    // The root tuple of the entry: f reaches both outputs (the second through negate).
    let f = m.instr("f").unwrap();
    assert_eq!(indexing::epilogue_indexing(&f).unwrap().len(), 2);
}

#[test]
fn per_op_tables_answer_one_instruction_without_composition() {
    let m = module();
    let tup = m.instr("tup").unwrap();
    let maps = indexing::ops::out_to_in(&tup, 1).unwrap();
    assert_eq!(maps.len(), 2);
    assert_eq!(maps[0], OperandIndexing::none());
    assert_eq!(
        indexing::format_operand(&maps[1], ""),
        "(d0, d1) -> (d0, d1), domain: d0 in [0, 7], d1 in [0, 3]\n"
    );
    assert_eq!(
        indexing::ops::out_to_in(&tup, 2),
        Err(IndexingError::NoSuchOutput {
            instr: "tup".to_string(),
            count: 2,
            output: 2
        })
    );
    assert!(matches!(
        indexing::ops::in_to_out(&tup, 2),
        Err(IndexingError::NoSuchOperand { .. })
    ));
    // A fusion has no table of its own: the tables say so, composition answers.
    let fusion = m.instr("f").unwrap();
    assert!(indexing::ops::calls_computation(fusion.opcode()));
    let raw = indexing::ops::out_to_in(&fusion, 0).unwrap();
    assert!(raw[0].is_undefined());
    assert!(!indexing::output_to_input(&fusion).unwrap()[0].operands[0].is_undefined());
    assert_eq!(
        indexing::ops::undefined_reason(hlo::Opcode::While),
        Some("while: the number of iterations and the loop state are data dependent")
    );
}

const REGION: &str = r#"
HloModule m
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
f {
  p0 = f32[3,5] parameter(0)
  init = f32[] parameter(1)
  b = f32[3,4,5,2] broadcast(p0), dimensions={0,2}
  ROOT r = f32[3,2] reduce(b, init), dimensions={1,2}, to_apply=max
}
ENTRY e {
  a = f32[3,5] parameter(0)
  c = f32[] constant(0)
  q = f32[3,5] parameter(1)
  n = f32[3,5] add(a, q)
  ROOT fu = f32[3,2] fusion(n, c), kind=kLoop, calls=f
}
"#;

/// The maps a grouped walk found for instruction `name`, as text.
fn value_of(v: &[indexing::ValueMaps], name: &str) -> String {
    let (_, _, set) = v[0]
        .values
        .iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("{name} is reached"));
    indexing::format_operand(set, "")
}

#[test]
fn grouped_from_the_root_of_a_fusion_agrees_with_analyze() {
    let m = hlo::parse_module(REGION).unwrap();
    let fusion = m.instr("fu").unwrap();
    let v = indexing::grouped_from(&fusion, &fusion).unwrap();
    let maps = indexing::analyze(&fusion).unwrap();
    assert_eq!(
        value_of(&v, "n"),
        indexing::format_operand(&maps.outputs[0].operands[0], "")
    );
    assert_eq!(
        value_of(&v, "c"),
        indexing::format_operand(&maps.outputs[0].operands[1], "")
    );
    // Parameters of the fused computation are listed as the operands they stand for.
    assert!(v[0].values.iter().all(|(n, _, _)| n != "p0" && n != "init"));
}

#[test]
fn grouped_from_a_value_inside_a_fusion_composes_from_there() {
    let m = hlo::parse_module(REGION).unwrap();
    let fusion = m.instr("fu").unwrap();
    let b = m.instr("b").unwrap();
    let v = indexing::grouped_from(&fusion, &b).unwrap();
    let names: Vec<&str> = v[0].values.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["b", "n"]);
    // The broadcast's operand is a parameter: the maps to the fusion operand are the
    // broadcast's own.
    let own = indexing::output_to_input(&b).unwrap();
    assert_eq!(
        value_of(&v, "n"),
        indexing::format_operand(&own[0].operands[0], "")
    );
}

#[test]
fn grouped_of_one_instruction_is_its_own_maps() {
    let m = hlo::parse_module(REGION).unwrap();
    let add = m.instr("n").unwrap();
    let v = indexing::grouped_from(&add, &add).unwrap();
    let own = indexing::output_to_input(&add).unwrap();
    assert_eq!(
        value_of(&v, "a"),
        indexing::format_operand(&own[0].operands[0], "")
    );
    assert_eq!(
        value_of(&v, "q"),
        indexing::format_operand(&own[0].operands[1], "")
    );
    // From an operand: only that operand, the identity.
    let a = m.instr("a").unwrap();
    let v = indexing::grouped_from(&add, &a).unwrap();
    assert_eq!(v[0].values.len(), 1);
    assert_eq!(
        value_of(&v, "a"),
        "(d0, d1) -> (d0, d1), domain: d0 in [0, 2], d1 in [0, 4]\n"
    );
}

#[test]
fn grouped_from_outside_the_region_is_an_error() {
    let m = hlo::parse_module(REGION).unwrap();
    let add = m.instr("n").unwrap();
    let fusion = m.instr("fu").unwrap();
    assert_eq!(
        indexing::grouped_from(&add, &fusion),
        Err(IndexingError::NotInRegion {
            start: "fu".to_string(),
            region: "n".to_string(),
        })
    );
    let r = m.instr("r").unwrap();
    assert!(indexing::grouped_from(&add, &r).is_err());
}

#[test]
fn epilogue_from_the_root_is_the_identity() {
    let m = hlo::parse_module(REGION).unwrap();
    let r = m.instr("r").unwrap();
    assert_eq!(
        indexing::format_in_to_out(&indexing::epilogue_indexing(&r).unwrap()),
        "output id = 0\n  (d0, d1) -> (d0, d1), domain: d0 in [0, 2], d1 in [0, 1]\n"
    );
}

#[test]
fn epilogue_to_an_inner_instruction_stops_there() {
    let m = hlo::parse_module(REGION).unwrap();
    let b = m.instr("b").unwrap();
    let r = m.instr("r").unwrap();
    // To the root: the same as without a target.
    assert_eq!(
        indexing::epilogue_indexing_to(&b, &r).unwrap(),
        indexing::epilogue_indexing(&b).unwrap()
    );
    // From the broadcast's operand to the broadcast: the broadcast's own in-to-out maps.
    let p0 = m.instr("p0").unwrap();
    assert_eq!(
        indexing::epilogue_indexing_to(&p0, &b).unwrap(),
        indexing::input_to_output(&b, 0).unwrap()
    );
    // Against the flow: nothing is reached.
    assert_eq!(
        indexing::epilogue_indexing_to(&b, &p0).unwrap(),
        vec![OperandIndexing::none()]
    );
    // Another computation.
    let n = m.instr("n").unwrap();
    assert!(indexing::epilogue_indexing_to(&b, &n).is_err());
}
