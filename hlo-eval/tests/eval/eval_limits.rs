//! The size limit of evaluation: its machine-derived default, results and random arguments
//! over it are refused before allocation with a message naming both sizes; f16/bf16
//! arithmetic (through the `half` crate) still rounds as XLA does.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use hlo_eval::memory::{default_size_limit, parse_size, FALLBACK_SIZE_LIMIT};
use hlo_eval::random::random_literal;
use hlo_eval::{evaluate, EvalError, Evaluator};
use std::time::{Duration, Instant};

fn module(text: &str) -> hlo::Module {
    hlo::parse_module(text).expect("module parses")
}

#[test]
fn the_default_limit_follows_available_memory() {
    let m = module("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n");
    let limit = Evaluator::new(&m).size_limit();
    assert_eq!(limit, default_size_limit());
    match hlo_eval::memory::available_memory() {
        // Read once per process: the memory available now may differ a little.
        Some(_) => assert!(limit > 0),
        None => assert_eq!(limit, FALLBACK_SIZE_LIMIT),
    }
}

#[test]
fn results_over_the_limit_are_refused_quickly() {
    let m = module(
        "HloModule big\nENTRY main {\n  p = f32[] parameter(0)\n  \
         ROOT b = f32[100000,100000] broadcast(p), dimensions={}\n}\n",
    );
    let start = Instant::now();
    let arg = Literal::Array(
        ArrayLiteral::new(Shape::scalar(ElementType::F32), ArrayData::F32(vec![1.0])).unwrap(),
    );
    let err = Evaluator::new(&m)
        .with_size_limit(parse_size("4G").unwrap())
        .run(&[arg])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "instruction `b` would allocate 40000000000 bytes (37.3 GiB), more than the limit of \
         4294967296 bytes (4 GiB)"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// The limit bounds every value the run holds at once (issue 36 item 7): four results of
/// 400 KB each, all live until the tuple, exceed 1.3 MB together though each fits; the
/// same chain with each value dead after its one use runs.
#[test]
fn the_limit_bounds_the_live_values_together() {
    let arg = Literal::Array(
        ArrayLiteral::new(Shape::scalar(ElementType::F32), ArrayData::F32(vec![1.0])).unwrap(),
    );
    let wide = module(
        "HloModule wide\nENTRY e {\n  p = f32[] parameter(0)\n  \
         a = f32[100000] broadcast(p), dimensions={}\n  b = f32[100000] negate(a)\n  \
         c = f32[100000] exponential(a)\n  d = f32[100000] sine(a)\n  \
         ROOT t = (f32[100000], f32[100000], f32[100000], f32[100000]) tuple(a, b, c, d)\n}\n",
    );
    let err = Evaluator::new(&wide)
        .with_size_limit(1_300_000)
        .run(std::slice::from_ref(&arg))
        .unwrap_err();
    assert!(matches!(err, EvalError::LiveTooLarge { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "instruction `d` would allocate 400000 bytes (390.6 KiB) while the run holds 1200004 \
         bytes (1.1 MiB) of live values, more than the limit of 1300000 bytes (1.2 MiB) \
         together"
    );
    let chain = module(
        "HloModule chain\nENTRY e {\n  p = f32[] parameter(0)\n  \
         a = f32[100000] broadcast(p), dimensions={}\n  b = f32[100000] negate(a)\n  \
         c = f32[100000] exponential(b)\n  ROOT d = f32[100000] sine(c)\n}\n",
    );
    assert!(Evaluator::new(&chain)
        .with_size_limit(1_300_000)
        .run(&[arg])
        .is_ok());
}

#[test]
fn random_arguments_over_the_limit_are_refused() {
    let shape = Shape::array(ElementType::F32, vec![100_000, 100_000]);
    let err = random_literal(&shape, 0, 0, 1 << 30).unwrap_err();
    assert!(
        matches!(err, EvalError::TooLarge { bytes: 40_000_000_000, limit, .. } if limit == 1 << 30),
        "{err}"
    );
    // Within the limit, the same seed gives the same values.
    let small = Shape::array(ElementType::F32, vec![8]);
    assert_eq!(
        random_literal(&small, 3, 1, 32).unwrap(),
        random_literal(&small, 3, 1, 32).unwrap()
    );
    assert!(random_literal(&small, 3, 1, 31).is_err());
}

#[test]
fn half_precision_rounds_like_xla() {
    // f16: 1 + 2^-11 is halfway between 1 and the next f16, a tie to even (1.0); 65520
    // overflows to infinity; 1 + 2^-8 and 1 + 3 * 2^-8 are exact. bf16: 1 + 2^-11 rounds
    // down, 65520 up to 65536, 1 + 2^-8 ties to 1.0, 1 + 3 * 2^-8 ties up to even.
    let m = module(
        "HloModule h\nENTRY e {\n  a = f32[4] parameter(0)\n  h = f16[4] convert(a)\n  \
         b = bf16[4] convert(a)\n  ROOT t = (f16[4], bf16[4]) tuple(h, b)\n}\n",
    );
    let a = ArrayLiteral::new(
        Shape::array(ElementType::F32, vec![4]),
        ArrayData::F32(vec![
            1.0 + 2f32.powi(-11),
            65520.0,
            1.0 + 2f32.powi(-8),
            1.0 + 3.0 * 2f32.powi(-8),
        ]),
    )
    .unwrap();
    let out = evaluate(&m, &[Literal::Array(a)]).unwrap();
    let Literal::Tuple(parts) = out else {
        panic!("a tuple")
    };
    let bits = |l: &Literal| match l.as_array().unwrap().data() {
        ArrayData::Bits16(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(bits(&parts[0]), [0x3c00, 0x7c00, 0x3c04, 0x3c0c]);
    assert_eq!(bits(&parts[1]), [0x3f80, 0x4780, 0x3f80, 0x3f82]);
}
