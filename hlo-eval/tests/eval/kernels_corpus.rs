//! Whole corpus programs that exercise the kernels, evaluated by a small test-only
//! interpreter (`kernels/interp.rs`) with every kernel op going through
//! `hlo_eval::numeric::evaluate`, compared with XLA's recorded outputs: integers and
//! predicates exactly, floating point within a relative tolerance of the output's
//! scale (`1e-5` for f32/f64, one bf16 ulp for bf16).

use crate::interp;
use crate::support;

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{parse_module, ElementType, Literal, Shape};
use support::{corpus_dir, read_npz, NpyArray};

fn to_literal(a: &NpyArray, shape: &Shape) -> Literal {
    let ty = shape.element_type().unwrap();
    let b = &a.bytes;
    macro_rules! le {
        ($t:ty, $n:expr) => {
            b.chunks($n)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
                .collect::<Vec<$t>>()
        };
    }
    let data = match ty {
        ElementType::F32 => ArrayData::F32(le!(f32, 4)),
        ElementType::F64 => ArrayData::F64(le!(f64, 8)),
        ElementType::S32 => ArrayData::S32(le!(i32, 4)),
        ElementType::S64 => ArrayData::S64(le!(i64, 8)),
        ElementType::U32 => ArrayData::U32(le!(u32, 4)),
        ElementType::U64 => ArrayData::U64(le!(u64, 8)),
        ElementType::S16 => ArrayData::S16(le!(i16, 2)),
        ElementType::U16 => ArrayData::U16(le!(u16, 2)),
        ElementType::BF16 | ElementType::F16 => ArrayData::Bits16(le!(u16, 2)),
        ElementType::S8 => ArrayData::S8(b.iter().map(|&x| x as i8).collect()),
        ElementType::U8 => ArrayData::U8(b.clone()),
        ElementType::Pred => ArrayData::Pred(b.iter().map(|&x| x != 0).collect()),
        ElementType::C64 => {
            let f = le!(f32, 4);
            ArrayData::C64(f.chunks(2).map(|c| [c[0], c[1]]).collect())
        }
        ElementType::C128 => {
            let f = le!(f64, 8);
            ArrayData::C128(f.chunks(2).map(|c| [c[0], c[1]]).collect())
        }
        t => panic!("npz of {t}"),
    };
    let mut s = shape.clone();
    s.set_layout(None);
    Literal::Array(ArrayLiteral::new(s, data).expect("npz data fits the parameter shape"))
}

fn flatten(l: Literal, out: &mut Vec<Literal>) {
    match l {
        Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}

/// Compares one output; `Err` describes the first mismatch.
fn compare(got: &Literal, want: &Literal) -> Result<(), String> {
    let (g, w) = (got.as_array().unwrap(), want.as_array().unwrap());
    if g.shape().dims() != w.shape().dims() || g.element_type() != w.element_type() {
        return Err(format!("shape {} vs {}", g.shape(), w.shape()));
    }
    let ty = w.element_type();
    let n = w.data().len();
    let complex = ty.is_complex();
    let parts = |a: &ArrayLiteral| -> Vec<f64> {
        match a.data() {
            ArrayData::C64(v) => v
                .iter()
                .flat_map(|c| [f64::from(c[0]), f64::from(c[1])])
                .collect(),
            ArrayData::C128(v) => v.iter().flat_map(|c| [c[0], c[1]]).collect(),
            _ => (0..n).map(|i| a.get_f64(i).unwrap()).collect(),
        }
    };
    let (gv, wv) = (parts(g), parts(w));
    if !(ty.is_float() || complex) {
        return if gv == wv {
            Ok(())
        } else {
            Err(format!("got {gv:?}\nwant {wv:?}"))
        };
    }
    let rtol = if ty == ElementType::BF16 {
        1.0 / 128.0
    } else if ty == ElementType::F16 {
        1e-3
    } else {
        1e-5
    };
    let scale = wv
        .iter()
        .filter(|x| x.is_finite())
        .fold(1e-30f64, |m, x| m.max(x.abs()));
    for (i, (a, b)) in gv.iter().zip(&wv).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rtol * (b.abs() + scale);
        if !ok {
            return Err(format!("element {i}: got {a}, want {b} (scale {scale})"));
        }
    }
    Ok(())
}

/// Runs `program`'s before-optimization HLO on its recorded inputs and compares every
/// output.
fn check(program: &str) -> Result<(), String> {
    let dir = corpus_dir().join(program);
    let text = std::fs::read_to_string(dir.join("before_optimizations.hlo")).unwrap();
    let module = parse_module(&text).map_err(|e| e.to_string())?;
    let entry = module.entry();
    let inputs = read_npz(&dir.join("inputs.npz"));
    let args: Vec<Literal> = (0..entry.parameters().len())
        .map(|i| {
            let p = entry.instr(entry.parameter(i).unwrap());
            let (_, a) = inputs
                .iter()
                .find(|(k, _)| *k == format!("in{i}"))
                .expect("input");
            to_literal(a, p.shape())
        })
        .collect();
    let mut it = interp::Interp { module: &module };
    let result = it.run(module.entry_id(), &args);
    let mut got = Vec::new();
    flatten(result, &mut got);
    let outputs = read_npz(&dir.join("outputs.npz"));
    if got.len() != outputs.len() {
        return Err(format!("{} outputs, XLA has {}", got.len(), outputs.len()));
    }
    for (i, g) in got.iter().enumerate() {
        let (_, a) = outputs
            .iter()
            .find(|(k, _)| *k == format!("out{i}"))
            .expect("output");
        let want = to_literal(a, &g.shape());
        compare(g, &want).map_err(|e| format!("out{i}: {e}"))?;
    }
    Ok(())
}

macro_rules! corpus_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if let Err(e) = check(stringify!($name)) {
                    panic!("{}: {e}", stringify!($name));
                }
            }
        )*
    };
}

corpus_tests!(
    conv_variants,
    conv_batchnorm,
    resnet_block_grad,
    top_k,
    sort,
    sort_nan_ints,
    gather,
    scatter_add,
    reduce_window,
    maxpool_grad,
    cumsum,
    einsum,
    bf16_matmul,
    attention,
    mlp_forward,
    fft,
    cholesky,
    triangular_solve,
    linalg_solve,
    mlp_train_step,
    per_example_grads,
    transformer_block_forward,
    transformer_block_train_step,
    lax_map,
);
