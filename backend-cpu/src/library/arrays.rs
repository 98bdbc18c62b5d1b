//! The arrays and called computations every library routine works with: an operand's
//! copy in physical layout addressed by logical index ([`Arr`]), iteration over a shape's
//! indices, and a compiled scalar function ([`ScalarFn`]).
#![allow(unsafe_code)]

use std::ffi::c_void;

use codegen::kir::ScalarType;
use plan::{ArraySpec, Program};

use crate::error::BackendError;
use crate::loaded::KernelFn;

/// One array of a library call: its bytes (8-byte aligned) in physical order and the
/// element strides of its logical dimensions.
pub(crate) struct Arr {
    /// Logical dimensions.
    pub dims: Vec<usize>,
    /// Element stride of each logical dimension.
    pub strides: Vec<usize>,
    /// Bytes per element.
    pub width: usize,
    /// Element type.
    pub ty: ScalarType,
    /// The data (at least `count * width` bytes).
    pub words: Vec<u64>,
}

impl Arr {
    pub(crate) fn new(spec: &ArraySpec) -> Arr {
        Arr::with_words(spec, |len| vec![0u64; len])
    }

    /// An array of `spec` holding `src`'s bytes (its first `count * width`), filled
    /// without zeroing first; `None` when `src` is shorter.
    pub(crate) fn from_bytes(spec: &ArraySpec, src: &[u8]) -> Option<Arr> {
        let a = Arr::with_words(spec, |_| Vec::new());
        let n = a.count() * a.width;
        let src = src.get(..n)?;
        Some(Arr::with_words(spec, |len| {
            if let Ok(aligned) = bytemuck::try_cast_slice::<u8, u64>(src) {
                // One copy (the buffers are 8-byte aligned).
                let mut words = aligned.to_vec();
                words.resize(len, 0);
                return words;
            }
            let mut words = Vec::with_capacity(len);
            let chunks = src.chunks_exact(8);
            let tail = chunks.remainder();
            words.extend(chunks.map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_ne_bytes(w)
            }));
            if !tail.is_empty() {
                let mut w = [0u8; 8];
                w[..tail.len()].copy_from_slice(tail);
                words.push(u64::from_ne_bytes(w));
            }
            words.resize(len, 0);
            words
        }))
    }

    /// An array of `spec` whose words (`len` of them) `words` makes.
    pub(crate) fn with_words(spec: &ArraySpec, words: impl FnOnce(usize) -> Vec<u64>) -> Arr {
        let dims: Vec<usize> = spec.dims.iter().map(|&d| d.max(0) as usize).collect();
        let mut strides = vec![0usize; dims.len()];
        let mut s = 1usize;
        for &d in &spec.minor_to_major {
            if let Some(slot) = strides.get_mut(d as usize) {
                *slot = s;
                s *= dims[d as usize];
            }
        }
        let width = spec.ty.byte_width() as usize;
        let count: usize = dims.iter().product();
        Arr {
            dims,
            strides,
            width,
            ty: spec.ty,
            words: words((count * width).div_ceil(8).max(1)),
        }
    }

    /// Elements.
    pub fn count(&self) -> usize {
        self.dims.iter().product()
    }

    /// The physical element offset of a logical index.
    pub fn offset(&self, index: &[usize]) -> usize {
        index.iter().zip(&self.strides).map(|(i, s)| i * s).sum()
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: u64 has no padding; the slice covers the same allocation.
        unsafe {
            std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.words.len() * 8)
        }
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; any bit pattern is a valid u64.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.words.as_mut_ptr().cast::<u8>(),
                self.words.len() * 8,
            )
        }
    }

    /// A pointer to element `e` (physical offset), for a scalar-function kernel.
    pub fn ptr(&mut self, e: usize) -> *mut c_void {
        let off = (e * self.width).min((self.words.len() * 8).saturating_sub(self.width));
        // SAFETY: `off` lies inside the allocation (clamped above; callers pass offsets
        // of existing elements).
        unsafe { self.words.as_mut_ptr().cast::<u8>().add(off).cast() }
    }

    /// Copies element `from` of `src` (same element type) to element `to`.
    pub fn copy_elem(&mut self, to: usize, src: &Arr, from: usize) {
        let w = self.width;
        self.bytes_mut()[to * w..(to + 1) * w]
            .copy_from_slice(&src.bytes()[from * w..(from + 1) * w]);
    }

    /// Element `e` as a signed integer (integer and `pred` types; others give 0).
    pub fn int(&self, e: usize) -> i64 {
        let b = &self.bytes()[e * self.width..(e + 1) * self.width];
        match self.ty {
            ScalarType::Pred | ScalarType::U8 => i64::from(b[0]),
            ScalarType::S8 => i64::from(b[0] as i8),
            ScalarType::S16 => i64::from(i16::from_ne_bytes([b[0], b[1]])),
            ScalarType::U16 => i64::from(u16::from_ne_bytes([b[0], b[1]])),
            ScalarType::S32 => i64::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            ScalarType::U32 => i64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            ScalarType::S64 | ScalarType::U64 => {
                i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
            }
            _ => 0,
        }
    }

    /// Stores an integer (truncated to the type) at element `e`.
    pub fn set_int(&mut self, e: usize, v: i64) {
        let w = self.width;
        let bytes = v.to_ne_bytes();
        self.bytes_mut()[e * w..(e + 1) * w].copy_from_slice(&bytes[..w]);
    }
}

