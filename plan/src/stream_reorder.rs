//! A GEMM operand's producer moved next to its GEMM, so the pair can stream
//! ([`super::stream`]). The schedule may put other thunks between a patch kernel and
//! its GEMM: a transposed convolution's weights are flipped and reshaped by two small
//! kernels after its patches are built and before the product
//! (`conv_transpose_autoencoder`'s 16 MiB patches, three times). When those thunks
//! neither name the operand nor touch anything the producer reads or writes, the
//! producer may run after them: the same values are read and written, in an order that
//! only the two of them could tell apart.

use codegen::kir::Kernel;

use super::thunk_names::each_named;
use super::{Buffer, BufferId, Thunk};

/// Most thunks between a producer and its GEMM that the producer moves past.
pub const MAX_GAP: usize = 4;

/// For every GEMM of the entry sequence `thunks` whose lhs or rhs `b` (the larger first)
/// is written by a kernel at most [`MAX_GAP`] thunks before it, dies at the GEMM and
/// Whether a producer thunk may stream into a GEMM through buffer `b`:
/// `(producer, gemm, buffers, b)`.
pub type StreamsTest<'a> = dyn Fn(&Thunk, &Thunk, &[Buffer], BufferId) -> bool + 'a;

/// `streams(producer, gemm, buffers, b)` accepts, unless one that streams is written just
/// before it already, moves the producer to just before the GEMM when the thunks
/// between are kernels, GEMMs, copies or library calls that do not name `b` and neither
/// write a buffer the producer names nor name one it writes. `buffers`' `defined_at` and
/// `last_use` (entry thunk indices) follow the moved thunks.
pub fn producers_next_to_gemms(
    thunks: &mut [Thunk],
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    streams: &StreamsTest<'_>,
) {
    for j in 0..thunks.len() {
        let Thunk::Gemm { lhs, rhs, .. } = &thunks[j] else {
            continue;
        };
        // The larger operand first; none moves when one already streams from the
        // thunk just before.
        let mut operands = [*lhs, *rhs];
        operands.sort_by_key(|&b| std::cmp::Reverse(buffers.get(b).map_or(0, |x| x.bytes)));
        for b in operands {
            let Some(buf) = buffers.get(b) else { continue };
            let Some(i) = buf.defined_at.filter(|&i| i < j) else {
                continue;
            };
            let takes = |thunks: &[Thunk]| {
                buf.last_use == Some(j)
                    && matches!(thunks[i], Thunk::Kernel { .. })
                    && streams(&thunks[i], &thunks[j], buffers, b)
            };
            if i + 1 == j && takes(thunks) {
                break;
            }
            if j - i <= MAX_GAP + 1 && takes(thunks) && may_move_past(thunks, kernels, i, j, b) {
                move_later(thunks, buffers, kernels, i, j);
                break;
            }
        }
    }
}

/// Whether the kernel at `i` may run after thunks `i + 1..j` (see
/// [`producers_next_to_gemms`]).
fn may_move_past(thunks: &[Thunk], kernels: &[Kernel], i: usize, j: usize, b: BufferId) -> bool {
    let mut named: Vec<(BufferId, bool)> = Vec::new();
    each_named(&thunks[i], kernels, &mut |x, w| named.push((x, w)));
    thunks[i + 1..j].iter().all(|t| {
        let leaf = matches!(
            t,
            Thunk::Kernel { .. } | Thunk::Gemm { .. } | Thunk::Copy { .. } | Thunk::Library { .. }
        );
        let mut apart = true;
        each_named(t, kernels, &mut |x, w| {
            let clash = named.iter().any(|&(y, wy)| y == x && (w || wy));
            apart &= x != b && !clash;
        });
        leaf && apart
    })
}

