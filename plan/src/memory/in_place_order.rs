//! In-place kernels proven by the kernel's statement order: a kernel whose output element
//! `i` reads a whole row of an operand (a softmax, a normalization: reductions over the
//! row, then an epilogue) has no identity indexing map, so [`super::in_place`] cannot
//! share the operand's bytes, yet the emitted loops read every element of a row before
//! they write any of it. Attention's probabilities are such a kernel: scores and
//! probabilities were two live 64 MB values in `unet_down_groupnorm_attn`.
//!
//! The proof reads the kernel IR. It finds the scope `S` (a statement list inside the
//! block's loops, each execution of it fixed by the enclosing loop variables) holding every
//! store to the output and every load of the operand, where:
//! - the last statement of `S` touching either is the *write*: one store at `B`, or a loop
//!   `for v in [lo, hi]` whose body stores directly at `B + v` (every element of that range,
//!   unguarded), with `B` an affine sum of the enclosing variables;
//! - inside the write, the operand is loaded only at the store's own offset, before the
//!   store (element `B + v` is read in the iteration that writes it, before it writes it);
//! - before the write, `S` stores nothing to the output and loads the operand only inside
//!   `[B + lo, B + hi]` (the interval of the offset over the inner loops' bounds);
//! - the ranges `[B + lo, B + hi]` of two executions (two points of the enclosing variables,
//!   the block included) are disjoint: sorted by coefficient, each variable's stride is at
//!   least the span below it plus the range's length.
//!
//! Then an execution reads only elements it writes itself, after reading them, and no other
//! execution (another block, another iteration, run in any order or in parallel) writes
//! them. Only single-thread blocks (the CPU's kernels) and offsets that are sums of loop
//! variables are considered; anything else is not proven and keeps its own bytes.

use std::collections::HashMap;

use affine::linear::Linear;
use affine::{Expr, Var};
use codegen::kir::{for_each_load, Access, Kernel, LoopKind, Stmt};

use super::in_place::Candidate;
use crate::{Buffer, Thunk};

/// A variable with its inclusive bounds.
type Bound = (Var, i64, i64);

/// An offset as `sum(coefficient * variable) + constant`; `None` where an atom of its linear
/// form is not a plain variable (a division, a modulus, a product of variables).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Affine {
    coefs: HashMap<Var, i64>,
    constant: i64,
}

impl Affine {
    fn of(e: Expr) -> Option<Affine> {
        let lin = Linear::of(e)?;
        let mut coefs = HashMap::new();
        for &(atom, k) in &lin.terms {
            *coefs.entry(atom.as_var()?).or_insert(0) += k;
        }
        coefs.retain(|_, k| *k != 0);
        Some(Affine {
            coefs,
            constant: lin.constant,
        })
    }

    /// `self - other`.
    fn minus(&self, other: &Affine) -> Option<Affine> {
        let mut coefs = self.coefs.clone();
        for (&v, &k) in &other.coefs {
            let c = coefs.entry(v).or_insert(0);
            *c = c.checked_sub(k)?;
        }
        coefs.retain(|_, k| *k != 0);
        Some(Affine {
            coefs,
            constant: self.constant.checked_sub(other.constant)?,
        })
    }

    /// The inclusive range over variables bounded by `bounds`; `None` where a variable is
    /// not bounded there or the range overflows.
    fn range(&self, bounds: &[Bound]) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (&v, &k) in &self.coefs {
            let &(_, vlo, vhi) = bounds.iter().rev().find(|b| b.0 == v)?;
            let (a, b) = (k.checked_mul(vlo)?, k.checked_mul(vhi)?);
            lo = lo.checked_add(a.min(b))?;
            hi = hi.checked_add(a.max(b))?;
        }
        Some((lo, hi))
    }
}

/// What a statement does to the output and the operand (anywhere inside it).
#[derive(Default)]
struct Touch {
    /// Stores (and atomics) to the output.
    stores: usize,
    /// Loads of the operand.
    loads: usize,
}

fn touch(stmts: &[Stmt], output: usize, inputs: &[usize]) -> Touch {
    let mut t = Touch::default();
    for_each_load(stmts, &mut |buf, _| {
        if inputs.contains(&buf) {
            t.loads += 1;
        }
    });
    count_stores(stmts, output, &mut t.stores);
    t
}

fn count_stores(stmts: &[Stmt], output: usize, n: &mut usize) {
    for s in stmts {
        match s {
            Stmt::Store { buf, .. } | Stmt::Atomic { buf, .. } if *buf == output => *n += 1,
            Stmt::Loop { body, .. } => count_stores(body, output, n),
            Stmt::If {
                body, else_body, ..
            } => {
                count_stores(body, output, n);
                count_stores(else_body, output, n);
            }
            _ => {}
        }
    }
}