/// Calls every logical index of `dims` in row-major order.
pub(crate) fn for_each_index(
    dims: &[usize],
    mut f: impl FnMut(&[usize]) -> Result<(), BackendError>,
) -> Result<(), BackendError> {
    if dims.contains(&0) {
        return Ok(());
    }
    let mut idx = vec![0usize; dims.len()];
    loop {
        f(&idx)?;
        let mut d = dims.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// A compiled scalar function (a called computation): `f(ptrs)` with one pointer per
/// parameter, then one per result.
#[derive(Clone, Copy)]
pub(crate) struct ScalarFn {
    f: KernelFn,
    /// Parameters of the called computation (its pointers come first).
    pub(crate) params: usize,
    results: usize,
}

impl ScalarFn {
    pub(crate) fn new(
        p: &Program,
        kernels: &[KernelFn],
        k: usize,
    ) -> Result<ScalarFn, BackendError> {
        let f = *kernels
            .get(k)
            .ok_or_else(|| BackendError::Internal(format!("no kernel {k}")))?;
        let kernel = &p.kernels[k];
        let results = kernel
            .buffers
            .iter()
            .filter(|b| b.access != codegen::kir::Access::In)
            .count();
        Ok(ScalarFn {
            f,
            params: kernel.buffers.len() - results,
            results,
        })
    }

    /// Calls the function; `ptrs` holds a pointer per parameter and per result, each to
    /// one element of the buffer's type.
    pub(crate) fn call(&self, ptrs: &[*mut c_void]) -> Result<(), BackendError> {
        if ptrs.len() != self.params + self.results {
            return Err(BackendError::Internal(format!(
                "scalar function called with {} pointers for {} buffers",
                ptrs.len(),
                self.params + self.results
            )));
        }
        // SAFETY: `f` is a scalar-function kernel of the loaded object (one block, no
        // block variable); each pointer refers to a live element of its buffer's type
        // (callers aim them into `Arr`s of the right types, or into 8-byte scratch
        // words for results), and the kernel reads and writes exactly one element per
        // buffer.
        unsafe { (self.f)(ptrs.as_ptr(), 0, 1) };
        Ok(())
    }

    /// Calls a `pred`-returning function (a comparator or select).
    pub(crate) fn test(&self, ptrs: &mut Vec<*mut c_void>) -> Result<bool, BackendError> {
        let mut r = 0u64;
        ptrs.push((&mut r as *mut u64).cast());
        let out = self.call(ptrs);
        ptrs.pop();
        out?;
        Ok(r & 0xff != 0)
    }
}
