//! A row sum that a fused consumer reads through a broadcast is computed once per row,
//! before the consumer's element loop, whatever order the sum takes: the plain lanes
//! (short rows) or blocks of chunks (long float rows, `codegen`'s `blocked_sum`). Issue 30's
//! sixth batch found the blocked order left inside the element loop (a label-smoothing
//! sum over 32768 tokens summed again for each of the row's elements: 171 s where XLA
//! takes 30 ms), because the hoisting saw its block lanes as carried from one element
//! to the next.

use codegen::kir::{Kernel, Stmt};

/// One fusion, as priority fusion forms it for optax's smoothed cross-entropy gradient: a
/// label-smoothing target's row sum `r` (of a one-hot from an iota and the labels, scaled)
/// read through a broadcast by the consumer, which also reads the sum's elementwise input
/// `m` at its own element.
fn module(n: i64) -> String {
    format!(
        "HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
fused {{
  y = s32[8]{{0}} parameter(0)
  x = f32[8,{n}]{{1,0}} parameter(1)
  yb = s32[8,{n}]{{1,0}} broadcast(y), dimensions={{0}}
  io = s32[8,{n}]{{1,0}} iota(), iota_dimension=1
  eq = pred[8,{n}]{{1,0}} compare(yb, io), direction=EQ
  cv = f32[8,{n}]{{1,0}} convert(eq)
  c = f32[] constant(0.9)
  cb = f32[8,{n}]{{1,0}} broadcast(c), dimensions={{}}
  m = f32[8,{n}]{{1,0}} multiply(cv, cb)
  e = f32[8,{n}]{{1,0}} exponential(x)
  z = f32[] constant(0)
  r = f32[8]{{0}} reduce(m, z), dimensions={{1}}, to_apply=add
  rb = f32[8,{n}]{{1,0}} broadcast(r), dimensions={{0}}
  t = f32[8,{n}]{{1,0}} multiply(rb, e)
  ROOT o = f32[8,{n}]{{1,0}} add(m, t)
}}
ENTRY main {{
  p0 = s32[8]{{0}} parameter(0)
  p1 = f32[8,{n}]{{1,0}} parameter(1)
  ROOT f = f32[8,{n}]{{1,0}} fusion(p0, p1), kind=kLoop, calls=fused
}}
"
    )
}

/// The bodies of the loops that store directly (the element loops).
fn store_loops<'a>(stmts: &'a [Stmt], out: &mut Vec<&'a [Stmt]>) {
    for s in stmts {
        match s {
            Stmt::Loop { body, .. } => {
                if body.iter().any(|t| matches!(t, Stmt::Store { .. })) {
                    out.push(body);
                }
                store_loops(body, out);
            }
            Stmt::If {
                body, else_body, ..
            } => {
                store_loops(body, out);
                store_loops(else_body, out);
            }
            _ => {}
        }
    }
}

fn kernels(n: i64) -> Vec<Kernel> {
    let m = hlo::parse_module(&module(n)).expect("the module parses");
    plan::build_program(&m).expect("it compiles").kernels
}

/// Rows of 512 (16 chunks of 32 lanes: the plain order), 1100 (34 chunks: one block and a
/// remainder block), 4096 (128 chunks: four whole blocks) and 4113 (the same and a tail
/// of 17 elements).
#[test]
fn a_sum_read_through_a_broadcast_is_not_recomputed_per_element() {
    for n in [512, 1100, 4096, 4113] {
        let ks = kernels(n);
        assert_eq!(ks.len(), 1, "n={n}: one fusion, one kernel");
        let mut loops = Vec::new();
        store_loops(&ks[0].body, &mut loops);
        assert!(!loops.is_empty(), "n={n}: no element loop");
        for body in loops {
            let inner = body
                .iter()
                .filter(|s| matches!(s, Stmt::Loop { .. }))
                .count();
            assert_eq!(
                inner,
                0,
                "n={n}: the element loop of {} holds {inner} loops (a sum computed per element):\n{body:#?}",
                ks[0].name
            );
        }
    }
}
