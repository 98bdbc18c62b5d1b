//! Long float sums in a blocked order, for accuracy at the partial accumulators' speed.
//!
//! A row reduction's partial accumulators ([`Builder::multi_accumulator`]) give each of
//! the `L` lanes every `L`-th element. Folded one after another, a lane of a long row adds
//! thousands of small elements into one large partial sum, and each step rounds at that
//! sum's magnitude: an f32 softmax denominator over 50257 tokens (32 lanes, 1570 steps
//! each) came out 6.3e-5 off where a tree is 1.5e-5 off, and a sum of a million
//! exponentials drops most of its small terms (relative error 1.3e-5, where a tree gives
//! 5e-8, the final rounding).
//!
//! Here a row of more than [`BLOCK`] chunks (of `L` consecutive elements) is summed in
//! blocks of about `sqrt(chunks)` chunks ([`block_chunks`]): each block into a lane array
//! starting from `-0` (the exact identity of a float add), each block's lanes then into
//! the row's; so every lane takes about `sqrt(chunks)` additions on either level instead
//! of `chunks` (181 instead of 32768 for 2^20 elements). On random rows of 50257 to 2^22
//! terms its error against the exact sum is that of a full tree within 2x (a numpy model
//! of both orders), near the result's own rounding; a third level gained nothing
//! measurable and costs a third loop nest reading the elements. The innermost loops are
//! the same contiguous lane loops as before (one extra vector add per block); the row's
//! last elements (fewer than a chunk) fold into the first lanes before the lanes are
//! halved, instead of one after another into the whole row's sum. Rows of at most
//! `BLOCK` chunks keep the plain order: each lane holds at most `BLOCK` terms there.
//!
//! Only float sums of 32 or 64 bits change order: 16-bit float sums follow XLA's tree
//! ([`super::xla_order`]), and integer sums, products, max and min keep their order
//! (exact, or no accuracy to gain the same way).

use affine::{Expr, Interval, Var};
use hlo::ir::reducer::Reducer;
use hlo::{CompId, InstrId};

use super::{Applied, Builder};
use crate::error::CodegenError;
use crate::kir::{Const, ScalarType, Stmt, Value};

/// Fewest chunks per block, and the longest row (in chunks) summed in the plain order:
/// each lane then holds at most `BLOCK` terms (XLA's reduction window is 32 too). A
/// 32-chunk block is 1024 `f32` elements at 32 lanes: its extra vector add is one in 32.
pub(super) const BLOCK: i64 = 32;

/// Chunks per block of a row of `chunks` chunks: `ceil(sqrt(chunks))`, at least
/// [`BLOCK`], so a block's lanes and the row's lanes each take about `sqrt(chunks)`
/// additions (181 each for a row of 2^20 `f32` at 32 lanes, 40 for 50257).
pub(super) fn block_chunks(chunks: i64) -> i64 {
    let mut n = (chunks as f64).sqrt() as i64;
    while n * n < chunks {
        n += 1;
    }
    while n > 1 && (n - 1) * (n - 1) >= chunks {
        n -= 1;
    }
    n.max(BLOCK)
}

/// Whether a reduction by `kind` of `ty` sums in the blocked order: a float add of 32 or
/// 64 bits (not complex).
pub(super) fn blocked_sum(kind: Reducer, ty: ScalarType) -> bool {
    kind == Reducer::Add && ty.is_float() && !ty.is_complex() && ty.byte_width() >= 4
}

/// A row reduction's partial accumulators, as [`Builder::multi_accumulator`] lays them
/// out: element `L * s + k + lo` of the reduced range variable `r` belongs to lane `k` of
/// chunk `s`.
pub(super) struct ChunkLanes<'a> {
    /// The reduce's computation and instruction.
    pub comp: CompId,
    /// The reduce.
    pub id: InstrId,
    /// Its reducer.
    pub red: CompId,
    /// The input's access over the reduction's range variables.
    pub access: &'a Applied,
    /// The reduced (innermost) range variable.
    pub r: Var,
    /// Its first value.
    pub lo: i64,
    /// Lanes `L`.
    pub lanes_n: i64,
    /// The lane loop variable (`0..L`).
    pub k: Var,
    /// The accumulators' type.
    pub ty: ScalarType,
}

