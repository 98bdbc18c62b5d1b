//! Loop-invariant code motion: statements of a loop body that compute the same thing in
//! every iteration move before the loop, so a value the kernel reads through a broadcast
//! (a row's maximum in a softmax, a bias element) is computed once per row, not once per
//! element. The C compiler would hoist a plain load, but not a whole inner reduction loop.
//!
//! A statement of a loop's body moves out when it does not mention the loop variable, stores
//! nothing, reads no buffer the kernel writes, and reads and writes only scalars, local
//! arrays and runtime variables that no statement staying in the loop writes and that are
//! not carried from one iteration to the next (read at or before the first statement that
//! writes them). A serial loop that stores every element of a private local array
//! (`l[k] = v` for `k` over the whole array, after scalar bindings that compute `v`,
//! none reading `l`) writes the whole array,
//! like a scalar's assignment: reads after it in the same statement are its own (a blocked
//! sum's per-block lanes, reset at the start of each block, are not carried from one
//! element to the next). Moved statements keep their order. Loops run at least once (bounds are constant and
//! `lo <= hi`), so a moved statement runs exactly once where it ran once per iteration.

use std::collections::{HashMap, HashSet};

use affine::Var;

use super::hoist_summary::{count_defines, defines, Cx, Slot, Summary};
use super::kernel::{BufferParam, Local, LoopKind, Stmt};
use super::value::VarId;

/// A statement with its summary.
type Summed = (Stmt, Summary);

