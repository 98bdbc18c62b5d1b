//! Memory of the allocations during a run: borrowed (arguments, constants) or owned
//! 8-byte aligned words, with huge-page advice for large fresh allocations.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::error::BackendError;

/// Memory of one allocation during a run.
pub enum Memory<'a> {
    /// Borrowed read-only bytes (a parameter in row-major order, or a constant).
    Borrowed(&'a [u8]),
    /// Owned, writable (outputs; parameters that needed a layout change).
    Owned(Vec<u64>),
    /// A writable slice of the run's temp block (a temporary at its offset): the block
    /// outlives the run's memory, and values whose slices overlap are never live together.
    View(*mut u64, usize, PhantomData<&'a mut [u64]>),
}

/// The run's temp block, borrowed once, handing out the temporaries' slices.
#[derive(Clone, Copy)]
pub struct Block<'a>(*mut u64, usize, PhantomData<&'a mut [u64]>);

impl<'a> Block<'a> {
    /// The block of `words`.
    pub fn new(words: &'a mut [u64]) -> Block<'a> {
        Block(words.as_mut_ptr(), words.len(), PhantomData)
    }

    /// Whether `bytes` bytes at byte `offset` lie inside the block.
    pub fn holds(self, offset: u64, bytes: u64) -> bool {
        offset
            .checked_add(bytes)
            .is_some_and(|end| end <= self.1 as u64 * 8)
    }

    /// The slice of `bytes` bytes at byte `offset` (8-byte aligned), clamped to the block.
    pub fn view(self, offset: u64, bytes: u64) -> Memory<'a> {
        let at = (offset as usize / 8).min(self.1);
        let words = (bytes as usize).div_ceil(8).min(self.1 - at);
        // SAFETY: `at <= len`, so the pointer is in (or one past) the block.
        Memory::View(unsafe { self.0.add(at) }, words, PhantomData)
    }
}

impl Memory<'_> {
    /// The writable bytes (`None` for borrowed, read-only memory).
    pub(crate) fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            Memory::Borrowed(_) => None,
            Memory::Owned(v) => Some(bytemuck_bytes(v.as_mut_ptr(), v.len())),
            Memory::View(p, n, _) => Some(bytemuck_bytes(*p, *n)),
        }
    }
}

/// The bytes of `words` words at `p`, a pointer into live owned memory.
fn bytemuck_bytes<'b>(p: *mut u64, words: usize) -> &'b mut [u8] {
    // SAFETY: callers pass a pointer to `words` words of a live allocation (an owned
    // vector or the temp block); u8 accepts any bits and has no alignment needs.
    unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), words * 8) }
}

impl Memory<'_> {
    /// A pointer for reading (kernels never write through it).
    pub(crate) fn ptr(&mut self) -> *mut c_void {
        match self {
            Memory::Borrowed(b) => b.as_ptr() as *mut c_void,
            Memory::Owned(v) => v.as_mut_ptr().cast(),
            Memory::View(p, _, _) => p.cast(),
        }
    }

    /// A pointer for writing: owned memory only.
    pub(crate) fn ptr_mut(&mut self) -> Option<*mut c_void> {
        match self {
            Memory::Borrowed(_) => None,
            Memory::Owned(v) => Some(v.as_mut_ptr().cast()),
            Memory::View(p, _, _) => Some(p.cast()),
        }
    }

    /// Writes `data` at the start (owned memory only).
    pub(crate) fn write(&mut self, data: &[u8]) -> Result<(), BackendError> {
        let Some(dst) = self.bytes_mut() else {
            return Err(BackendError::Internal("write to read-only memory".into()));
        };
        if data.len() > dst.len() {
            return Err(BackendError::Internal("write past an allocation".into()));
        }
        dst[..data.len()].copy_from_slice(data);
        Ok(())
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Memory::Borrowed(b) => b.len(),
            Memory::Owned(v) => std::mem::size_of_val(v.as_slice()),
            Memory::View(_, n, _) => n * 8,
        }
    }

    /// The bytes (at least `len`).
    pub fn bytes(&self, len: usize) -> &[u8] {
        match self {
            Memory::Borrowed(b) => &b[..len.min(b.len())],
            Memory::Owned(v) => {
                let all: &[u8] = word_bytes(v);
                &all[..len.min(all.len())]
            }
            Memory::View(p, n, _) => {
                // SAFETY: a view covers `n` words of the live temp block.
                let all = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n * 8) };
                &all[..len.min(all.len())]
            }
        }
    }
}

/// The bytes of 8-byte words.
pub fn word_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding and any byte is a valid u8; the length is in bytes of
    // the same allocation.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Allocations at least this large ask the kernel for transparent huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;
/// The size of a transparent huge page on x86-64.
const HUGE_PAGE: usize = 2 << 20;

/// Zeroed owned words holding at least `bytes` bytes (at least one word, 8-byte
/// aligned).
pub fn owned_words(bytes: u64) -> Vec<u64> {
    let v = vec![0u64; (bytes as usize).div_ceil(8).max(1)];
    advise_huge_pages(&v);
    v
}

/// Asks for transparent huge pages over the 2 MiB-aligned part of a large, not yet touched
/// allocation: its first touch then faults in 2 MiB at a time instead of 4 KiB (a 64 MiB
/// output faults 32 times instead of 16384). Only advice: where the kernel declines, the
/// memory is the same.
fn advise_huge_pages(v: &[u64]) {
    let len = std::mem::size_of_val(v);
    if !cfg!(target_os = "linux") || len < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let start = (v.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
    let end = (v.as_ptr() as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside `v`'s allocation and is page-aligned;
        // MADV_HUGEPAGE changes no content and no mapping the allocator relies on.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// 8-byte aligned words holding `data` (zero-padded to a whole word).
pub fn words_of(data: &[u8]) -> Vec<u64> {
    let mut m = vec![0u64; data.len().div_ceil(8).max(1)];
    // SAFETY: `m` holds at least `data.len()` bytes; u64 accepts any bit pattern.
    let dst = unsafe { std::slice::from_raw_parts_mut(m.as_mut_ptr().cast::<u8>(), data.len()) };
    dst.copy_from_slice(data);
    m
}
