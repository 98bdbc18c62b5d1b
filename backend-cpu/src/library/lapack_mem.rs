//! The operands and results of a LAPACK call where they lie in the executor's memory, as
//! `faer` matrix views over the buffers: no copy into dense matrices and none back.
//!
//! Why: `potrf`, `trsm` and `getrf` are a few passes over their matrices (a batch of
//! 32 matrices of 256 x 256 is 8 MiB), and copying every operand into a `faer` matrix,
//! the result out of it and the result again into the executor's buffer cost as much as
//! the factorization. JAX declares the factor (`potrf`, `getrf`) and the solution
//! (`trsm`, over `B`) as aliases of an operand (`output_to_operand_aliasing`): when the
//! plan gives both the same bytes in the same layout, the routine runs in place; else
//! the operand is copied into the result first (one copy, in the result's layout).
//!
//! Views are `faer` views of any strides, so every layout is read where it lies; the
//! column-major layouts JAX asks for (`{1,2,0}`) are the unit-row-stride case `faer`'s
//! kernels are fastest on. An operand whose bytes overlap a result (other than the one
//! in-place pair), or whose address is not aligned to its element type, is copied first.
#![allow(unsafe_code)]

use faer::{MatMut, MatRef};
use plan::{ArraySpec, Program};

use super::arrays::{for_each_index, Arr};
use crate::error::BackendError;
use crate::memory::Memory;

pub(super) fn bad(what: &str) -> BackendError {
    BackendError::Internal(format!("lapack: {what}"))
}

/// Where an array's batch of matrices (or vectors, or scalars) lies in its physical
/// order: the element offset of each batch member (leading dimensions in row-major
/// order) and the element strides and extents of the trailing `inner` dimensions.
pub(super) struct Layout {
    /// Physical element offset of each batch member's first element.
    pub bases: Vec<usize>,
    /// Extent of the second-to-last inner dimension (rows; 1 for vectors and scalars).
    pub rows: usize,
    /// Extent of the last inner dimension (columns; 1 for scalars).
    pub cols: usize,
    /// Element stride between rows.
    pub rs: usize,
    /// Element stride between columns.
    pub cs: usize,
}

impl Layout {
    /// The layout of `a` with its last `inner` (0, 1 or 2) dimensions per batch member.
    pub fn new(a: &Arr, inner: usize) -> Result<Layout, BackendError> {
        let r = a.dims.len();
        if r < inner || inner > 2 {
            return Err(bad("operand rank"));
        }
        let lead = r - inner;
        let mut bases = Vec::new();
        for_each_index(&a.dims[..lead], |idx| {
            bases.push(idx.iter().zip(&a.strides).map(|(i, s)| i * s).sum());
            Ok(())
        })?;
        let (rows, rs) = if inner == 2 {
            (a.dims[lead], a.strides[lead])
        } else {
            (1, 0)
        };
        let (cols, cs) = if inner >= 1 {
            (a.dims[r - 1], a.strides[r - 1])
        } else {
            (1, 0)
        };
        Ok(Layout {
            bases,
            rows,
            cols,
            rs,
            cs,
        })
    }

    /// The layout of a result holding `batch` members of `rows x cols` (`inner` trailing
    /// dimensions); an error when the array has another shape.
    pub fn expect(
        a: &Arr,
        inner: usize,
        batch: usize,
        rows: usize,
        cols: usize,
    ) -> Result<Layout, BackendError> {
        let l = Layout::new(a, inner)?;
        if l.bases.len() != batch || l.rows != rows || l.cols != cols {
            return Err(bad("result shapes"));
        }
        Ok(l)
    }

    /// The physical element offset of element `(i, j)` of batch member `b`.
    #[inline]
    pub fn at(&self, b: usize, i: usize, j: usize) -> usize {
        self.bases[b] + i * self.rs + j * self.cs
    }
}

/// The bytes of one array of the call: a pointer, the byte length its shape needs, and
/// (for an operand copied out of the way) the copy that owns them.
struct Region {
    ptr: *mut u8,
    bytes: usize,
    /// The owned copy `ptr` points into, kept alive with the region.
    _copy: Option<Vec<u64>>,
}

impl Region {
    fn overlaps(&self, other: &Region) -> bool {
        let (a, b) = (self.ptr as usize, other.ptr as usize);
        self.bytes > 0 && other.bytes > 0 && a < b + other.bytes && b < a + self.bytes
    }
}

