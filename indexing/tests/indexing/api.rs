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