impl Builder<'_> {
    /// Chunks `0..chunks` of `c` summed in blocks into lane array `dst` (which holds `-0`):
    /// blocks of [`block_chunks`] chunks, each summed from `-0` into a second lane array
    /// and then added into `dst`, the chunks past the last whole block as one more such
    /// block. Two loop nests that read elements (the blocks, the remainder), where the
    /// plain order has two too (the first chunk, the rest): a producer's invariant
    /// reduction hoisted before each (a softmax's row max) is not computed more often.
    pub(super) fn blocked_chunks(
        &mut self,
        c: &ChunkLanes<'_>,
        dst: usize,
        chunks: i64,
        out: &mut Vec<Stmt>,
    ) -> Result<(), CodegenError> {
        let size = block_chunks(chunks);
        let (full, rem) = (chunks / size, chunks % size);
        let name = self
            .module
            .computation(c.comp)
            .instr(c.id)
            .name()
            .to_string();
        let sub = self.new_local(format!("{name} block sums"), c.ty, c.lanes_n);
        // One block of `n` chunks from chunk `at + s` (`s` its chunk loop variable).
        let block = |b: &mut Self, at: Expr, n: i64| -> Result<Vec<Stmt>, CodegenError> {
            let s = b.new_range(Interval::new(0, n - 1));
            let chunk = b.simplify(at + Expr::var(s));
            let step = b.chunk_step(c, sub, chunk, c.k, c.lanes_n)?;
            Ok(vec![
                b.lanes_identity(c, sub),
                Stmt::serial_loop(s, 0, n - 1, vec![step]),
                b.lanes_into(c, dst, sub)?,
            ])
        };
        let bv = self.new_range(Interval::new(0, full - 1));
        let body = block(self, Expr::var(bv) * Expr::constant(size), size)?;
        out.push(Stmt::serial_loop(bv, 0, full - 1, body));
        if rem > 0 {
            out.extend(block(self, Expr::constant(full * size), rem)?);
        }
        Ok(())
    }

    /// Every lane of `dst` set to `-0`, the exact identity of a float add (`-0 + x` is
    /// `x` for every `x`, `+0` and `-0` included).
    pub(super) fn lanes_identity(&mut self, c: &ChunkLanes<'_>, dst: usize) -> Stmt {
        Stmt::serial_loop(
            c.k,
            0,
            c.lanes_n - 1,
            vec![Stmt::LocalStore {
                local: dst,
                offset: Expr::var(c.k),
                value: Value::Const(c.ty, Const::Float(-0.0)),
            }],
        )
    }

    /// Lanes `0..n` (loop variable `k`) of chunk `chunk` combined into lane array `dst`:
    /// `dst[k] = red(dst[k], x[L * chunk + k + lo])`.
    pub(super) fn chunk_step(
        &mut self,
        c: &ChunkLanes<'_>,
        dst: usize,
        chunk: Expr,
        k: Var,
        n: i64,
    ) -> Result<Stmt, CodegenError> {
        let mut step = Vec::new();
        let var = self.new_var(c.ty);
        step.push(Stmt::Decl {
            var,
            value: Value::LocalLoad {
                local: dst,
                offset: Expr::var(k),
                ty: c.ty,
            },
        });
        let e = chunk * Expr::constant(c.lanes_n) + Expr::var(k) + Expr::constant(c.lo);
        let a = self.at_range(c.access, c.r, e);
        self.memo.push(Default::default());
        let res = self.reduce_body(c.comp, c.id, c.red, &[a], &[(var, c.ty)], &mut step);
        self.memo.pop();
        res?;
        step.push(Stmt::LocalStore {
            local: dst,
            offset: Expr::var(k),
            value: Value::Var(var, c.ty),
        });
        Ok(Stmt::serial_loop(k, 0, n - 1, step))
    }

    /// `dst[k] = red(dst[k], src[k])` for every lane.
    fn lanes_into(
        &mut self,
        c: &ChunkLanes<'_>,
        dst: usize,
        src: usize,
    ) -> Result<Stmt, CodegenError> {
        let at = |local: usize| Value::LocalLoad {
            local,
            offset: Expr::var(c.k),
            ty: c.ty,
        };
        let mut body = Vec::new();
        let v = self.combine(c.red, at(dst), at(src), &mut body)?;
        body.push(Stmt::LocalStore {
            local: dst,
            offset: Expr::var(c.k),
            value: v,
        });
        Ok(Stmt::serial_loop(c.k, 0, c.lanes_n - 1, body))
    }
}
