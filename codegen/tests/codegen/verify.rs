//! The kernel verifier rejects malformed kernels: each case breaks one rule of a valid
//! kernel and names the message it must give.

use affine::{Expr, Interval, Var};
use codegen::kir::{
    verify, Access, BinOp, BufferParam, Const, Grid, Kernel, ScalarType, Stmt, Value, VarId,
};

/// `b1[d0] = b0[d0] + 1` over 4 blocks.
fn valid() -> Kernel {
    let buf = |name: &str, ty, access| BufferParam {
        name: name.into(),
        ty,
        dims: vec![4],
        minor_to_major: vec![0],
        access,
    };
    let load = Value::Load {
        buf: 0,
        offset: Expr::dim(0),
        ty: ScalarType::F32,
    };
    Kernel {
        name: "k".into(),
        buffers: vec![
            buf("x", ScalarType::F32, Access::In),
            buf("y", ScalarType::F32, Access::Out),
        ],
        grid: Grid::blocks(4, Some(Var::dim(0))),
        dims: vec![Interval::new(0, 3)],
        ranges: vec![],
        runtimes: vec![],
        vars: vec![ScalarType::F32],
        locals: vec![],
        body: vec![
            Stmt::Let {
                var: VarId(0),
                value: Value::Binary(
                    BinOp::Add,
                    Box::new(load),
                    Box::new(Value::Const(ScalarType::F32, Const::Float(1.0))),
                    ScalarType::F32,
                ),
            },
            Stmt::Store {
                buf: 1,
                offset: Expr::dim(0),
                value: Value::Var(VarId(0), ScalarType::F32),
            },
        ],
    }
}

fn message(k: &Kernel) -> String {
    verify(k).map_or_else(|e| e.message, |()| "ok".into())
}

#[test]
fn a_valid_kernel_passes() {
    assert_eq!(message(&valid()), "ok");
}

#[test]
fn types_must_agree() {
    let mut k = valid();
    k.vars[0] = ScalarType::F64;
    assert_eq!(message(&k), "v0 declared f64 but bound to f32");
}

#[test]
fn inputs_are_not_written() {
    let mut k = valid();
    k.buffers[1].access = Access::In;
    assert_eq!(message(&k), "store to input buffer b1 `y`");
}

#[test]
fn every_output_is_written() {
    let mut k = valid();
    k.body.pop();
    assert_eq!(message(&k), "output buffer b1 `y` is never written");
}

/// plan's one-pointer fold stores an in-place output through the `InOut` operand holding
/// its bytes, leaving the output bound but untouched; that needs such an operand.
#[test]
fn an_output_folded_into_an_in_out_operand_may_stand_unused() {
    let mut k = valid();
    k.buffers[0].access = Access::InOut;
    if let Stmt::Store { buf, .. } = &mut k.body[1] {
        *buf = 0;
    }
    assert_eq!(message(&k), "ok");
    k.buffers[0].dims = vec![2];
    k.dims = vec![Interval::new(0, 1)];
    k.grid = Grid::blocks(2, Some(Var::dim(0)));
    assert_eq!(message(&k), "output buffer b1 `y` is never written");
}

#[test]
fn unguarded_accesses_stay_in_range() {
    let mut k = valid();
    if let Stmt::Store { offset, .. } = &mut k.body[1] {
        *offset = Expr::dim(0) + Expr::constant(1);
    }
    assert_eq!(
        message(&k),
        "offset `d0 + 1` of b1 ranges over [1, 4], outside [0, 3]"
    );
}

#[test]
fn variables_are_bound_before_use() {
    let mut k = valid();
    k.grid.block_var = None;
    k.grid.blocks = 1;
    assert_eq!(message(&k), "index expression `d0` uses unbound d0");
}

