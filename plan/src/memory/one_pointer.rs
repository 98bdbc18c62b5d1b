//! One pointer for the bytes an in-place kernel shares (issue 32 item 2). A kernel that
//! writes its output over a dying operand ([`super::in_place`]) is called with two
//! parameters holding one address: the operand's ([`Access::InOut`]) and the output's.
//! Through two pointers, the C compiler must assume they may overlap at any distance,
//! so its vectorized loop is guarded by an overlap check that fails for equal addresses
//! and the scalar loop runs (moco_infonce_queue's GEMM-lhs kernel over the dying logits
//! ran 2x slower, session 53). The bytes are the same at every call, so the kernel may as
//! well name them once: [`fold`] rewrites the body so every load and store of a parameter
//! sharing its bytes with an `InOut` parameter goes through that parameter, the other
//! parameter stays bound but unused. Then no two pointers the body uses share bytes, and
//! the printers may declare every one `restrict` ([`may_alias`] says where they may not).
//!
//! The rewrite only renames pointers to the same bytes (same region, offset and size,
//! same element type, so the same physical element offsets), so it computes exactly what
//! the kernel computed before. It is made only where every call of the kernel binds the
//! parameters alike; a streamed producer's operand is bound to scratch slots by the
//! executor, not to its buffer, so it shares with nothing.

use codegen::kir::{Access, Kernel, Stmt, Value};

use crate::{Program, Thunk};

/// Where a parameter's bytes lie: (region, offset, size); `None` for memory the executor
/// binds by itself (a streamed operand's scratch slots).
type Place = Option<(Option<usize>, u64, u64)>;

/// The places of each call's parameters, per kernel (index into the program's kernels).
fn calls(p: &Program) -> Vec<Vec<Vec<Place>>> {
    fn walk(p: &Program, ts: &[Thunk], out: &mut [Vec<Vec<Place>>]) {
        for t in ts {
            match t {
                Thunk::Kernel { kernel, args, .. } => call(p, *kernel, args, None, out),
                Thunk::StreamedGemm {
                    producer, lhs_arg, ..
                } => {
                    if let Thunk::Kernel { kernel, args, .. } = producer.as_ref() {
                        call(p, *kernel, args, Some(*lhs_arg), out);
                    }
                }
                Thunk::While { cond, body, .. } => {
                    walk(p, cond, out);
                    walk(p, body, out);
                }
                Thunk::Conditional { branches, .. } => {
                    branches.iter().for_each(|(b, _)| walk(p, b, out));
                }
                _ => {}
            }
        }
    }
    fn call(
        p: &Program,
        kernel: usize,
        args: &[usize],
        streamed: Option<usize>,
        out: &mut [Vec<Vec<Place>>],
    ) {
        let places = args
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let bytes = p.buffers.get(b)?.bytes;
                let (region, offset) = super::in_place::place(p, b)?;
                (Some(i) != streamed).then_some((region, offset, bytes))
            })
            .collect();
        if let Some(k) = out.get_mut(kernel) {
            k.push(places);
        }
    }
    let mut out = vec![Vec::new(); p.kernels.len()];
    walk(p, &p.thunks, &mut out);
    out
}

/// For each parameter, the first parameter bound to the same bytes at one call.
fn firsts(places: &[Place]) -> Vec<usize> {
    (0..places.len())
        .map(|i| match places[i] {
            Some(at) => (0..i).find(|&j| places[j] == Some(at)).unwrap_or(i),
            None => i,
        })
        .collect()
}

/// The parameter each parameter's accesses go through after the fold: itself, or the
/// first `InOut` parameter of the same element type bound to the same bytes at every call.
/// `None` where the kernel's calls bind its parameters differently.
fn targets(k: &Kernel, calls: &[Vec<Place>]) -> Option<Vec<usize>> {
    let first = firsts(calls.first()?);
    if first.len() != k.buffers.len() || calls.iter().any(|c| firsts(c) != first) {
        return None;
    }
    Some(
        (0..first.len())
            .map(|i| {
                let ty = k.buffers[i].ty;
                (0..first.len())
                    .find(|&j| {
                        first[j] == first[i]
                            && k.buffers[j].access == Access::InOut
                            && k.buffers[j].ty == ty
                    })
                    .unwrap_or(i)
            })
            .collect(),
    )
}

/// Rewrites every kernel whose parameters share bytes with an `InOut` parameter at every
/// call so that the body uses that one parameter for them (see the module docs).
pub fn fold(p: &mut Program) {
    let calls = calls(p);
    for (k, calls) in p.kernels.iter_mut().zip(&calls) {
        let Some(to) = targets(k, calls) else {
            continue;
        };
        // An atomic update of a folded parameter keeps its pointer (none is known: the
        // update-in-place kernels that have them write their own output).
        if to.iter().enumerate().all(|(i, &t)| i == t) || atomics_on_folded(&k.body, &to) {
            continue;
        }
        rename_stmts(&mut k.body, &to);
    }
}