/// A LAPACK call's arrays in the executor's memory: every operand readable, every
/// result writable, no operand overlapping a result except the in-place pair.
pub(super) struct Operands {
    /// The shapes (dims, strides, element type) of the operands; their `words` empty.
    pub ins: Vec<Arr>,
    /// The shapes of the results; their `words` empty.
    pub outs: Vec<Arr>,
    in_regions: Vec<Region>,
    out_regions: Vec<Region>,
    /// The in-place pair (operand, result) shares its bytes and layout.
    pub in_place: bool,
    /// The operand of the pair (not readable through its own view when `in_place`).
    pair_operand: Option<usize>,
}

// SAFETY: the regions point into the executor's memory (or owned copies) that the
// borrow in `Operands::new` keeps alive and unaliased for the call; the views handed out
// below are disjoint per batch member (see `Matrices`).
unsafe impl Send for Operands {}
// SAFETY: as for `Send`: operands are only read; results are written through disjoint
// per-member views.
unsafe impl Sync for Operands {}

impl Operands {
    /// The arrays of a call, `pair` naming the operand a result may be written over
    /// (`(operand, result)`). `mem` stays borrowed for as long as the views are used.
    pub fn new(
        p: &Program,
        inputs: &[ArraySpec],
        outputs: &[ArraySpec],
        mem: &mut [Memory<'_>],
        pair: Option<(usize, usize)>,
    ) -> Result<Operands, BackendError> {
        let shape = |s: &ArraySpec| Arr::with_words(s, |_| Vec::new());
        let ins: Vec<Arr> = inputs.iter().map(shape).collect();
        let outs: Vec<Arr> = outputs.iter().map(shape).collect();
        let mut out_regions = Vec::with_capacity(outputs.len());
        for (spec, a) in outputs.iter().zip(&outs) {
            let m = &mut mem[p.buffers[spec.buffer].allocation];
            let bytes = a.count() * a.width;
            let Some(ptr) = m.ptr_mut() else {
                return Err(bad("result in read-only memory"));
            };
            if m.len() < bytes || !(ptr as usize).is_multiple_of(a.width.max(1)) {
                return Err(bad("result allocation too small or misaligned"));
            }
            let r = Region {
                ptr: ptr.cast(),
                bytes,
                _copy: None,
            };
            if out_regions.iter().any(|o: &Region| o.overlaps(&r)) {
                return Err(bad("results overlap"));
            }
            out_regions.push(r);
        }
        let mut in_place = false;
        let mut in_regions = Vec::with_capacity(inputs.len());
        for (i, (spec, a)) in inputs.iter().zip(&ins).enumerate() {
            let m = &mut mem[p.buffers[spec.buffer].allocation];
            let bytes = a.count() * a.width;
            if m.len() < bytes {
                return Err(bad("operand allocation too small"));
            }
            let ptr: *mut u8 = m.ptr().cast();
            let r = Region {
                ptr,
                bytes,
                _copy: None,
            };
            let mut clash = false;
            for (o, out) in out_regions.iter().enumerate() {
                if !r.overlaps(out) {
                    continue;
                }
                let same = pair == Some((i, o))
                    && r.ptr == out.ptr
                    && a.dims == outs[o].dims
                    && a.strides == outs[o].strides
                    && a.width == outs[o].width;
                if same {
                    in_place = true;
                } else {
                    clash = true;
                }
            }
            let misaligned = !(ptr as usize).is_multiple_of(a.width.max(1));
            if clash || misaligned {
                // Read from a copy: 8-byte aligned, and out of the results' way.
                let mut copy = vec![0u64; bytes.div_ceil(8)];
                let src = m.bytes(bytes);
                // SAFETY: `copy` holds at least `bytes` bytes; u64 accepts any bits.
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(copy.as_mut_ptr().cast::<u8>(), bytes)
                };
                dst.copy_from_slice(src);
                let ptr = copy.as_mut_ptr().cast();
                in_regions.push(Region {
                    ptr,
                    bytes,
                    _copy: Some(copy),
                });
            } else {
                in_regions.push(r);
            }
        }
        Ok(Operands {
            ins,
            outs,
            in_regions,
            out_regions,
            in_place,
            pair_operand: pair.map(|(i, _)| i),
        })
    }