/// `valid()` with its sum staged through a local array of `len` elements at `offset`.
fn through_local(len: i64, ty: ScalarType, offset: Expr) -> Kernel {
    let mut k = valid();
    k.locals.push(codegen::kir::Local {
        name: "acc".into(),
        space: codegen::kir::MemorySpace::Private,
        ty,
        len,
    });
    let store = k.body.pop().expect("the output store");
    k.body.push(Stmt::LocalStore {
        local: 0,
        offset,
        value: Value::Var(VarId(0), ScalarType::F32),
    });
    if let Stmt::Store { buf, offset: o, .. } = store {
        k.body.push(Stmt::Store {
            buf,
            offset: o,
            value: Value::LocalLoad {
                local: 0,
                offset,
                ty,
            },
        });
    }
    k
}

#[test]
fn local_arrays_are_checked_like_buffers() {
    assert_eq!(
        message(&through_local(4, ScalarType::F32, Expr::dim(0))),
        "ok"
    );
    assert_eq!(
        message(&through_local(3, ScalarType::F32, Expr::dim(0))),
        "offset `d0` of l0 ranges over [0, 3], outside [0, 2]"
    );
    assert_eq!(
        message(&through_local(4, ScalarType::F64, Expr::dim(0))),
        "store of f32 into f64 local l0"
    );
}

/// `valid()` as one block looping over `d0 in [lo, hi]`, storing at `d0 + shift`.
fn looping(lo: i64, hi: i64, shift: i64) -> Kernel {
    let mut k = valid();
    k.grid = Grid::blocks(1, None);
    if let Stmt::Store { offset, .. } = &mut k.body[1] {
        *offset = Expr::dim(0) + Expr::constant(shift);
    }
    let body = std::mem::take(&mut k.body);
    k.body = vec![Stmt::serial_loop(Var::dim(0), lo, hi, body)];
    k
}

#[test]
fn a_loop_over_part_of_its_bounds_checks_offsets_over_that_part() {
    // A loop split at a guard's edge runs over part of d0's bounds [0, 3]: `d0 + 2` stays
    // in range over [0, 1] but not over [0, 2].
    assert_eq!(message(&looping(0, 1, 2)), "ok");
    assert_eq!(
        message(&looping(0, 2, 2)),
        "offset `d0 + 2` of b1 ranges over [2, 4], outside [0, 3]"
    );
    assert_eq!(
        message(&looping(2, 4, 0)),
        "loop d0 in [2, 4] leaves its bounds [0, 3]"
    );
}

/// A warp of 32 threads, each offering `b0[s0]` to `shuffle` (a statement's text), under a
/// guard when `guarded`, in a loop over threads `[0, last_thread]`.
fn shuffling(shuffle: &str, guarded: bool, last_thread: i64) -> Kernel {
    let line = if guarded {
        format!("if s0 in [0, 15] {{\n{shuffle}\n}}")
    } else {
        shuffle.to_string()
    };
    let text = format!(
        "kernel k blocks=1 threads=32\n  b0 in x: f32[32]{{0}}\n  b1 out y: f32[32]{{0}}\n  \
         for.threads s0 in [0, {last_thread}] {{\n    let v0: f32 = b0[s0]\n{line}\n    \
         b1[s0] = v0\n  }}\n"
    );
    codegen::kir::parse_kernel(&text).unwrap()
}

#[test]
fn shuffles_stand_where_every_thread_of_the_warp_reaches_them() {
    let ok = "shuffle.down v1: f32 = v0 by 16 width 32";
    assert_eq!(message(&shuffling(ok, false, 31)), "ok");
    assert_eq!(
        message(&shuffling(
            "shuffle.xor v1: f32 = v0 by 3 width 4",
            false,
            31
        )),
        "ok"
    );
    let outside = "shuffle into v1 outside a loop giving every thread of the block one \
                   iteration, or under a guard or loop there";
    assert_eq!(message(&shuffling(ok, true, 31)), outside);
    assert_eq!(message(&shuffling(ok, false, 15)), outside);
    assert_eq!(
        message(&shuffling(
            "shuffle.down v1: f32 = v0 by 16 width 24",
            false,
            31
        )),
        "shuffle width 24: not a power of two in [2, 32] dividing the block's 32 threads"
    );
    assert_eq!(
        message(&shuffling(
            "shuffle.down v1: f32 = v0 by 32 width 32",
            false,
            31
        )),
        "shuffle offset 32 outside [1, 31]"
    );
}