/// Every load of the operand in `stmts` with the bounds of the loops around it (those of
/// `bounds` first).
fn loads_with_bounds(
    stmts: &[Stmt],
    inputs: &[usize],
    bounds: &mut Vec<Bound>,
    out: &mut Vec<(Expr, Vec<Bound>)>,
) {
    for s in stmts {
        match s {
            Stmt::Loop {
                var, lo, hi, body, ..
            } => {
                bounds.push((*var, *lo, *hi));
                loads_with_bounds(body, inputs, bounds, out);
                bounds.pop();
            }
            Stmt::If {
                body, else_body, ..
            } => {
                loads_with_bounds(body, inputs, bounds, out);
                loads_with_bounds(else_body, inputs, bounds, out);
            }
            Stmt::Atomic { body, .. } => {
                loads_with_bounds(body, inputs, bounds, out);
                for_each_load(std::slice::from_ref(s), &mut |buf, e| {
                    if inputs.contains(&buf) {
                        out.push((e, bounds.clone()));
                    }
                });
            }
            _ => for_each_load(std::slice::from_ref(s), &mut |buf, e| {
                if inputs.contains(&buf) {
                    out.push((e, bounds.clone()));
                }
            }),
        }
    }
}

/// Whether kernel `k` may write its output parameter `output` over the memory of the
/// operand read through parameters `inputs` (the same buffer, bound to each), by the
/// argument of the module doc. `blocks` is the number of blocks the thunk launches.
pub fn writes_after_reads(k: &Kernel, blocks: i64, output: usize, inputs: &[usize]) -> bool {
    let (Some(o), false) = (k.buffers.get(output), inputs.is_empty()) else {
        return false;
    };
    let same_bytes = inputs.iter().all(|&i| {
        k.buffers.get(i).is_some_and(|p| {
            i != output
                && p.access == Access::In
                && p.ty.byte_width() == o.ty.byte_width()
                && p.element_count() == o.element_count()
        })
    });
    if k.grid.threads != 1 || o.access != Access::Out || !same_bytes {
        return false;
    }
    let blocks = blocks.max(k.grid.blocks);
    let mut enclosing = Vec::new();
    match k.grid.block_var {
        Some(v) => enclosing.push((v, 0, blocks - 1)),
        None if blocks > 1 => return false,
        None => {}
    }
    scope(&k.body, &mut enclosing, output, inputs)
}

/// Whether `body` holds a store to `output` as one of its own statements.
fn stores_directly(body: &[Stmt], output: usize) -> bool {
    body.iter()
        .any(|s| matches!(s, Stmt::Store { buf, .. } if *buf == output))
}

fn scope(stmts: &[Stmt], enclosing: &mut Vec<Bound>, output: usize, inputs: &[usize]) -> bool {
    let touching: Vec<usize> = (0..stmts.len())
        .filter(|&i| {
            let t = touch(std::slice::from_ref(&stmts[i]), output, inputs);
            t.stores + t.loads > 0
        })
        .collect();
    // Into the one loop holding everything, unless that loop is the write itself.
    if let [only] = touching[..] {
        if let Stmt::Loop {
            kind,
            var,
            lo,
            hi,
            body,
        } = &stmts[only]
        {
            if *kind == LoopKind::Threads {
                return false;
            }
            if !stores_directly(body, output) {
                enclosing.push((*var, *lo, *hi));
                let ok = scope(body, enclosing, output, inputs);
                enclosing.pop();
                return ok;
            }
        }
    }
    let Some(&last) = touching.last() else {
        return false;
    };
    let Some((base, lo, hi)) = write_range(&stmts[last], enclosing, output, inputs) else {
        return false;
    };
    // Before the write: no store to the output, loads inside the range only.
    let before = &stmts[..last];
    if touch(before, output, inputs).stores > 0 {
        return false;
    }
    let mut loads = Vec::new();
    loads_with_bounds(before, inputs, &mut enclosing.clone(), &mut loads);
    let inside = loads.iter().all(|(e, bounds)| {
        let Some(rel) = Affine::of(*e).and_then(|a| a.minus(&base)) else {
            return false;
        };
        let inner = &bounds[enclosing.len()..];
        rel.coefs.keys().all(|v| inner.iter().any(|b| b.0 == *v))
            && rel
                .range(inner)
                .is_some_and(|(rlo, rhi)| lo <= rlo && rhi <= hi)
    });
    inside && disjoint(&base, enclosing, hi - lo + 1)
}

