//! The tree-reduction rewriter keeps results: integer sums bit for bit, a float max
//! exactly, a float sum within the evaluator's tolerance.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::Pass;
use hlo::{ElementType, Literal, Shape};
use hlo_eval::tolerance;

fn run_both(text: &str, arg: Literal) -> (Literal, Literal) {
    let m = hlo::parse_module(text).unwrap();
    let mut t = m.clone();
    assert!(hlo_transforms::TreeReductionRewriter::default()
        .run(&mut t)
        .unwrap());
    hlo::pass::verify::verify(&t).unwrap();
    let a = hlo_eval::evaluate(&m, std::slice::from_ref(&arg)).unwrap();
    let b = hlo_eval::evaluate(&t, &[arg]).unwrap();
    (a, b)
}

fn module(ty: &str, op: &str, init: &str) -> String {
    format!(
        "HloModule m\nr {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  ROOT s = {ty}[] {op}(x, y)\n}}\nENTRY e {{\n  p = {ty}[2,5000] parameter(0)\n  z = {ty}[] constant({init})\n  ROOT o = {ty}[2] reduce(p, z), dimensions={{1}}, to_apply=r\n}}\n"
    )
}

#[test]
fn integer_sum_is_exact() {
    let v: Vec<i32> = (0..10000).map(|i| (i * 7919 % 1000) - 500).collect();
    let arg = Literal::Array(
        ArrayLiteral::new(
            Shape::array(ElementType::S32, vec![2, 5000]),
            ArrayData::S32(v),
        )
        .unwrap(),
    );
    let (a, b) = run_both(&module("s32", "add", "0"), arg);
    assert_eq!(a, b);
}

#[test]
fn float_max_exact_and_sum_close() {
    let v: Vec<f32> = (0..10000)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 0.37)
        .collect();
    let arg = Literal::Array(
        ArrayLiteral::new(
            Shape::array(ElementType::F32, vec![2, 5000]),
            ArrayData::F32(v),
        )
        .unwrap(),
    );
    let (a, b) = run_both(&module("f32", "maximum", "-inf"), arg.clone());
    assert_eq!(a, b);
    let (a, b) = run_both(&module("f32", "add", "0"), arg);
    assert!(tolerance::compare(b.as_array().unwrap(), a.as_array().unwrap()).matches);
}

/// A rule may split any reduced dimension of a reduce over several, with padding or
/// without: the result is the same (integers bit for bit), for every dimension and every
/// part count tried, and the second reduce folds the parts.
#[test]
fn a_rule_splits_any_reduced_dimension_of_a_multi_dimensional_reduce() {
    use hlo_transforms::tree_reduction::ReduceSplit;
    use hlo_transforms::TreeReductionRewriter;
    use std::sync::Arc;
    let text = "HloModule m\nr {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\nENTRY e {\n  p = s32[6,7,5,9] parameter(0)\n  z = s32[] constant(0)\n  ROOT o = s32[7,9] reduce(p, z), dimensions={0,2}, to_apply=r\n}\n";
    let m = hlo::parse_module(text).unwrap();
    let v: Vec<i32> = (0..6 * 7 * 5 * 9)
        .map(|i| (i * 7919 % 1013) - 500)
        .collect();
    let arg = Literal::Array(
        ArrayLiteral::new(
            Shape::array(ElementType::S32, vec![6, 7, 5, 9]),
            ArrayData::S32(v),
        )
        .unwrap(),
    );
    let want = hlo_eval::evaluate(&m, std::slice::from_ref(&arg)).unwrap();
    for (dim, outer) in [(0, 2), (0, 3), (0, 4), (2, 2), (2, 3), (2, 4)] {
        let mut t = m.clone();
        let mut pass = TreeReductionRewriter::with_rule(Arc::new(move |_, _, _| {
            Some(ReduceSplit { dim, outer })
        }));
        assert!(pass.run(&mut t).unwrap(), "dim {dim} outer {outer}");
        hlo::pass::verify::verify(&t).unwrap();
        let reduces = t
            .computations
            .iter()
            .flat_map(|c| c.instructions())
            .filter(|(_, i)| i.opcode == hlo::Opcode::Reduce)
            .count();
        assert_eq!(reduces, 2, "dim {dim} outer {outer}:\n{t}");
        let got = hlo_eval::evaluate(&t, std::slice::from_ref(&arg)).unwrap();
        assert_eq!(got, want, "dim {dim} outer {outer}:\n{t}");
    }
}

/// The default rule splits a reduce over several dimensions (contiguous or not) with
/// more than 4096 elements per output and few outputs: integer sums bit for bit, a float
/// sum within tolerance; a `bf16` sum (XLA:CPU's order) and one with 16 outputs stay.
#[test]
fn default_rule_splits_few_long_multi_dimensional_reduces() {
    for (shape, dims) in [([3, 70, 70], "1,2"), ([70, 3, 70], "0,2")] {
        let out = shape[if dims == "1,2" { 0 } else { 1 }];
        let text = |ty: &str| {
            format!(
                "HloModule m\nr {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  ROOT s = {ty}[] add(x, y)\n}}\nENTRY e {{\n  p = {ty}[{},{},{}] parameter(0)\n  z = {ty}[] constant(0)\n  ROOT o = {ty}[{out}] reduce(p, z), dimensions={{{dims}}}, to_apply=r\n}}\n",
                shape[0], shape[1], shape[2]
            )
        };
        let n = shape.iter().product::<i64>() as usize;
        let s = Shape::array(ElementType::S32, shape.to_vec());
        let v: Vec<i32> = (0..n as i32).map(|i| (i * 7919 % 1013) - 500).collect();
        let arg = Literal::Array(ArrayLiteral::new(s, ArrayData::S32(v)).unwrap());
        let (a, b) = run_both(&text("s32"), arg);
        assert_eq!(a, b, "{dims}");
        let s = Shape::array(ElementType::F32, shape.to_vec());
        let v: Vec<f32> = (0..n).map(|i| (i * 7919 % 1000) as f32 * 0.37).collect();
        let arg = Literal::Array(ArrayLiteral::new(s, ArrayData::F32(v)).unwrap());
        let (a, b) = run_both(&text("f32"), arg);
        assert!(tolerance::compare(b.as_array().unwrap(), a.as_array().unwrap()).matches);
        let mut bf = hlo::parse_module(&text("bf16")).unwrap();
        let changed = hlo_transforms::TreeReductionRewriter::default()
            .run(&mut bf)
            .unwrap();
        assert!(!changed, "bf16 {dims}");
    }
    let wide = "HloModule m\nr {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\nENTRY e {\n  p = f32[16,70,70] parameter(0)\n  z = f32[] constant(0)\n  ROOT o = f32[16] reduce(p, z), dimensions={1,2}, to_apply=r\n}\n";
    let mut m = hlo::parse_module(wide).unwrap();
    assert!(!hlo_transforms::TreeReductionRewriter::default()
        .run(&mut m)
        .unwrap());
}