/// Splits the body of a loop over `var` into the statements that move before the loop and
/// those that stay (see the module documentation). A statement defining a scalar of
/// `taken` stays: the block before the loop, or a scope around it, defines that scalar too
/// (a loop copied by unswitching or splitting), and C allows one definition per scope.
fn split(var: Var, body: Vec<Summed>, taken: &Taken) -> (Vec<Summed>, Vec<Summed>) {
    let mut moves: Vec<bool> = body
        .iter()
        .map(|(s, f)| {
            !matches!(s, Stmt::Comment(_))
                && !f.vars.contains(&var)
                && !f.stores
                && !f.reads_written_buffer
                && f.defines.iter().all(|&v| !taken.contains(v))
        })
        .collect();
    // Slots carried from one iteration to the next: read by a statement at or before the
    // first statement that writes them. Their readers and writers all stay.
    let mut first_writer: HashMap<Slot, usize> = HashMap::new();
    for (i, (_, f)) in body.iter().enumerate() {
        for &slot in &f.writes {
            first_writer.entry(slot).or_insert(i);
        }
    }
    let carried: HashSet<Slot> = body
        .iter()
        .enumerate()
        .flat_map(|(i, (_, f))| {
            f.reads
                .iter()
                .filter(|slot| first_writer.get(slot).is_some_and(|&w| w >= i))
                .copied()
                .collect::<Vec<_>>()
        })
        .collect();
    for (m, (_, f)) in moves.iter_mut().zip(&body) {
        if f.reads.iter().chain(&f.writes).any(|s| carried.contains(s)) {
            *m = false;
        }
    }
    // What a staying statement writes keeps every statement that reads or writes it in the
    // loop, until nothing changes. `staying` grows as statements stop moving (the result is
    // the same least set whatever the order, and most chains resolve in one pass).
    let mut staying: HashSet<Slot> = body
        .iter()
        .zip(&moves)
        .filter(|(_, &m)| !m)
        .flat_map(|((_, f), _)| f.writes.iter().copied())
        .collect();
    loop {
        let mut changed = false;
        for (i, (_, f)) in body.iter().enumerate() {
            if moves[i] && f.reads.iter().chain(&f.writes).any(|s| staying.contains(s)) {
                moves[i] = false;
                staying.extend(f.writes.iter().copied());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let (mut out, mut stay) = (Vec::new(), Vec::new());
    for (s, m) in body.into_iter().zip(moves) {
        if m {
            out.push(s);
        } else {
            stay.push(s);
        }
    }
    (out, stay)
}

/// Moves loop-invariant statements out of every loop of `body`, innermost loops first, so a
/// statement can move out of several loops. `buffers` and `locals` are the kernel's.
pub fn hoist_invariants(body: Vec<Stmt>, buffers: &[BufferParam], locals: &[Local]) -> Vec<Stmt> {
    let mut counts = HashMap::new();
    count_defines(&body, &mut counts);
    let multi = counts
        .into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|(v, _)| v)
        .collect();
    let cx = Cx {
        buffers,
        locals,
        multi,
    };
    hoist_in(body, &cx, &mut Taken::default())
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// The scalars defined around the statement being hoisted: by the other statements of its
/// block and of every block around it. `around` counts, for each scalar, the statements of
/// the enclosing blocks (this one included) that define it; `path` counts those of them
/// that hold the statement (the statement itself and the statements it lies in). A scalar
/// is taken where some statement off that path defines it too: `around > path`. Kept as
/// two flat counts updated on entering and leaving a block or statement, so a question
/// costs one lookup however deep the loops nest (a chain of 250 fused reductions nests
/// loops hundreds deep; a walk up the scopes per question made hoisting quadratic in the
/// depth). Only scalars of [`Cx::multi`] are counted: one defined once, inside the
/// statement, is defined by no statement off its path.
#[derive(Default)]
struct Taken {
    around: HashMap<VarId, usize>,
    path: HashMap<VarId, usize>,
}

impl Taken {
    fn contains(&self, v: VarId) -> bool {
        self.around.get(&v).copied().unwrap_or(0) > self.path.get(&v).copied().unwrap_or(0)
    }

    fn add(counts: &mut HashMap<VarId, usize>, defs: &HashSet<VarId>) {
        for v in defs {
            *counts.entry(*v).or_default() += 1;
        }
    }

    fn remove(counts: &mut HashMap<VarId, usize>, defs: &HashSet<VarId>) {
        for v in defs {
            if let Some(n) = counts.get_mut(v) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(v);
                }
            }
        }
    }
}

/// [`hoist_invariants`] in a block inside scopes whose definitions `taken` holds (restored
/// to them on return): the statements that remain, each with its summary.
fn hoist_in(body: Vec<Stmt>, cx: &Cx<'_>, taken: &mut Taken) -> Vec<Summed> {
    // Without scalars defined twice nothing is ever taken: no walk for definitions.
    let defs: Vec<HashSet<VarId>> = body
        .iter()
        .map(|s| {
            let mut d = HashSet::new();
            if !cx.multi.is_empty() {
                defines(s, cx, &mut d);
            }
            d
        })
        .collect();
    for d in &defs {
        Taken::add(&mut taken.around, d);
    }
    let mut out = Vec::with_capacity(body.len());
    for (s, own) in body.into_iter().zip(&defs) {
        // What the scopes around this statement and the other statements of this block
        // define: everything counted in `around` but for the statement's own path.
        Taken::add(&mut taken.path, own);
        match s {
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } => {
                let inner = hoist_in(body, cx, taken);
                // Nothing moves across a barrier, nor out of a loop over the block's
                // threads (a thread's private values stay its own).
                let (moved, stay) =
                    if kind == LoopKind::Threads || inner.iter().any(|(_, f)| f.barrier) {
                        (Vec::new(), inner)
                    } else {
                        split(var, inner, taken)
                    };
                out.extend(moved);
                if !stay.is_empty() {
                    let (body, parts): (Vec<Stmt>, Vec<Summary>) = stay.into_iter().unzip();
                    let f = Summary::of_loop(cx, (kind, var, lo, hi), &body, parts);
                    let s = Stmt::Loop {
                        kind,
                        var,
                        lo,
                        hi,
                        body,
                    };
                    out.push((s, f));
                }
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                let (body, then_parts): (Vec<Stmt>, Vec<Summary>) =
                    hoist_in(body, cx, taken).into_iter().unzip();
                let (else_body, else_parts): (Vec<Stmt>, Vec<Summary>) =
                    hoist_in(else_body, cx, taken).into_iter().unzip();
                let f = Summary::of_if(&guard, then_parts, else_parts);
                let s = Stmt::If {
                    guard,
                    body,
                    else_body,
                };
                out.push((s, f));
            }
            other => {
                let f = Summary::of(&other, cx);
                out.push((other, f));
            }
        }
        Taken::remove(&mut taken.path, own);
    }
    for d in &defs {
        Taken::remove(&mut taken.around, d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::kernel::{Access, MemorySpace};
    use crate::kir::value::Value;
    use crate::kir::{BinOp, Const, ScalarType};
    use affine::Expr;

    const F: ScalarType = ScalarType::F32;

    fn buf(access: Access) -> BufferParam {
        BufferParam {
            name: "b".into(),
            ty: F,
            dims: vec![8, 8],
            minor_to_major: vec![1, 0],
            access,
        }
    }

    fn load(buf: usize, offset: Expr) -> Value {
        Value::Load { buf, offset, ty: F }
    }

    fn one_loop(body: Vec<Stmt>) -> Vec<Stmt> {
        vec![Stmt::Loop {
            kind: LoopKind::Serial,
            var: Var::dim(1),
            lo: 0,
            hi: 7,
            body,
        }]
    }

    fn store(value: Value) -> Stmt {
        Stmt::Store {
            buf: 1,
            offset: Expr::dim(0) * Expr::constant(8) + Expr::dim(1),
            value,
        }
    }

    #[test]
    fn a_value_read_through_a_broadcast_moves_out() {
        let bufs = [buf(Access::In), buf(Access::Out)];
        let body = one_loop(vec![
            Stmt::Let {
                var: VarId(0),
                value: load(0, Expr::dim(0)),
            },
            store(Value::Var(VarId(0), F)),
        ]);
        let out = hoist_invariants(body, &bufs, &[]);
        assert!(matches!(out[0], Stmt::Let { var: VarId(0), .. }), "{out:?}");
        assert!(matches!(&out[1], Stmt::Loop { body, .. } if body.len() == 1));
    }

    #[test]
    fn what_depends_on_the_loop_or_on_written_memory_stays() {
        let bufs = [buf(Access::InOut), buf(Access::Out)];
        let body = one_loop(vec![
            // Invariant index, but the buffer is written by the kernel.
            Stmt::Let {
                var: VarId(0),
                value: load(0, Expr::dim(0)),
            },
            // Depends on the loop variable.
            Stmt::Let {
                var: VarId(1),
                value: Value::Index(Expr::dim(1)),
            },
            store(Value::Var(VarId(0), F)),
        ]);
        let out = hoist_invariants(body.clone(), &bufs, &[]);
        assert_eq!(out, body);
    }

    #[test]
    fn values_carried_across_iterations_stay() {
        let bufs = [buf(Access::In), buf(Access::Out)];
        let zero = Value::Const(F, Const::Float(0.0));
        // acc is read before this body first writes it: the read sees the last
        // iteration's value, so neither the read nor the write may move.
        let body = vec![
            Stmt::Decl {
                var: VarId(0),
                value: zero.clone(),
            },
            Stmt::Loop {
                kind: LoopKind::Serial,
                var: Var::dim(1),
                lo: 0,
                hi: 7,
                body: vec![
                    Stmt::Let {
                        var: VarId(1),
                        value: Value::Var(VarId(0), F),
                    },
                    Stmt::Assign {
                        var: VarId(0),
                        value: load(0, Expr::dim(0)),
                    },
                    store(Value::Var(VarId(1), F)),
                ],
            },
        ];
        let out = hoist_invariants(body.clone(), &bufs, &[]);
        assert_eq!(out, body);
    }

    #[test]
    fn a_scalar_written_in_the_loop_keeps_its_readers_and_writers_inside() {
        let bufs = [buf(Access::In), buf(Access::Out)];
        let body = one_loop(vec![
            Stmt::Decl {
                var: VarId(0),
                value: Value::Const(F, Const::Float(0.0)),
            },
            Stmt::Assign {
                var: VarId(0),
                value: load(0, Expr::dim(1)),
            },
            store(Value::Var(VarId(0), F)),
        ]);
        let out = hoist_invariants(body.clone(), &bufs, &[]);
        assert_eq!(out, body);
    }

    /// A row sum in blocks as the blocked-sum emitter writes it, read through a broadcast
    /// inside a loop over `d1`: `l0` (the row's lanes) set whole before the blocks, `l1`
    /// (a block's lanes) set at the start of each block, then both read: `len` lanes each,
    /// the block lanes reset over the first `reset`.
    fn blocked_row_sum(len: i64, reset: i64) -> Vec<Stmt> {
        let (k, s) = (Var::range(0), Var::range(1));
        let lane_load = |local: usize| Value::LocalLoad {
            local,
            offset: Expr::var(k),
            ty: F,
        };
        let set = |local: usize, hi: i64, value: Value| {
            Stmt::serial_loop(
                k,
                0,
                hi,
                vec![Stmt::LocalStore {
                    local,
                    offset: Expr::var(k),
                    value,
                }],
            )
        };
        let minus_zero = Value::Const(F, Const::Float(-0.0));
        let add = |a: Value, b: Value| Value::Binary(BinOp::Add, Box::new(a), Box::new(b), F);
        let block = vec![
            set(1, reset - 1, minus_zero.clone()),
            set(
                1,
                len - 1,
                add(
                    lane_load(1),
                    load(
                        0,
                        Expr::dim(0) * Expr::constant(8) + Expr::var(s) + Expr::var(k),
                    ),
                ),
            ),
            set(0, len - 1, add(lane_load(0), lane_load(1))),
        ];
        one_loop(vec![
            set(0, len - 1, minus_zero),
            Stmt::serial_loop(s, 0, 1, block),
            Stmt::Let {
                var: VarId(0),
                value: Value::LocalLoad {
                    local: 0,
                    offset: Expr::constant(0),
                    ty: F,
                },
            },
            store(Value::Var(VarId(0), F)),
        ])
    }

    fn lanes(len: i64, space: MemorySpace) -> Local {
        Local {
            name: "lanes".into(),
            space,
            ty: F,
            len,
        }
    }

    #[test]
    fn a_local_set_whole_at_the_start_of_each_block_is_not_carried() {
        let bufs = [buf(Access::In), buf(Access::Out)];
        let locals = [
            lanes(8, MemorySpace::Private),
            lanes(8, MemorySpace::Private),
        ];
        let out = hoist_invariants(blocked_row_sum(8, 8), &bufs, &locals);
        // Everything but the store leaves the loop over d1.
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(
            matches!(&out[3], Stmt::Loop { body, .. } if body.len() == 1),
            "{out:?}"
        );
    }

    /// `body` with every loop whose body is one local store rewritten as the emitters
    /// often write it: the stored value bound to a fresh scalar first, then stored.
    fn through_lets(body: Vec<Stmt>, next: &mut u32) -> Vec<Stmt> {
        body.into_iter()
            .map(|s| match s {
                Stmt::Loop {
                    kind,
                    var,
                    lo,
                    hi,
                    body,
                } => {
                    let body = match <[Stmt; 1]>::try_from(body) {
                        Ok(
                            [Stmt::LocalStore {
                                local,
                                offset,
                                value,
                            }],
                        ) => {
                            let v = VarId(*next);
                            *next += 1;
                            vec![
                                Stmt::Let { var: v, value },
                                Stmt::LocalStore {
                                    local,
                                    offset,
                                    value: Value::Var(v, F),
                                },
                            ]
                        }
                        Ok(one) => through_lets(one.into(), next),
                        Err(many) => through_lets(many, next),
                    };
                    Stmt::Loop {
                        kind,
                        var,
                        lo,
                        hi,
                        body,
                    }
                }
                other => other,
            })
            .collect()
    }

    /// A full reduction read through a broadcast (LAMB's trust ratio: the norm of a
    /// [256, 1024] parameter scaling each of its elements) computes each lane's value in
    /// scalars before storing it; the lanes are still written whole, so the sum leaves the
    /// element loop (it ran once per element: 1.4e11 adds in one kernel).
    #[test]
    fn a_local_set_whole_through_scalar_bindings_is_not_carried() {
        let bufs = [buf(Access::In), buf(Access::Out)];
        let locals = [
            lanes(8, MemorySpace::Private),
            lanes(8, MemorySpace::Private),
        ];
        let out = hoist_invariants(through_lets(blocked_row_sum(8, 8), &mut 10), &bufs, &locals);
        // Everything but the store leaves the loop over d1 (the constant lane values
        // also leave the lane loops).
        let (last, before) = out.split_last().expect("statements");
        assert!(
            matches!(last, Stmt::Loop { var, body, .. } if *var == Var::dim(1) && body.len() == 1),
            "{out:?}"
        );
        assert!(
            !before
                .iter()
                .any(|s| matches!(s, Stmt::Loop { var, .. } if *var == Var::dim(1))),
            "{out:?}"
        );
        // Still carried where a lane is set in part, or where a binding reads the lanes.
        // (Constant lane values may still leave the lane loops: only the loop over d1
        // matters here, and it keeps the sum.)
        let d1_body = |out: &[Stmt]| {
            out.iter()
                .find_map(|s| match s {
                    Stmt::Loop { var, body, .. } if *var == Var::dim(1) => Some(body.len()),
                    _ => None,
                })
                .expect("the loop over d1")
        };
        let part = through_lets(blocked_row_sum(8, 7), &mut 10);
        assert_eq!(d1_body(&hoist_invariants(part, &bufs, &locals)), 4);
        let k = Var::range(0);
        let reads_lane = one_loop(vec![
            Stmt::serial_loop(
                k,
                0,
                7,
                vec![
                    Stmt::Let {
                        var: VarId(1),
                        value: Value::LocalLoad {
                            local: 0,
                            offset: Expr::var(k),
                            ty: F,
                        },
                    },
                    Stmt::LocalStore {
                        local: 0,
                        offset: Expr::var(k),
                        value: Value::Var(VarId(1), F),
                    },
                ],
            ),
            Stmt::Let {
                var: VarId(0),
                value: Value::LocalLoad {
                    local: 0,
                    offset: Expr::constant(0),
                    ty: F,
                },
            },
            store(Value::Var(VarId(0), F)),
        ]);
        assert_eq!(d1_body(&hoist_invariants(reads_lane, &bufs, &locals)), 3);
    }

    #[test]
    fn a_local_set_in_part_or_shared_by_the_block_stays_carried() {
        let bufs = [buf(Access::In), buf(Access::Out)];
        let private = [
            lanes(8, MemorySpace::Private),
            lanes(8, MemorySpace::Private),
        ];
        // Only 7 of the block lanes reset: lane 7 carries the last row's block sum.
        let body = blocked_row_sum(8, 7);
        assert_eq!(hoist_invariants(body.clone(), &bufs, &private), body);
        // A block-shared array is not one thread's to overwrite.
        let shared = [lanes(8, MemorySpace::Private), lanes(8, MemorySpace::Block)];
        let body = blocked_row_sum(8, 8);
        assert_eq!(hoist_invariants(body.clone(), &bufs, &shared), body);
    }
    /// The loops of `body` nested deepest (1 for a loop holding no loop).
    fn loop_depth(body: &[Stmt]) -> usize {
        body.iter()
            .map(|s| match s {
                Stmt::Loop { body, .. } => 1 + loop_depth(body),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// A chain of `n` fused row sums, each reading `exp` of the one inside it through a
    /// broadcast, as the loop emitter nests them (issue 36's wide module: sum_k over s_k of
    /// exp(sum_{k+1} over s_{k+1} of ...), the innermost reading the input): every sum is
    /// invariant in the loops around it, so all leave them and sit side by side in the
    /// loop over d0, each sum's loop holding its add alone.
    #[test]
    fn a_deep_chain_of_nested_sums_comes_apart_into_one_level() {
        let n = 300;
        let bufs = [buf(Access::In), buf(Access::Out)];
        let acc = |k: u32| VarId(3 * k);
        let add = |k: u32, x: Value| {
            let u = VarId(3 * k + 1);
            vec![
                Stmt::Let {
                    var: u,
                    value: Value::Binary(
                        BinOp::Add,
                        Box::new(Value::Var(acc(k), F)),
                        Box::new(x),
                        F,
                    ),
                },
                Stmt::Assign {
                    var: acc(k),
                    value: Value::Var(u, F),
                },
            ]
        };
        let innermost = n - 1;
        let mut body = add(
            innermost,
            load(
                0,
                Expr::dim(0) * Expr::constant(8) + Expr::var(Var::range(innermost)),
            ),
        );
        let mut value = VarId(3 * innermost + 2);
        for k in (0..n).rev() {
            // `body` is the inside of sum k's loop; its value is exp(acc k).
            let sum = vec![
                Stmt::Decl {
                    var: acc(k),
                    value: Value::Const(F, Const::Float(0.0)),
                },
                Stmt::serial_loop(Var::range(k), 0, 7, body),
                Stmt::Let {
                    var: VarId(3 * k + 2),
                    value: Value::Unary(crate::kir::UnOp::Exp, Box::new(Value::Var(acc(k), F)), F),
                },
            ];
            value = VarId(3 * k + 2);
            body = match k {
                0 => sum,
                _ => [sum, add(k - 1, Value::Var(value, F))].concat(),
            };
        }
        body.push(store(Value::Var(value, F)));
        let kernel = vec![Stmt::serial_loop(Var::dim(0), 0, 7, body)];
        assert_eq!(loop_depth(&kernel), n as usize + 1);
        let out = hoist_invariants(kernel, &bufs, &[]);
        let [Stmt::Loop { body, .. }] = out.as_slice() else {
            panic!("one loop over d0: {out:?}");
        };
        assert_eq!(loop_depth(&out), 2);
        let loops: Vec<&Vec<Stmt>> = body
            .iter()
            .filter_map(|s| match s {
                Stmt::Loop { body, .. } => Some(body),
                _ => None,
            })
            .collect();
        assert_eq!(loops.len(), n as usize);
        assert!(loops.iter().all(|b| b.len() == 2), "{body:?}");
        // Every decl, sum and exp, and the store: nothing is lost or copied.
        assert_eq!(body.len(), 3 * n as usize + 1);
    }
}
