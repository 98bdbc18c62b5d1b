//! The work of a library GEMM (batch, `m`, `n`, `k`, operand type, bytes), from a `dot`
//! instruction or a planned GEMM, which [`crate::cost_library`] prices and
//! [`crate::cost::OpInfo`] keeps for a dot.

use hlo::{CompId, ElementType, InstrId, Module, Opcode};

/// The operand type class of a GEMM, which picks its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmType {
    /// `f32` operands.
    F32,
    /// `f64` operands.
    F64,
    /// Two `bf16` operands, summed in `f32` (on AMX tiles where the CPU has them).
    Half,
    /// `f16` operands, or a `bf16` one with an `f32` one, summed in `f32`: widened to `f32`
    /// copies and run as the `f32` GEMM on every CPU (no AMX-FP16 on the ones we run on).
    Widened,
    /// `s8` operands (both) summed in `s32`: the CPU's integer GEMM (a backend without
    /// one converts them and runs an `f32` GEMM; its description has no GEMM rates).
    S8,
}

impl GemmType {
    /// The class of a GEMM whose operands are stored as `lhs` and `rhs`: `Half` when both
    /// are `bf16`, `Widened` when another one is 16-bit, `F64` when both are `f64`, `S8`
    /// when both are `s8`, else `F32`.
    pub fn of(lhs: ElementType, rhs: ElementType) -> GemmType {
        let half = |t| matches!(t, ElementType::BF16 | ElementType::F16);
        if lhs == ElementType::S8 && rhs == ElementType::S8 {
            GemmType::S8
        } else if lhs == ElementType::BF16 && rhs == ElementType::BF16 {
            GemmType::Half
        } else if half(lhs) || half(rhs) {
            GemmType::Widened
        } else if lhs == ElementType::F64 && rhs == ElementType::F64 {
            GemmType::F64
        } else {
            GemmType::F32
        }
    }
}

/// The work of one library GEMM call (all batch elements).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmWork {
    /// Batch elements.
    pub batch: f64,
    /// Rows of each product.
    pub m: f64,
    /// Columns of each product.
    pub n: f64,
    /// The contracted extent.
    pub k: f64,
    /// The operand type class.
    pub ty: GemmType,
    /// Bytes of the lhs, the rhs and the result as stored.
    pub bytes: [f64; 3],
}

impl GemmWork {
    /// The GEMM a `dot` instruction `id` of `comp` computes, from its dimension numbers and
    /// shapes; `None` for any other instruction or a dot without array operands.
    pub fn of_dot(module: &Module, comp: CompId, id: InstrId) -> Option<GemmWork> {
        let c = module.get_computation(comp)?;
        let i = c.instr(id);
        if i.opcode() != Opcode::Dot || i.operands().len() != 2 {
            return None;
        }
        let lhs = c.instr(i.operands()[0]).shape();
        let rhs = c.instr(i.operands()[1]).shape();
        if !library_types(lhs, rhs, i.shape()) {
            // An integer dot of other types or a mixed-precision one: no library GEMM
            // takes it; it runs as a loop ([`crate::cost_contraction`]).
            return None;
        }
        let dn = i.dot_dimension_numbers();
        let extent = |s: &hlo::Shape, dims: &[i64]| -> f64 {
            dims.iter()
                .filter_map(|&d| s.dims().get(usize::try_from(d).ok()?).copied())
                .map(|e| e.max(0) as f64)
                .product()
        };
        let batch = extent(lhs, &dn.lhs_batch_dims);
        let k = extent(lhs, &dn.lhs_contracting_dims);
        let (lhs_elements, lhs_bytes) = size(lhs);
        let (rhs_elements, rhs_bytes) = size(rhs);
        let (_, out_bytes) = size(i.shape());
        let per = (batch * k).max(1.0);
        Some(GemmWork {
            batch,
            m: lhs_elements / per,
            n: rhs_elements / per,
            k,
            ty: GemmType::of(lhs.element_type()?, rhs.element_type()?),
            bytes: [lhs_bytes, rhs_bytes, out_bytes],
        })
    }

    /// Flops: two per multiply-add.
    pub fn flops(&self) -> f64 {
        2.0 * self.batch * self.m * self.n * self.k
    }
}

/// Whether the runtime's GEMM takes operands and a result of these types (plan's
/// `gemm::compute_type`): all `f64`; all `f32`, `bf16` or `f16`; or `s8` operands into
/// `s32` (the CPU's integer GEMM, a converted `f32` GEMM elsewhere).
fn library_types(lhs: &hlo::Shape, rhs: &hlo::Shape, out: &hlo::Shape) -> bool {
    let types = [lhs, rhs, out].map(|s| s.element_type());
    let s8 = Some(ElementType::S8);
    if types == [s8, s8, Some(ElementType::S32)] {
        return true;
    }
    let f64s = types.iter().all(|&t| t == Some(ElementType::F64));
    let f32s = types.iter().all(|&t| {
        matches!(
            t,
            Some(ElementType::F32 | ElementType::BF16 | ElementType::F16)
        )
    });
    f64s || f32s
}

/// `(elements, bytes)` of an array shape (a tuple: nothing).
fn size(s: &hlo::Shape) -> (f64, f64) {
    if s.is_tuple() {
        return (0.0, 0.0);
    }
    let e = s.element_count().unwrap_or(0).max(0) as f64;
    let b = s.byte_size().unwrap_or(0).max(0) as f64;
    (e, b)
}
