//! Transposed reads staged through local tiles, so a transposing kernel's expensive math
//! runs along contiguous rows.
//!
//! A cache-blocked transpose ([`super::transpose`]) walks each tile's output row by row,
//! reading its transposed input down a column: the C compiler then leaves the innermost
//! loop scalar (a strided load feeding a vector `tanh` is not worth vectorizing to it), and
//! a transcendental runs as a scalar call per element (moe_einsum's GELU of a transposed
//! GEMM result: 15 ns per element, 60 ms). Copying each transposed input's tile into a local
//! array first (the strided reads, all in cache: the tile is the blocking's own) leaves the
//! element loop reading the local tile contiguously, so its math vectorizes.

use affine::{Expr, Interval, Var, VarKind};

use super::builder::Builder;
use crate::kir::{self, Stmt, UnOp, Value};

/// Most input tiles staged per kernel (each is `tile * tile` elements of the block's stack).
const MAX_STAGED: usize = 4;

/// Whether `v` computes a transcendental: what runs as a polynomial or a library call per
/// element, and so is worth a copy of its inputs to vectorize.
fn expensive(v: &Value) -> bool {
    match v {
        Value::Unary(op, a, _) => {
            matches!(
                op,
                UnOp::Exp
                    | UnOp::Expm1
                    | UnOp::Log
                    | UnOp::Log1p
                    | UnOp::Tanh
                    | UnOp::Logistic
                    | UnOp::Erf
                    | UnOp::Sin
                    | UnOp::Cos
                    | UnOp::Tan
                    | UnOp::Cbrt
            ) || expensive(a)
        }
        Value::Binary(op, a, b, _) => {
            matches!(op, kir::BinOp::Pow | kir::BinOp::Atan2) || expensive(a) || expensive(b)
        }
        Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => expensive(a) || expensive(b),
        Value::Select(p, a, b) => expensive(p) || expensive(a) || expensive(b),
        Value::Convert(a, _) | Value::BitcastConvert(a, _) => expensive(a),
        Value::Const(..)
        | Value::Var(..)
        | Value::Index(_)
        | Value::Load { .. }
        | Value::LocalLoad { .. } => false,
    }
}

/// One staged load: the buffer and offset it reads (in the tile's variables) and its local.
struct Staged {
    buf: usize,
    offset: Expr,
    ty: kir::ScalarType,
    local: usize,
}

/// What the rewrite of one tile's element body needs.
struct Stager<'a, 'm> {
    b: &'a mut Builder<'m>,
    /// The tile's row and column variables (the column is the innermost loop).
    row: Var,
    col: Var,
    tile: i64,
    staged: Vec<Staged>,
    /// Set when more loads qualify than [`MAX_STAGED`].
    too_many: bool,
}

impl Stager<'_, '_> {
    /// Whether the load of `buf` at `offset` reads down a column: an input, strided along
    /// the tile's column variable, its offset known before the body runs (no runtime
    /// index).
    fn transposed(&self, buf: usize, offset: Expr) -> bool {
        if self.b.buffers[buf].access != kir::Access::In || offset.uses_kind(VarKind::Runtime) {
            return false;
        }
        let col = self.col;
        let next =
            offset.substitute(&mut |u| (u == col).then(|| Expr::var(col) + Expr::constant(1)));
        self.b
            .simplify(next - offset)
            .as_const()
            .is_some_and(|s| s.abs() > 1)
    }

    /// Rewrites the loads of `v` that always run (not under a select or condition, whose
    /// arms C evaluates only when taken: such a load may be out of bounds elsewhere).
    fn rewrite(&mut self, v: &mut Value) {
        match v {
            Value::Load { buf, offset, ty } if self.transposed(*buf, *offset) => {
                let (buf, offset, ty) = (*buf, *offset, *ty);
                let local = match self
                    .staged
                    .iter()
                    .find(|s| s.buf == buf && s.offset == offset)
                {
                    Some(s) => s.local,
                    None if self.staged.len() == MAX_STAGED => {
                        self.too_many = true;
                        return;
                    }
                    None => {
                        let name = format!("tile of b{buf}");
                        let len = self.tile * self.tile;
                        let local = self.b.new_local(name, ty, len);
                        self.staged.push(Staged {
                            buf,
                            offset,
                            ty,
                            local,
                        });
                        local
                    }
                };
                *v = Value::LocalLoad {
                    local,
                    offset: self.at(self.row, self.col),
                    ty,
                };
            }
            Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
                self.rewrite(a)
            }
            Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) => {
                self.rewrite(a);
                self.rewrite(b);
            }
            _ => {}
        }
    }

    /// The element of a local tile at `(row, col)`, row-major.
    fn at(&self, row: Var, col: Var) -> Expr {
        Expr::var(row) * Expr::constant(self.tile) + Expr::var(col)
    }
}

/// Stages the transposed input reads of a tile's element `body` (in the tile's `row` and
/// `col` variables, `col` innermost, `tile` elements each) through local tiles when the
/// body computes a transcendental. Returns the statements that fill the local tiles (one
/// loop nest over the tile, to run before the element loops) and rewrites `body` to read
/// them; `None` leaves `body` as it is (nothing expensive, nothing transposed, a body
/// with branches or runtime indices, or more than [`MAX_STAGED`] tiles).
pub(super) fn stage_transposed_reads(
    b: &mut Builder<'_>,
    body: &mut Vec<Stmt>,
    (row, col): (Var, Var),
    tile: i64,
) -> Option<Vec<Stmt>> {
    // Straight-line bodies only: a load under a branch may be one the element does not
    // make, and a runtime index is bound inside the body.
    let straight = body
        .iter()
        .all(|s| matches!(s, Stmt::Comment(_) | Stmt::Let { .. } | Stmt::Store { .. }));
    let costly = body.iter().any(|s| match s {
        Stmt::Let { value, .. } | Stmt::Store { value, .. } => expensive(value),
        _ => false,
    });
    if !straight || !costly {
        return None;
    }
    let locals_before = b.locals.len();
    let mut rewritten = body.clone();
    let mut st = Stager {
        b,
        row,
        col,
        tile,
        staged: Vec::new(),
        too_many: false,
    };
    for s in &mut rewritten {
        if let Stmt::Let { value, .. } | Stmt::Store { value, .. } = s {
            st.rewrite(value);
        }
    }
    if st.staged.is_empty() || st.too_many {
        st.b.locals.truncate(locals_before);
        return None;
    }
    // The fill runs over fresh variables of the same bounds, column by column: the
    // transposed input is contiguous down a column, so each read continues the cache line
    // of the last (row by row, each read is another line, 32 of them at one large stride,
    // which on a power-of-two stride all fall into the same set of the L1 cache).
    let r = st.b.new_range(Interval::new(0, tile - 1));
    let c = st.b.new_range(Interval::new(0, tile - 1));
    let fills = st
        .staged
        .iter()
        .map(|s| {
            let offset = s.offset.substitute(&mut |v| match v {
                v if v == row => Some(Expr::var(r)),
                v if v == col => Some(Expr::var(c)),
                _ => None,
            });
            Stmt::LocalStore {
                local: s.local,
                offset: st.at(r, c),
                value: Value::Load {
                    buf: s.buf,
                    offset: st.b.simplify(offset),
                    ty: s.ty,
                },
            }
        })
        .collect();
    *body = rewritten;
    Some(vec![Stmt::serial_loop(
        c,
        0,
        tile - 1,
        vec![Stmt::serial_loop(r, 0, tile - 1, fills)],
    )])
}