/// The write statement's offset base `B` over the enclosing variables and the range
/// `[lo, hi]` of `offset - B`, where it is a write of the module doc: a store, or a loop
/// storing directly at `B + v`, loading the operand only at the store's offset before it.
fn write_range(
    s: &Stmt,
    enclosing: &[Bound],
    output: usize,
    inputs: &[usize],
) -> Option<(Affine, i64, i64)> {
    let only_enclosing = |a: &Affine| a.coefs.keys().all(|v| enclosing.iter().any(|b| b.0 == *v));
    match s {
        Stmt::Store { buf, offset, .. } if *buf == output => {
            let at = Affine::of(*offset)?;
            let mut same = true;
            for_each_load(std::slice::from_ref(s), &mut |b, e| {
                same &= !inputs.contains(&b) || Affine::of(e).as_ref() == Some(&at);
            });
            (same && only_enclosing(&at)).then_some((at, 0, 0))
        }
        Stmt::Loop {
            kind,
            var,
            lo,
            hi,
            body,
        } if *kind != LoopKind::Threads => {
            if touch(body, output, inputs).stores != 1 {
                return None;
            }
            let p = body
                .iter()
                .position(|s| matches!(s, Stmt::Store { buf, .. } if *buf == output))?;
            let Stmt::Store { offset, .. } = &body[p] else {
                return None;
            };
            let at = Affine::of(*offset)?;
            let mut base = at.clone();
            if base.coefs.remove(var) != Some(1) || !only_enclosing(&base) {
                return None;
            }
            let mut same = true;
            for_each_load(&body[..=p], &mut |b, e| {
                same &= !inputs.contains(&b) || Affine::of(e).as_ref() == Some(&at);
            });
            let after = touch(&body[p + 1..], output, inputs);
            (same && after.loads == 0).then_some((base, *lo, *hi))
        }
        _ => None,
    }
}

/// Whether `[B, B + len)` of two different points of the enclosing variables never meet:
/// every variable that takes more than one value appears in `B`, and sorted by the size
/// of its coefficient each one's stride is at least the span of the ones below plus `len`.
fn disjoint(base: &Affine, enclosing: &[Bound], len: i64) -> bool {
    let mut strides = Vec::new();
    for &(v, lo, hi) in enclosing {
        match base.coefs.get(&v) {
            Some(&k) => strides.push((k.unsigned_abs(), hi.abs_diff(lo))),
            None if hi > lo => return false,
            None => {}
        }
    }
    strides.sort_unstable();
    let mut span = len.unsigned_abs();
    for (k, extent) in strides {
        if k < span {
            return false;
        }
        let Some(s) = k.checked_mul(extent).and_then(|s| s.checked_add(span)) else {
            return false;
        };
        span = s;
    }
    true
}

