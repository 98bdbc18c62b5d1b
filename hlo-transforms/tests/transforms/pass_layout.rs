//! Layout passes keep values: the evaluator (which reads bitcasts through layouts) gives
//! the same results before and after.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::Pass;
use hlo::{ElementType, Literal, Shape};

fn check(text: &str, pass: &mut dyn Pass, args: &[Literal]) {
    let m = hlo::parse_module(text).unwrap();
    let mut t = m.clone();
    assert!(pass.run(&mut t).unwrap());
    hlo::pass::verify::verify(&t).unwrap_or_else(|e| panic!("{e}\n{}", hlo::print_module(&t)));
    let a = hlo_eval::evaluate(&m, args).unwrap();
    let b = hlo_eval::evaluate(&t, args).unwrap();
    // Values compare in logical order; result layouts may differ.
    let leaves = |l: &Literal| -> Vec<ArrayData> {
        match l {
            Literal::Tuple(v) => v
                .iter()
                .map(|x| x.as_array().unwrap().data().clone())
                .collect(),
            x => vec![x.as_array().unwrap().data().clone()],
        }
    };
    assert_eq!(leaves(&a), leaves(&b), "\n{}", hlo::print_module(&t));
}

fn arg(dims: &[i64]) -> Literal {
    let n: i64 = dims.iter().product();
    Literal::Array(
        ArrayLiteral::new(
            Shape::array(ElementType::S32, dims.to_vec()),
            ArrayData::S32((0..n as i32).collect()),
        )
        .unwrap(),
    )
}

#[test]
fn normalized_copies_and_transposes_keep_values() {
    let text = "HloModule m\nENTRY e {\n  a = s32[2,3,4]{2,1,0} parameter(0)\n  c = s32[2,3,4]{0,2,1} copy(a)\n  t = s32[4,3,2]{0,1,2} transpose(a), dimensions={2,1,0}\n  n = s32[2,3,4]{0,2,1} negate(c)\n  q = s32[6,4]{0,1} reshape(n)\n  ROOT r = (s32[2,3,4]{0,2,1}, s32[4,3,2]{0,1,2}, s32[6,4]{0,1}) tuple(n, t, q)\n}\n";
    check(
        text,
        &mut hlo_transforms::LayoutNormalization,
        &[arg(&[2, 3, 4])],
    );
}

#[test]
fn assigned_layouts_keep_values() {
    let text = "HloModule m\nENTRY e {\n  a = s32[2,3]{0,1} parameter(0)\n  b = s32[2,3] parameter(1)\n  ROOT s = s32[2,3] add(a, b)\n}\n";
    check(
        text,
        &mut hlo_transforms::LayoutAssignment,
        &[arg(&[2, 3]), arg(&[2, 3])],
    );
}
