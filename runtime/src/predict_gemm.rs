//! The work of a planned GEMM in the cost model's terms ([`GemmWork`]): shared by the
//! per-thunk prediction (`predict`) and the streamed-GEMM prediction (`predict_stream`),
//! so neither file reaches into the other for it.

use fusion::cost_library::{GemmType, GemmWork};

/// The work of a planned GEMM, for [`CostModel::gemm`].
pub(crate) fn gemm_work(g: &plan::GemmShape) -> GemmWork {
    use codegen::kir::ScalarType;
    let batch: usize = g.batch.iter().map(|b| b.0).product();
    let half = |t: ScalarType| matches!(t, ScalarType::BF16 | ScalarType::F16);
    let ty = if g.ty == ScalarType::S32 {
        // `s8` operands, the integer GEMM (plan makes `s32` GEMMs of nothing else).
        GemmType::S8
    } else if g.lhs_ty == ScalarType::BF16 && g.rhs_ty == ScalarType::BF16 {
        // The pair the AMX tiles take (where the CPU has them).
        GemmType::Half
    } else if half(g.lhs_ty) || half(g.rhs_ty) {
        GemmType::Widened
    } else if g.ty == ScalarType::F64 {
        GemmType::F64
    } else {
        GemmType::F32
    };
    let bytes = |rows: usize, cols: usize, t: ScalarType| {
        (batch * rows * cols) as f64 * f64::from(t.byte_width())
    };
    GemmWork {
        batch: batch as f64,
        m: g.m as f64,
        n: g.n as f64,
        k: g.k as f64,
        ty,
        bytes: [
            bytes(g.m, g.k, g.lhs_ty),
            bytes(g.k, g.n, g.rhs_ty),
            bytes(g.m, g.n, g.out_ty),
        ],
    }
}
