//! Outputs handed over whole: a run's output memory moved out to the caller without a
//! copy (the Python package makes a numpy array over it), and given back to the
//! executable's spare memory when the caller drops it, so that later runs write their
//! outputs into pages already faulted in, as they do when the caller copies.

use std::sync::Weak;

use crate::data;
use crate::memory;
use crate::run::{CpuExecutable, CpuOutputs, Spare};

/// An output's memory taken out of a run ([`CpuExecutable::take_output`]): its row-major
/// bytes; dropped, the memory returns to the executable that made it (if it still
/// exists) for later runs' outputs.
pub struct CpuOutputBuffer {
    words: Vec<u64>,
    len: usize,
    spare: Weak<Spare>,
}

impl Drop for CpuOutputBuffer {
    fn drop(&mut self) {
        if let Some(spare) = self.spare.upgrade() {
            spare.give(vec![std::mem::take(&mut self.words)]);
        }
    }
}

impl plan::OwnedOutput for CpuOutputBuffer {
    fn bytes(&self) -> &[u8] {
        &memory::word_bytes(&self.words)[..self.len]
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast::<u8>()
    }
}

impl CpuExecutable {
    /// Output `k` of a run moved out of `raw` without a copy, when its layout is
    /// row-major (the bytes [`CpuExecutable::output_bytes`] would borrow); `None` for
    /// another layout, an output already taken, or past the last output. The output's
    /// memory is exclusively its own: the run moved each output allocation out whole and
    /// copied any output that shares one.
    pub fn take_output(&self, raw: &mut CpuOutputs, k: usize) -> Option<CpuOutputBuffer> {
        let p = self.program();
        let spec = p.outputs.get(k)?;
        if spec.dims.len() > 1 && !data::is_row_major(&spec.minor_to_major) {
            return None;
        }
        let words = raw.bufs.get_mut(k)?;
        let len = p.buffers[spec.buffer].bytes as usize;
        if words.is_empty() || std::mem::size_of_val(words.as_slice()) < len {
            return None;
        }
        Some(CpuOutputBuffer {
            words: std::mem::take(words),
            len,
            spare: raw.spare.clone(),
        })
    }
}