fn atomics_on_folded(body: &[Stmt], to: &[usize]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Atomic { buf, body, .. } => to.get(*buf) != Some(buf) || atomics_on_folded(body, to),
        Stmt::Loop { body, .. } => atomics_on_folded(body, to),
        Stmt::If {
            body, else_body, ..
        } => atomics_on_folded(body, to) || atomics_on_folded(else_body, to),
        _ => false,
    })
}

fn rename_stmts(stmts: &mut [Stmt], to: &[usize]) {
    for s in stmts {
        match s {
            Stmt::Comment(_) | Stmt::Barrier => {}
            Stmt::Loop { body, .. } => rename_stmts(body, to),
            Stmt::Let { value, .. }
            | Stmt::Decl { value, .. }
            | Stmt::Assign { value, .. }
            | Stmt::Shuffle { value, .. }
            | Stmt::BindIndex { value, .. }
            | Stmt::LocalStore { value, .. } => rename_value(value, to),
            Stmt::If {
                body, else_body, ..
            } => {
                rename_stmts(body, to);
                rename_stmts(else_body, to);
            }
            Stmt::Store { buf, value, .. } => {
                *buf = to.get(*buf).copied().unwrap_or(*buf);
                rename_value(value, to);
            }
            Stmt::Atomic { body, value, .. } => {
                rename_stmts(body, to);
                rename_value(value, to);
            }
        }
    }
}

fn rename_value(v: &mut Value, to: &[usize]) {
    match v {
        Value::Load { buf, .. } => *buf = to.get(*buf).copied().unwrap_or(*buf),
        Value::Const(..) | Value::Var(..) | Value::Index(_) | Value::LocalLoad { .. } => {}
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            rename_value(a, to)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            rename_value(a, to);
            rename_value(b, to);
        }
        Value::Select(c, a, b) => {
            rename_value(c, to);
            rename_value(a, to);
            rename_value(b, to);
        }
    }
}

/// Whether two written parameters the body of `k` uses may share bytes, so a printer must
/// not declare them `restrict`. The plan binds no input over a written parameter's bytes
/// (it marks every parameter holding an overwritten operand `InOut`), and [`fold`] leaves
/// one used pointer for bytes it shares; only an in-place kernel it could not fold (an
/// `InOut` parameter and another written one, both used) may still hold one address
/// twice.
pub fn may_alias(k: &Kernel) -> bool {
    if !k.buffers.iter().any(|b| b.access == Access::InOut) {
        return false;
    }
    let used = used_params(k);
    let written_used = (k.buffers.iter().zip(&used))
        .filter(|(b, &u)| u && b.access != Access::In)
        .count();
    written_used >= 2
}

/// For each parameter of `k`, whether its body loads or stores it (a folded parameter is
/// bound but unused).
pub fn used_params(k: &Kernel) -> Vec<bool> {
    let mut used = vec![false; k.buffers.len()];
    mark_used(&k.body, &mut used);
    used
}

fn mark_used(stmts: &[Stmt], used: &mut [bool]) {
    let mut set = |b: usize| {
        if let Some(u) = used.get_mut(b) {
            *u = true;
        }
    };
    codegen::kir::for_each_load(stmts, &mut |b, _| set(b));
    fn stores(stmts: &[Stmt], set: &mut dyn FnMut(usize)) {
        for s in stmts {
            match s {
                Stmt::Store { buf, .. } => set(*buf),
                Stmt::Atomic { buf, body, .. } => {
                    set(*buf);
                    stores(body, set);
                }
                Stmt::Loop { body, .. } => stores(body, set),
                Stmt::If {
                    body, else_body, ..
                } => {
                    stores(body, set);
                    stores(else_body, set);
                }
                _ => {}
            }
        }
    }
    stores(stmts, &mut set);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_binding_differently_are_left_alone() {
        let k = codegen::kir::parse_kernel(
            "kernel k blocks=1 (d0 = block)\n  b0 inout x: f32[4]{0}\n  b1 out y: f32[4]{0}\n  for s0 in [0, 3] {\n    let v0: f32 = b0[s0]\n    b1[s0] = v0\n  }\n",
        )
        .unwrap();
        let same = vec![Some((None, 0, 16)), Some((None, 0, 16))];
        let apart = vec![Some((None, 0, 16)), Some((None, 64, 16))];
        assert_eq!(targets(&k, std::slice::from_ref(&same)), Some(vec![0, 0]));
        assert_eq!(targets(&k, &[same, apart]), None);
        // Two used written pointers to the bytes: not `restrict`.
        assert!(may_alias(&k));
        let mut folded = k.clone();
        rename_stmts(&mut folded.body, &[0, 0]);
        assert!(!may_alias(&folded));
        assert_eq!(used_params(&folded), [true, false]);
    }
}
