//! Where each allocation of a program lives in its one device allocation: parameters,
//! constants and outputs in regions of their own, temporaries at their buffer-assignment
//! offsets in the temp block (or in the output allocation holding them), and a scratch
//! region where a streamed GEMM's producer writes its whole left-hand side (the device
//! runs the producer and then the GEMM, not block by block).

use plan::{Program, Thunk};

/// Alignment of every region (the device's allocation alignment).
const ALIGN: u64 = 256;

fn round_up(v: u64) -> u64 {
    v.div_ceil(ALIGN) * ALIGN
}

/// Offsets of a program's allocations in its device block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLayout {
    /// Each allocation's offset in the block.
    pub offsets: Vec<u64>,
    /// The scratch region's offset (for streamed GEMMs' left-hand sides).
    pub scratch: u64,
    /// The block's size in bytes.
    pub bytes: u64,
}

/// The whole left-hand side a streamed GEMM's producer writes, in bytes (0 for others).
pub fn streamed_lhs_bytes(t: &Thunk) -> u64 {
    match t {
        Thunk::StreamedGemm {
            producer,
            block_elements,
            gemm,
            ..
        } => match (&**producer, &**gemm) {
            (Thunk::Kernel { blocks, .. }, Thunk::Gemm { shape, .. }) => {
                (*blocks).max(0) as u64
                    * (*block_elements).max(0) as u64
                    * u64::from(shape.lhs_ty.byte_width())
            }
            _ => 0,
        },
        Thunk::While { cond, body, .. } => cond
            .iter()
            .chain(body)
            .map(streamed_lhs_bytes)
            .max()
            .unwrap_or(0),
        Thunk::Conditional { branches, .. } => branches
            .iter()
            .flat_map(|(b, _)| b.iter())
            .map(streamed_lhs_bytes)
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// The layout of `p`'s allocations, or why an allocation lies outside what holds it.
pub fn device_layout(p: &Program) -> Result<DeviceLayout, String> {
    let n = p.allocations.len();
    let mut offsets = vec![0u64; n];
    let mut size = vec![0u64; n];
    let mut at = 0u64;
    for (i, a) in p.allocations.iter().enumerate() {
        if a.offset.is_none() {
            offsets[i] = at;
            size[i] = round_up(a.bytes.max(1));
            at += size[i];
        }
    }
    let temp = at;
    at += round_up(p.temp_block_bytes);
    for (i, a) in p.allocations.iter().enumerate() {
        let Some(offset) = a.offset else { continue };
        let (base, room) = match a.parent {
            Some(h) if p.allocations.get(h).is_some_and(|x| x.offset.is_none()) => {
                (offsets[h], size[h])
            }
            Some(h) => {
                return Err(format!(
                    "allocation {i} lies in allocation {h}, not a region of its own"
                ))
            }
            None => (temp, p.temp_block_bytes),
        };
        if offset.checked_add(a.bytes).is_none_or(|end| end > room) {
            return Err(format!(
                "allocation {i} ({} bytes at {offset}) lies outside the {room} bytes holding it",
                a.bytes
            ));
        }
        offsets[i] = base + offset;
    }
    let scratch = at;
    at += round_up(p.thunks.iter().map(streamed_lhs_bytes).max().unwrap_or(0));
    Ok(DeviceLayout {
        offsets,
        scratch,
        bytes: at.max(ALIGN),
    })
}
