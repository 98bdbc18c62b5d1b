//! LAPACK custom calls priced as backend-cpu runs them (`backend-cpu/src/library/lapack*.rs`).
//!
//! Two kinds of routine run there, 20-60x apart per flop, so one rate cannot price both:
//! - **Blocked** (`potrf`, `getrf`, `trsm`, `syevd`, `gesdd`): `faer`'s routines, whose
//!   panels fill their kernels' blocks from an order of about
//!   [`device::Library::lapack_full_order`]; a smaller matrix runs at `order / that` of
//!   the rate (measured: order 64 at a quarter, 16 at a sixteenth), and every matrix costs
//!   [`device::Library::lapack_matrix_s`] beyond its flops (a batch of 16 16x16 Cholesky
//!   factorizations takes 24 us for 22 kflop).
//! - **Unblocked** (`geqrf`, `orgqr`): the evaluator's Householder steps in `f64` on a
//!   row-major copy (so that `Q` and `R` agree with XLA's LAPACK bit for bit), scalar,
//!   each reflector a dependent sum down a column: 0.5-3.5 GFLOP/s per core where the
//!   blocked rate priced them at 25 (a batch of 32 256x64 QRs measured 26-45 ms, priced
//!   1.5). A single matrix runs on one thread.
//!
//! A batch runs its matrices in parallel, one per thread; a single blocked matrix uses the
//! library's threads (every unit).

use device::Device;
use hlo::{Instruction, Shape};

use crate::cost::shape_size;

/// The work of one LAPACK call: per matrix, and how it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LapackWork {
    /// Flops of one matrix, by LAWN 41's count.
    pub flops: f64,
    /// Matrices in the batch (at least 1).
    pub matrices: f64,
    /// The smaller side of the (first operand's) matrix: what fills a blocked routine.
    pub order: f64,
    /// Columns of the matrix (the row-major copy an unblocked routine walks).
    pub cols: f64,
    /// Whether `faer`'s blocked routine runs it (else the unblocked Householder steps).
    pub blocked: bool,
}

impl LapackWork {
    /// The work of custom call `i` (target `lapack_{s,d}ROUTINE_ffi`) whose first operand is
    /// `a` and second `b` (a triangular solve's right-hand sides); `None` for a target the
    /// model does not know or an operand of rank under 2.
    pub fn of(i: &Instruction, a: &Shape, b: Option<&Shape>) -> Option<LapackWork> {
        let target = i.custom_call_target()?;
        let rank = a.dims().len();
        if rank < 2 {
            return None;
        }
        let (rows, cols) = (a.dims()[rank - 2] as f64, a.dims()[rank - 1] as f64);
        let matrices = (shape_size(a).0 / (rows * cols).max(1.0)).max(1.0);
        let routine = target.strip_prefix("lapack_")?.get(1..)?;
        let routine = routine.strip_suffix("_ffi").unwrap_or(routine);
        // LAWN 41's counts, for `big x n` with `big >= n`.
        let (big, n) = (rows.max(cols), rows.min(cols));
        let flops = match routine {
            "potrf" => n * n * n / 3.0,
            "getrf" => big * n * n - n * n * n / 3.0,
            "geqrf" => 2.0 * big * n * n - 2.0 * n * n * n / 3.0,
            "orgqr" => 4.0 * big * n * n - 2.0 * (big + n) * n * n + 4.0 * n * n * n / 3.0,
            "syevd" => 9.0 * n * n * n,
            // The thin R-SVD (Golub and Van Loan): a QR of the tall matrix, then the
            // square SVD of its `R`. `22 n^3` priced a batch of 512x16 matrices 70x under.
            "gesdd" => 6.0 * big * n * n + 20.0 * n * n * n,
            "trsm" => {
                // The triangle is operand 0 (`n x n`), the right-hand sides operand 1 (as
                // the result): `n^2` flops per right-hand side.
                let b = b.unwrap_or(i.shape());
                let r = b.dims().len();
                if r < 2 {
                    return None;
                }
                n * (b.dims()[r - 2] as f64) * (b.dims()[r - 1] as f64)
            }
            _ => return None,
        };
        Some(LapackWork {
            flops,
            matrices,
            order: n,
            cols,
            blocked: !matches!(routine, "geqrf" | "orgqr"),
        })
    }

    /// `(flops, compute seconds)` of the whole call on `d`: every matrix's flops at the
    /// rate of its kind of routine, plus the per-matrix cost, the matrices spread over the
    /// units. A description without a `[library]` section prices the flops at an eighth
    /// of its `f32` rate on every unit.
    pub fn seconds(&self, d: &Device) -> (f64, f64) {
        let units = f64::from(d.compute.units.max(1));
        let total = self.flops * self.matrices;
        let Some(l) = d.library.as_ref() else {
            return (total, total / (d.compute.f32_flops_per_unit / 8.0 * units));
        };
        // A batch: one matrix per thread; one matrix: the library's threads if blocked.
        let threads = if self.matrices >= 2.0 {
            units.min(self.matrices)
        } else if self.blocked {
            units
        } else {
            1.0
        };
        let rate = if self.blocked {
            l.lapack_flops_per_unit * (self.order / l.lapack_full_order).clamp(1.0 / 64.0, 1.0)
        } else {
            l.lapack_unblocked_flops_per_unit
                * (l.lapack_unblocked_cols / self.cols.max(1.0)).clamp(1.0 / 64.0, 1.0)
        };
        let per_matrix = self.matrices * l.lapack_matrix_s;
        (total, (total / rate + per_matrix) / threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(text: &str) -> LapackWork {
        let m = hlo::parse_module(text).unwrap();
        let c = m.entry();
        let i = c.instr(c.root());
        let a = c.instr(i.operands()[0]).shape();
        let b = i.operands().get(1).map(|&o| c.instr(o).shape());
        LapackWork::of(i, a, b).unwrap()
    }

    /// A QR runs unblocked, one matrix on one thread at the unblocked rate: a 256x256
    /// `geqrf` is 20x the blocked routine's price.
    #[test]
    fn qr_runs_unblocked_on_one_thread() {
        let d = device::load("cpu").unwrap();
        let l = d.library.as_ref().unwrap();
        let w = work("HloModule m\nENTRY e {\n  a = f32[256,256]{0,1} parameter(0)\n  ROOT q = (f32[256,256]{0,1}, f32[256]{0}) custom-call(a), custom_call_target=\"lapack_sgeqrf_ffi\"\n}");
        assert!(!w.blocked);
        let flops = 4.0 / 3.0 * 256f64.powi(3);
        let (total, s) = w.seconds(&d);
        assert!((total - flops).abs() < 1e-6 * flops);
        let rate = l.lapack_unblocked_flops_per_unit * l.lapack_unblocked_cols / 256.0;
        let want = flops / rate + l.lapack_matrix_s;
        assert!((s - want).abs() < 1e-9 * want, "{s} {want}");
        let blocked = LapackWork { blocked: true, ..w }.seconds(&d).1;
        assert!(s > 10.0 * blocked, "{s} {blocked}");
    }
}