/// Moves thunk `i` to `j - 1` (thunks `i + 1..j` one earlier), renumbering the live
/// ranges: what the moved thunk defines is defined at `j - 1`, what it reads is last
/// read there at the earliest.
fn move_later(
    thunks: &mut [Thunk],
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    i: usize,
    j: usize,
) {
    let mut moved: Vec<BufferId> = Vec::new();
    each_named(&thunks[i], kernels, &mut |x, _| moved.push(x));
    thunks[i..j].rotate_left(1);
    let window = |t: usize| t != usize::MAX && (i..j).contains(&t);
    let at = |t: usize| if t == i { j - 1 } else { t - 1 };
    for (x, buf) in buffers.iter_mut().enumerate() {
        if let Some(d) = buf.defined_at.as_mut().filter(|d| window(**d)) {
            *d = at(*d);
        }
        if let Some(u) = buf.last_use.as_mut().filter(|u| window(**u)) {
            *u = at(*u);
            if moved.contains(&x) {
                *u = (*u).max(j - 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(kernel: usize, args: Vec<BufferId>) -> Thunk {
        Thunk::Kernel {
            kernel,
            args,
            blocks: 1,
            elements: 1,
        }
    }

    fn gemm(lhs: BufferId, rhs: BufferId, out: BufferId) -> Thunk {
        Thunk::Gemm {
            shape: crate::GemmShape {
                ty: codegen::kir::ScalarType::F32,
                lhs_ty: codegen::kir::ScalarType::F32,
                rhs_ty: codegen::kir::ScalarType::F32,
                out_ty: codegen::kir::ScalarType::F32,
                m: 4,
                n: 4,
                k: 4,
                lhs: (4, 1),
                rhs: (4, 1),
                out: (4, 1),
                batch: Vec::new(),
            },
            lhs,
            rhs,
            out,
        }
    }

    fn buffer(defined_at: Option<usize>, last_use: Option<usize>) -> Buffer {
        Buffer {
            name: String::new(),
            bytes: 64,
            allocation: usize::MAX,
            defined_at,
            last_use,
        }
    }

    /// Kernel 0 reads its first argument and writes its second; kernel 1 reads its
    /// first two and writes its third.
    fn kernels() -> Vec<Kernel> {
        let one = "kernel k blocks=1 (d0 = block)\n  b0 in x: f32[16]{0}\n  b1 out y: f32[16]{0}\n";
        let two = "kernel k blocks=1 (d0 = block)\n  b0 in x: f32[16]{0}\n  b1 in z: f32[16]{0}\n  b2 out y: f32[16]{0}\n";
        [one, two]
            .iter()
            .map(|t| codegen::kir::parse_kernel(t).unwrap())
            .collect()
    }

    #[test]
    fn the_producer_moves_past_independent_thunks() {
        // 0: patches p (b1) from x (b0); 1: w1 (b3) from w (b2); 2: w2 (b4) from w, w1;
        // 3: gemm p x w2 -> o (b5); 4: a reader of x.
        let mut thunks = vec![
            kernel(0, vec![0, 1]),
            kernel(0, vec![2, 3]),
            kernel(1, vec![2, 3, 4]),
            gemm(1, 4, 5),
            kernel(0, vec![0, 6]),
        ];
        let mut bufs = vec![
            buffer(None, Some(4)),
            buffer(Some(0), Some(3)),
            buffer(None, None),
            buffer(Some(1), Some(2)),
            buffer(Some(2), Some(3)),
            buffer(Some(3), Some(usize::MAX)),
            buffer(Some(4), Some(4)),
        ];
        producers_next_to_gemms(&mut thunks, &mut bufs, &kernels(), &|_, _, _, b| b == 1);
        assert_eq!(thunks[2], kernel(0, vec![0, 1]));
        assert_eq!(thunks[0], kernel(0, vec![2, 3]));
        let ranges: Vec<_> = bufs.iter().map(|b| (b.defined_at, b.last_use)).collect();
        assert_eq!(ranges[1], (Some(2), Some(3)));
        assert_eq!(ranges[3], (Some(0), Some(1)));
        assert_eq!(ranges[4], (Some(1), Some(3)));
        assert_eq!(ranges[0], (None, Some(4)));
    }

    #[test]
    fn not_past_a_thunk_touching_what_the_producer_names() {
        let kernels = kernels();
        let thunks = vec![
            kernel(0, vec![0, 1]),
            // Writes the producer's input.
            kernel(0, vec![2, 0]),
            gemm(1, 2, 5),
        ];
        let bufs = vec![
            buffer(None, Some(1)),
            buffer(Some(0), Some(2)),
            buffer(None, None),
            buffer(None, None),
            buffer(None, None),
            buffer(Some(2), Some(usize::MAX)),
        ];
        let (mut t, mut b) = (thunks.clone(), bufs.clone());
        producers_next_to_gemms(&mut t, &mut b, &kernels, &|_, _, _, _| true);
        assert_eq!(t, thunks);
        // Reads the producer's output (the operand itself).
        let thunks = vec![kernel(0, vec![0, 1]), kernel(0, vec![1, 3]), gemm(1, 3, 5)];
        let (mut t, mut b) = (thunks.clone(), bufs.clone());
        producers_next_to_gemms(&mut t, &mut b, &kernels, &|_, _, _, _| true);
        assert_eq!(t, thunks);
        // Not when the larger operand streams from the thunk just before already.
        let thunks = vec![kernel(0, vec![0, 1]), kernel(0, vec![2, 3]), gemm(1, 3, 5)];
        let mut larger = bufs.clone();
        larger[3] = Buffer {
            bytes: 128,
            ..buffer(Some(1), Some(2))
        };
        let mut t = thunks.clone();
        producers_next_to_gemms(&mut t, &mut larger, &kernels, &|_, _, _, _| true);
        assert_eq!(t, thunks);
        // Not when streaming would not take the pair.
        let thunks = vec![kernel(0, vec![0, 1]), kernel(0, vec![2, 3]), gemm(1, 3, 5)];
        let (mut t, mut b) = (thunks.clone(), bufs.clone());
        producers_next_to_gemms(&mut t, &mut b, &kernels, &|_, _, _, _| false);
        assert_eq!(t, thunks);
    }
}