    /// Operand `i`'s matrices (the last two dimensions) as `T`, read-only.
    pub fn matrices<T>(&self, i: usize) -> Result<Matrices<'_, T>, BackendError> {
        if self.in_place && self.pair_operand == Some(i) {
            // Its bytes are the result's, written meanwhile: read the result instead.
            return Err(bad("the in-place operand read through its own view"));
        }
        let (a, r) = (&self.ins[i], &self.in_regions[i]);
        Matrices::new(a, r, false)
    }

    /// Result `o`'s matrices as `T`, writable (one batch member per caller at a time).
    pub fn matrices_mut<T>(&self, o: usize) -> Result<Matrices<'_, T>, BackendError> {
        let (a, r) = (&self.outs[o], &self.out_regions[o]);
        Matrices::new(a, r, true)
    }

    /// The `T` element at physical offset 0 of operand `i` (a scalar operand).
    pub fn scalar<T: Copy>(&self, i: usize) -> Result<T, BackendError> {
        let (a, r) = (&self.ins[i], &self.in_regions[i]);
        if a.count() != 1 || a.width != std::mem::size_of::<T>() {
            return Err(bad("operand is not a scalar of the element type"));
        }
        // SAFETY: the region holds one element of `T`'s width, aligned (checked in `new`:
        // misaligned operands were copied to 8-byte aligned words).
        Ok(unsafe { r.ptr.cast::<T>().read() })
    }

    /// Writes result `o` (an integer array built in `a`, same shape) into its bytes.
    pub fn write_result(&self, o: usize, a: &Arr) -> Result<(), BackendError> {
        let r = &self.out_regions[o];
        let src = a.bytes();
        if src.len() < r.bytes {
            return Err(bad("result shapes"));
        }
        // SAFETY: the region is `r.bytes` writable bytes of result `o`, which overlaps no
        // other result and no operand still read (checked in `new`), and no view of it is
        // alive (integer results are only written here).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), r.ptr, r.bytes) };
        Ok(())
    }
}

/// The batch of matrices of one array, handing out a `faer` view per batch member.
pub(super) struct Matrices<'a, T> {
    ptr: *mut T,
    /// The array's layout (two inner dimensions).
    pub layout: Layout,
    writable: bool,
    _life: std::marker::PhantomData<&'a T>,
}

// SAFETY: a `Matrices` is a pointer into memory the `Operands` borrow keeps alive;
// read-only views may be shared across threads, and writable ones are handed out per
// batch member under the contract of `get_mut`.
unsafe impl<T: Sync> Sync for Matrices<'_, T> {}
// SAFETY: as for `Sync`.
unsafe impl<T: Send> Send for Matrices<'_, T> {}

impl<'a, T> Matrices<'a, T> {
    fn new(a: &Arr, r: &'a Region, writable: bool) -> Result<Matrices<'a, T>, BackendError> {
        if a.width != std::mem::size_of::<T>() {
            return Err(bad("element width"));
        }
        let layout = Layout::new(a, 2)?;
        Ok(Matrices {
            ptr: r.ptr.cast(),
            layout,
            writable,
            _life: std::marker::PhantomData,
        })
    }

    /// How many matrices.
    pub fn count(&self) -> usize {
        self.layout.bases.len()
    }

    /// Batch member `b`, read-only.
    pub fn get(&self, b: usize) -> MatRef<'_, T> {
        let l = &self.layout;
        // SAFETY: the member's elements `bases[b] + i * rs + j * cs` lie inside the
        // region (the array's shape fits its bytes, checked in `Operands::new`), aligned,
        // and alive for `'a`; no writable view of a read-only operand exists, and results
        // are read through `get` only by the thread that owns the member.
        unsafe {
            MatRef::from_raw_parts(
                self.ptr.add(l.bases[b]),
                l.rows,
                l.cols,
                l.rs as isize,
                l.cs as isize,
            )
        }
    }

    /// Batch member `b`, writable.
    ///
    /// # Safety
    /// At most one view of member `b` may be alive at a time (different members are
    /// disjoint: their elements differ in a leading index).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get_mut(&self, b: usize) -> Result<MatMut<'_, T>, BackendError> {
        if !self.writable {
            return Err(bad("write to an operand"));
        }
        let l = &self.layout;
        // SAFETY: as in `get`, and the caller holds the only view of member `b` of a
        // result, whose bytes no operand view overlaps (checked in `Operands::new`, but
        // for the in-place pair, whose operand is then not read through its own view).
        Ok(unsafe {
            MatMut::from_raw_parts_mut(
                self.ptr.add(l.bases[b]),
                l.rows,
                l.cols,
                l.rs as isize,
                l.cs as isize,
            )
        })
    }
}
