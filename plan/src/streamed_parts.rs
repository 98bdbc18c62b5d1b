//! The parts of a [`Thunk::StreamedGemm`] every backend reads, taken apart and checked in
//! one place (the CPU executor runs the blocks through scratch slots, the CUDA executor
//! the producer whole and then one GEMM; both need the same producer, GEMM and block
//! rows, and both must refuse the same malformed step).

use crate::{BackendError, BufferId, GemmShape, Thunk};

/// A [`Thunk::StreamedGemm`]'s producer kernel and GEMM, as the executors use them.
#[derive(Debug)]
pub struct StreamedParts<'a> {
    /// The producer's kernel (an index into [`crate::Program::kernels`]).
    pub kernel: usize,
    /// The buffers bound to the producer's parameters (the lhs among them at the step's
    /// `lhs_arg`).
    pub args: &'a [BufferId],
    /// The producer's grid: one block per streamed block.
    pub blocks: i64,
    /// The GEMM's matrices (one batch element over the producer's output).
    pub shape: &'a GemmShape,
    /// The GEMM's rhs buffer.
    pub rhs: BufferId,
    /// The GEMM's result buffer.
    pub out: BufferId,
    /// The lhs rows one block writes (`block_elements / k`).
    pub block_rows: usize,
}

/// A streamed step's producer kernel and GEMM taken apart, whichever operand or axis
/// streams: what [`streamed_parts`] and the CPU's contraction stream both start from.
#[derive(Debug)]
pub struct KernelIntoGemm<'a> {
    /// The producer's kernel (an index into [`crate::Program::kernels`]).
    pub kernel: usize,
    /// The buffers bound to the producer's parameters.
    pub args: &'a [BufferId],
    /// The producer's grid: one block per streamed block.
    pub blocks: i64,
    /// The GEMM's matrices.
    pub shape: &'a GemmShape,
    /// The GEMM's lhs buffer.
    pub lhs: BufferId,
    /// The GEMM's rhs buffer.
    pub rhs: BufferId,
    /// The GEMM's result buffer.
    pub out: BufferId,
}

/// `producer` and `gemm` of a streamed step; an internal error naming the step `what`
/// when the producer is no kernel or the consumer no GEMM.
pub fn kernel_into_gemm<'a>(
    producer: &'a Thunk,
    gemm: &'a Thunk,
    what: &str,
) -> Result<KernelIntoGemm<'a>, BackendError> {
    let malformed = |why: &str| BackendError::Internal(format!("malformed {what}: {why}"));
    let Thunk::Kernel {
        kernel,
        args,
        blocks,
        ..
    } = producer
    else {
        return Err(malformed("the producer is not a kernel"));
    };
    let Thunk::Gemm {
        shape,
        lhs,
        rhs,
        out,
    } = gemm
    else {
        return Err(malformed("the consumer is not a GEMM"));
    };
    Ok(KernelIntoGemm {
        kernel: *kernel,
        args,
        blocks: *blocks,
        shape,
        lhs: *lhs,
        rhs: *rhs,
        out: *out,
    })
}

/// The parts of a streamed GEMM whose producer is `producer`, whose blocks write
/// `block_elements` lhs elements each and whose GEMM is `gemm`; an internal error when
/// the step is malformed (a producer that is no kernel, a GEMM that is no GEMM, `k` of
/// zero, or blocks that do not write whole rows).
pub fn streamed_parts<'a>(
    producer: &'a Thunk,
    block_elements: i64,
    gemm: &'a Thunk,
) -> Result<StreamedParts<'a>, BackendError> {
    let parts = kernel_into_gemm(producer, gemm, "streamed gemm")?;
    let malformed = |why: &str| BackendError::Internal(format!("malformed streamed gemm: {why}"));
    let k = i64::try_from(parts.shape.k).map_err(|_| malformed("k out of range"))?;
    if k == 0 || block_elements < 0 || block_elements % k != 0 {
        return Err(malformed(&format!(
            "{block_elements} elements per block are not whole rows of {k}"
        )));
    }
    Ok(StreamedParts {
        kernel: parts.kernel,
        args: parts.args,
        blocks: parts.blocks,
        shape: parts.shape,
        rhs: parts.rhs,
        out: parts.out,
        block_rows: (block_elements / k) as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use codegen::kir::ScalarType;

    fn gemm(k: usize) -> Thunk {
        Thunk::Gemm {
            shape: GemmShape {
                ty: ScalarType::F32,
                lhs_ty: ScalarType::F32,
                rhs_ty: ScalarType::F32,
                out_ty: ScalarType::F32,
                m: 8,
                n: 3,
                k,
                lhs: (k as isize, 1),
                rhs: (3, 1),
                out: (3, 1),
                batch: Vec::new(),
            },
            lhs: 0,
            rhs: 1,
            out: 2,
        }
    }

    fn kernel() -> Thunk {
        Thunk::Kernel {
            kernel: 4,
            args: vec![5, 0],
            blocks: 2,
            elements: 16,
        }
    }

    #[test]
    fn whole_rows_give_the_parts() {
        let (p, g) = (kernel(), gemm(4));
        let parts = streamed_parts(&p, 16, &g).unwrap();
        assert_eq!(
            (parts.kernel, parts.args, parts.blocks),
            (4, &[5, 0][..], 2)
        );
        assert_eq!((parts.rhs, parts.out, parts.block_rows), (1, 2, 4));
        assert_eq!(parts.shape.k, 4);
    }

    #[test]
    fn malformed_steps_are_refused() {
        let (p, g) = (kernel(), gemm(4));
        for (producer, elements, consumer, why) in [
            (&g, 16, &g, "not a kernel"),
            (&p, 16, &p, "not a GEMM"),
            (&p, 6, &g, "whole rows"),
        ] {
            let e = streamed_parts(producer, elements, consumer).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        let zero = gemm(0);
        let e = streamed_parts(&p, 16, &zero).unwrap_err();
        assert!(e.to_string().contains("whole rows"), "{e}");
    }
}
