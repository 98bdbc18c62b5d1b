//! Malformed instructions and operands give `KernelError`s, never panics, and the
//! messages name the operation.

use crate::support;

use hlo::{parse_module, Literal};
use hlo_eval::numeric::{handles, KernelError};
use support::*;

fn err(text: &str, args: &[Literal]) -> String {
    match eval_root(text, args) {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn wrong_operands_are_errors() {
    let dot = "HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[3,2] parameter(1)\n  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}";
    // Operands whose shapes disagree with the instruction's.
    let e = err(
        dot,
        &[f32s("f32[2,2]", &[0.; 4]), f32s("f32[3,2]", &[0.; 6])],
    );
    assert!(e.contains("dot"), "{e}");
    // A tuple operand.
    let e = err(dot, &[Literal::Tuple(vec![]), f32s("f32[3,2]", &[0.; 6])]);
    assert!(e.contains("tuple"), "{e}");

    let gather = "HloModule m\nENTRY e {\n  x = f32[4,2] parameter(0)\n  i = s32[3] parameter(1)\n  ROOT g = f32[5,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}\n}";
    let e = err(
        gather,
        &[f32s("f32[4,2]", &[0.; 8]), s32s("s32[3]", &[0, 1, 2])],
    );
    assert!(e.contains("gather"), "{e}");
    // Float indices.
    let e = err(
        &gather
            .replace("s32[3]", "f32[3]")
            .replace("f32[5,2]", "f32[3,2]"),
        &[f32s("f32[4,2]", &[0.; 8]), f32s("f32[3]", &[0., 1., 2.])],
    );
    assert!(e.contains("integer indices"), "{e}");

    let conv = "HloModule m\nENTRY e {\n  x = f32[1,5,2] parameter(0)\n  k = f32[2,3,1] parameter(1)\n  ROOT c = f32[1,4,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f\n}";
    let e = err(
        conv,
        &[f32s("f32[1,5,2]", &[0.; 10]), f32s("f32[2,3,1]", &[0.; 6])],
    );
    assert!(e.contains("convolution"), "{e}");

    let fft = "HloModule m\nENTRY e {\n  x = c64[8] parameter(0)\n  ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={4}\n}";
    let e = err(
        fft,
        &[arr(
            "c64[8]",
            hlo::literal::ArrayData::C64(vec![[0.0; 2]; 8]),
        )],
    );
    assert!(e.contains("fft"), "{e}");

    let chol = "HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  ROOT c = f32[2,3] cholesky(a), lower=true\n}";
    let e = err(chol, &[f32s("f32[2,3]", &[0.; 6])]);
    assert!(e.contains("square"), "{e}");

    let rng = "HloModule m\nENTRY e {\n  s = u64[1] parameter(0)\n  ROOT r = (u64[1], u32[4]) rng-bit-generator(s), algorithm=rng_philox\n}";
    let e = err(rng, &[arr("u64[1]", hlo::literal::ArrayData::U64(vec![1]))]);
    assert!(e.contains("state"), "{e}");
}

#[test]
fn unknown_custom_calls_are_not_handled() {
    let text = "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT c = f32[2] custom-call(a), custom_call_target=\"my_kernel\"\n}";
    let module = parse_module(text).unwrap();
    let root = module.entry().root_instr();
    assert!(!handles(root.opcode(), root));
    let e = eval_root(text, &[f32s("f32[2]", &[0., 1.])]).unwrap_err();
    assert!(matches!(e, KernelError::Unsupported(_)), "{e}");
    assert!(e.to_string().contains("my_kernel"), "{e}");
}

#[test]
fn overflowing_windows_are_errors() {
    let text = "HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = f32[] parameter(1)
  ROOT r = f32[2] reduce-window(x, i), window={size=1 stride=9223372036854775807 pad=-1_0}, to_apply=add
}";
    let e = err(text, &[f32s("f32[4]", &[0.; 4]), f32s("f32[]", &[0.])]);
    assert!(e.contains("overflow"), "{e}");
}
