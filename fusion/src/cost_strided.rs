//! Inputs a kernel reads down a column: a transpose that moves its operand's minor
//! dimension away from the innermost loop (or a slice that keeps one element of it) reads
//! one element per cache line, and the line is what moves, not the element's bytes.
//!
//! The CPU code generator's loops run over a root's dimensions in row-major order (a
//! reduction's innermost loop runs along its operand's minor dimension), so a value read at
//! a member's own index moves by one element per innermost step. A transpose whose output
//! minor dimension is not its operand's minor one reads its operand with the stride of the
//! operand dimension it maps there; the members below it that read at their own index or
//! in the same row-major order (elementwise ops, converts, slices, reverses, reshapes) are
//! read with that stride too, and so are the kernel inputs they read. Measured (`hloc run --profile`, pinned to one core, load 7):
//! a [8,8,32,128] -> [8,128,8,32] transpose (stride 128, untiled) took 0.60 ms for 1 MiB,
//! 2.3 ns per element where 1 MiB read and written at the second level's rate is 0.04 ms;
//! a 2048 x 2048 transpose, blocked in 32 x 32 tiles by the code generator, took 20.8 ms
//! against 3.4 ms for an elementwise add of the same arrays (its 8 KiB column stride maps
//! every line of a tile column to one set of the first-level cache, so the tile does not
//! stay there). Both are within 2x of a line per element at the rate of the level the
//! input fits in.

use hlo::Opcode;

/// Bytes of a cache line: a read that moves by this much or more per innermost step fetches
/// a line for every element.
pub const LINE_BYTES: f64 = 64.0;

/// The element stride with which an op reads its (first) operand along the innermost
/// loop of its own index (its last output dimension of more than one element): for a
/// transpose, the product of the operand's dimensions minor to the one that output
/// dimension maps to; for a slice, the same product times the slice's stride (a slice
/// that keeps one element of the minor dimension, `[.., 15:16]`, reads down the next
/// one); 1 for a transpose or slice that keeps the minor dimension and for any other op.
pub fn minor_read_stride(instr: &hlo::Instruction, operand_dims: &[i64]) -> f64 {
    let out = instr.shape().dims();
    let Some(j) = out.iter().rposition(|&d| d > 1) else {
        return 1.0;
    };
    let (dim, step) = match instr.opcode() {
        Opcode::Transpose => match instr.dimensions().and_then(|p| p.get(j).copied()) {
            Some(d) => (d as usize, 1),
            None => return 1.0,
        },
        Opcode::Slice => {
            let step = instr
                .slice()
                .and_then(|s| s.get(j).map(|r| r.stride))
                .unwrap_or(1);
            (j, step.max(1))
        }
        _ => return 1.0,
    };
    if dim >= operand_dims.len() {
        return 1.0;
    }
    let below: f64 = operand_dims[dim + 1..]
        .iter()
        .map(|&d| d.max(1) as f64)
        .product();
    below * step as f64
}

/// The stride operand `k` of an op with `opcode` is read with along the innermost loop,
/// given the stride `mine` of the op's own index there: a transpose's or slice's own
/// stride `own` ([`minor_read_stride`]) where it reads down a column; the reader's stride
/// for an operand read at the same index (`identity`: an elementwise op of the same
/// dimensions) or in the same row-major order (a convert, a copy, a reshape, a bitcast) or
/// at a shifted one (slice, reverse); 1 (contiguous, or unknown) for every other read.
pub fn operand_stride(opcode: Opcode, own: f64, identity: bool, k: usize, mine: f64) -> f64 {
    if k == 0 && own > 1.0 {
        return own.max(mine);
    }
    let passes = identity
        || matches!(
            opcode,
            Opcode::Convert
                | Opcode::Copy
                | Opcode::Slice
                | Opcode::Reverse
                | Opcode::Reshape
                | Opcode::Bitcast
        );
    if passes {
        mine
    } else {
        1.0
    }
}

/// Extra bytes the strided reads of an input of `per_element` bytes an element move beyond
/// their elements' bytes: each of `reads` element reads with an element stride `stride`
/// fetches `min(stride * element bytes, LINE_BYTES)` bytes.
pub fn extra_line_bytes(per_element: f64, reads: f64, stride: f64) -> f64 {
    if per_element <= 0.0 || stride <= 1.0 {
        return 0.0;
    }
    let fetched = (stride * per_element).min(LINE_BYTES).max(per_element);
    reads * (fetched - per_element)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stride_of(text: &str) -> f64 {
        let m = hlo::parse_module(text).unwrap();
        let c = m.entry();
        let t = c.root_instr();
        let dims = c.instr(t.operands()[0]).shape().dims().to_vec();
        minor_read_stride(t, &dims)
    }

    #[test]
    fn a_transpose_reads_with_the_stride_of_the_dimension_it_moves_innermost() {
        let moved = stride_of(
            "HloModule m\nENTRY e {\n  p = f32[8,8,32,128] parameter(0)\n  \
             ROOT t = f32[8,128,8,32] transpose(p), dimensions={0,3,1,2}\n}",
        );
        assert_eq!(moved, 128.0);
        let kept = stride_of(
            "HloModule m\nENTRY e {\n  p = f32[8,16,32] parameter(0)\n  \
             ROOT t = f32[16,8,32] transpose(p), dimensions={1,0,2}\n}",
        );
        assert_eq!(kept, 1.0);
        let column = stride_of(
            "HloModule m\nENTRY e {\n  p = f32[2048,24] parameter(0)\n  \
             ROOT t = f32[24,2048] transpose(p), dimensions={1,0}\n}",
        );
        assert_eq!(column, 24.0);
    }

    #[test]
    fn a_slice_that_keeps_one_element_of_the_minor_dimension_reads_down_the_next() {
        // [2048,64,16] -> [2048,64,1] (a cummax's last column): 16 elements apart.
        let column = stride_of(
            "HloModule m\nENTRY e {\n  p = f32[2048,64,16] parameter(0)\n  \
             ROOT s = f32[2048,64,1] slice(p), slice={[0:2048], [0:64], [15:16]}\n}",
        );
        assert_eq!(column, 16.0);
        let rows = stride_of(
            "HloModule m\nENTRY e {\n  p = f32[64,16] parameter(0)\n  \
             ROOT s = f32[32,8] slice(p), slice={[0:32], [8:16]}\n}",
        );
        assert_eq!(rows, 1.0);
        let every_other = stride_of(
            "HloModule m\nENTRY e {\n  p = f32[64,16] parameter(0)\n  \
             ROOT s = f32[64,8] slice(p), slice={[0:64], [0:16:2]}\n}",
        );
        assert_eq!(every_other, 2.0);
    }
}
