//! Reference-evaluator kernels: dot and convolution on the sizes of real models (the
//! evaluator must run the corpus' largest programs in seconds).
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{parse_module, parse_shape, CompId, Literal};
use hlo_eval::numeric::{evaluate, CallComputation, KernelError};

/// Dot and convolution call no computations.
struct NoCalls;

impl CallComputation for NoCalls {
    fn call(&mut self, _: CompId, _: &[Literal]) -> Result<Literal, KernelError> {
        Err(KernelError::Unsupported(
            "no computations in this bench".into(),
        ))
    }
}

fn f32_array(shape: &str) -> Literal {
    let shape = parse_shape(shape).expect("shape");
    let n = shape.element_count().expect("count") as usize;
    let data = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    Literal::Array(ArrayLiteral::new(shape, ArrayData::F32(data)).expect("fits"))
}

fn bench_root(c: &mut Criterion, name: &str, text: &str, args: &[&str], flops: u64) {
    let module = parse_module(text).expect("parse");
    let root = module.entry().root_instr();
    let values: Vec<Literal> = args.iter().map(|s| f32_array(s)).collect();
    let refs: Vec<&Literal> = values.iter().collect();
    let mut g = c.benchmark_group("kernels");
    g.throughput(Throughput::Elements(flops));
    g.bench_function(name, |b| {
        b.iter(|| {
            black_box(evaluate(&module, root, black_box(&refs), &mut NoCalls).expect("evaluates"))
        })
    });
    g.finish();
}

fn dot(c: &mut Criterion) {
    let text = "HloModule m
ENTRY e {
  a = f32[256,512] parameter(0)
  b = f32[512,256] parameter(1)
  ROOT d = f32[256,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    bench_root(
        c,
        "dot_256x512x256_f32",
        text,
        &["f32[256,512]", "f32[512,256]"],
        256 * 512 * 256,
    );
}

fn conv(c: &mut Criterion) {
    let text = "HloModule m
ENTRY e {
  x = f32[8,32,32,16] parameter(0)
  k = f32[3,3,16,32] parameter(1)
  ROOT c = f32[8,32,32,32] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}";
    bench_root(
        c,
        "conv_nhwc_8x32x32x16_3x3x32_f32",
        text,
        &["f32[8,32,32,16]", "f32[3,3,16,32]"],
        8 * 32 * 32 * 32 * 9 * 16,
    );
}

criterion_group!(benches, dot, conv);
criterion_main!(benches);