/// Candidates the statement order proves (none of them already in `known`): for every
/// kernel thunk of the entry sequence or nested in a loop or conditional, each output parameter over an operand buffer of the same bytes
/// that only read-only parameters of that kernel name. [`super::in_place::accept`] keeps
/// those whose operand dies there, as for the ones the indexing maps prove.
pub fn candidates(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    known: &[Candidate],
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let nested = super::steps::nested_leaves(thunks);
    for t in thunks.iter().chain(nested.iter().map(|l| l.1)) {
        let Thunk::Kernel {
            kernel,
            args,
            blocks,
            ..
        } = t
        else {
            continue;
        };
        let Some(k) = kernels
            .get(*kernel)
            .filter(|k| k.buffers.len() == args.len())
        else {
            continue;
        };
        for (po, &ob) in args.iter().enumerate() {
            if k.buffers[po].access != Access::Out {
                continue;
            }
            for &ib in args {
                let inputs: Vec<usize> = (0..args.len()).filter(|&p| args[p] == ib).collect();
                let c = Candidate {
                    kernel: *kernel,
                    output: ob,
                    operand: ib,
                };
                let fresh = ib != ob
                    && !known.contains(&c)
                    && !out.contains(&c)
                    && buffers.get(ib).map(|b| b.bytes) == buffers.get(ob).map(|b| b.bytes);
                if fresh && writes_after_reads(k, *blocks, po, &inputs) {
                    out.push(c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use codegen::kir::parse_kernel;

    /// A row kernel: the row's sum first, then every element minus it; `read`, `write` and
    /// `own` are the offsets of the sum's load, the store and the epilogue's load, `order`
    /// puts the epilogue before the sum when false.
    fn row_kernel(head: &str, read: &str, write: &str, own: &str, order: bool) -> String {
        let sum = format!(
            "  for s0 in [0, 7] {{\n    let v1: f32 = b0[{read}]\n    let v2: f32 = add(v0, v1)\n    v0 = v2\n  }}\n"
        );
        let epilogue = format!(
            "  for.vector d1 in [0, 7] {{\n    let v3: f32 = b0[{own}]\n    let v4: f32 = sub(v3, v0)\n    b1[{write}] = v4\n  }}\n"
        );
        let (first, second) = if order {
            (sum, epilogue)
        } else {
            (epilogue, sum)
        };
        format!("{head}  var v0: f32 = 0.0:f32\n{first}{second}")
    }

    const HEAD: &str =
        "kernel k blocks=4 (d0 = block)\n  b0 in x: f32[4,8]{1,0}\n  b1 out y: f32[4,8]{1,0}\n";

    fn proven(text: &str) -> bool {
        let k = parse_kernel(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        writes_after_reads(&k, k.grid.blocks, 1, &[0])
    }

    #[test]
    fn a_row_read_whole_before_it_is_written_is_proven() {
        let k = row_kernel(HEAD, "d0 * 8 + s0", "d0 * 8 + d1", "d0 * 8 + d1", true);
        assert!(proven(&k), "{k}");
    }

    #[test]
    fn rows_in_a_loop_inside_the_block_are_proven() {
        let head =
            "kernel k blocks=2 (d0 = block)\n  b0 in x: f32[4,8]{1,0}\n  b1 out y: f32[4,8]{1,0}\n";
        let inner = row_kernel(
            "",
            "d0 * 16 + s1 * 8 + s0",
            "d0 * 16 + s1 * 8 + d1",
            "d0 * 16 + s1 * 8 + d1",
            true,
        );
        let body: String = inner.lines().map(|l| format!("  {l}\n")).collect();
        let k = format!("{head}  for s1 in [0, 1] {{\n{body}  }}\n");
        assert!(proven(&k), "{k}");
    }

    #[test]
    fn what_the_order_does_not_prove_keeps_its_own_bytes() {
        let row = "d0 * 8 + d1";
        let cases = [
            // Every block sums row 0, which block 0 writes.
            row_kernel(HEAD, "s0", row, row, true),
            // The sum reads the next row (written by the next block).
            row_kernel(HEAD, "d0 * 8 + s0 + 8", row, row, true),
            // The epilogue reads another element of the row than the one it writes.
            row_kernel(HEAD, "d0 * 8 + s0", row, "d0 * 8 + d1 * -1 + 7", true),
            // The row is written before it is summed.
            row_kernel(HEAD, "d0 * 8 + s0", row, row, false),
            // Every block writes row 0.
            row_kernel(HEAD, "s0", "d1", "d1", true),
            // Rows four elements apart overlap.
            row_kernel(HEAD, "d0 * 4 + s0", "d0 * 4 + d1", "d0 * 4 + d1", true),
        ];
        for k in &cases {
            assert!(!proven(k), "{k}");
        }
        // Another element width: the offsets are not the same bytes.
        let mut k = parse_kernel(&row_kernel(HEAD, "d0 * 8 + s0", row, row, true)).unwrap();
        assert!(writes_after_reads(&k, 4, 1, &[0]));
        k.buffers[0].ty = codegen::kir::ScalarType::F64;
        assert!(!writes_after_reads(&k, 4, 1, &[0]));
        // The output read too, or the operand written: not a plain output over an input.
        let mut k = parse_kernel(&row_kernel(HEAD, "d0 * 8 + s0", row, row, true)).unwrap();
        k.buffers[0].access = Access::InOut;
        assert!(!writes_after_reads(&k, 4, 1, &[0]));
    }

    #[test]
    fn disjoint_ranges_need_every_stride_past_the_span_below() {
        let base = |coefs: &[(Var, i64)]| Affine {
            coefs: coefs.iter().copied().collect(),
            constant: 0,
        };
        let (a, b) = (Var::dim(0), Var::range(0));
        // Rows of 8 at 8 * a + 32 * b: a in [0, 3], b in [0, 1] tile [0, 64).
        assert!(disjoint(
            &base(&[(a, 8), (b, 32)]),
            &[(a, 0, 3), (b, 0, 1)],
            8
        ));
        assert!(!disjoint(
            &base(&[(a, 8), (b, 24)]),
            &[(a, 0, 3), (b, 0, 1)],
            8
        ));
        // A variable missing from the base repeats the range, unless it takes one value.
        assert!(!disjoint(&base(&[(a, 8)]), &[(a, 0, 3), (b, 0, 1)], 8));
        assert!(disjoint(&base(&[(a, 8)]), &[(a, 0, 3), (b, 0, 0)], 8));
    }
}
