//! The arrays an `fft` reads and writes: an operand's or result's shape with its bytes
//! in physical order ([`Array`]), its rows in any layout ([`Rows`]), and the row-major
//! working array of a result ([`in_result`]).

use codegen::kir::ScalarType;

use crate::error::BackendError;
use crate::library::arrays::Arr;

/// An internal error of the FFT call (a malformed operand or result).
pub(super) fn bad(what: &str) -> BackendError {
    BackendError::Internal(format!("fft: {what}"))
}

/// An array of an `fft`: its logical shape and its elements' bytes in physical order.
pub(super) struct Array<B> {
    /// Logical dimensions.
    pub(super) dims: Vec<usize>,
    /// Element stride of each logical dimension.
    pub(super) strides: Vec<usize>,
    /// Element type.
    pub(super) ty: ScalarType,
    /// The elements (at least [`Array::len`] bytes).
    pub(super) bytes: B,
}

impl<B> Array<B> {
    /// The shape of `a` with `bytes` for its elements.
    pub(super) fn like(a: &Arr, bytes: B) -> Array<B> {
        Array {
            dims: a.dims.clone(),
            strides: a.strides.clone(),
            ty: a.ty,
            bytes,
        }
    }

    /// Elements.
    pub(super) fn count(&self) -> usize {
        self.dims.iter().product()
    }

    /// Bytes of the elements.
    pub(super) fn len(&self) -> usize {
        self.count() * self.ty.byte_width() as usize
    }
}

/// `a`'s elements as `E`s, in physical order.
pub(super) fn elements<'a, E: bytemuck::Pod>(a: &Array<&'a [u8]>) -> Result<&'a [E], BackendError> {
    bytemuck::try_cast_slice(&a.bytes[..a.len()]).map_err(|e| bad(&format!("operand view: {e}")))
}

/// Whether `a`'s physical order is its logical row-major order.
fn row_major<B>(a: &Array<B>) -> bool {
    let mut s = 1;
    for (d, &st) in a.dims.iter().zip(&a.strides).rev() {
        if *d > 1 && st != s {
            return false;
        }
        s *= d;
    }
    true
}

/// The rows (along the last dimension) of an array in any layout.
pub(super) struct Rows {
    /// Leading dimensions and their element strides.
    lead: Vec<(usize, usize)>,
    /// Elements per row and the stride between them.
    len: usize,
    step: usize,
}

impl Rows {
    pub(super) fn of<B>(a: &Array<B>) -> Rows {
        let rank = a.dims.len();
        Rows {
            lead: a.dims[..rank - 1]
                .iter()
                .copied()
                .zip(a.strides[..rank - 1].iter().copied())
                .collect(),
            len: a.dims[rank - 1],
            step: a.strides[rank - 1],
        }
    }

    /// The physical offset of row `i`'s first element.
    fn start(&self, mut i: usize) -> usize {
        let mut off = 0;
        for &(d, s) in self.lead.iter().rev() {
            off += (i % d) * s;
            i /= d;
        }
        off
    }

    /// Copies the first `out.len()` elements of row `i` of `data` to `out`.
    pub(super) fn read<E: Copy>(&self, data: &[E], i: usize, out: &mut [E]) {
        let at = self.start(i);
        if self.step == 1 {
            out.copy_from_slice(&data[at..at + out.len()]);
        } else {
            for (j, o) in out.iter_mut().enumerate() {
                *o = data[at + j * self.step];
            }
        }
    }
}

/// Runs `f` on a row-major working array of `y`'s shape: `y`'s own elements when its
/// layout is row-major, else a scratch array stored into `y` afterwards.
pub(super) fn in_result<E: bytemuck::Pod + Send + Sync>(
    y: Array<&mut [u8]>,
    f: impl FnOnce(&mut [E]) -> Result<(), BackendError>,
) -> Result<(), BackendError> {
    let n = y.count();
    let len = y.len();
    if row_major(&y) {
        return f(view(y.bytes, len)?);
    }
    let mut work = vec![E::zeroed(); n];
    f(&mut work)?;
    let rows = Rows::of(&y);
    let data = view(y.bytes, len)?;
    for (i, row) in work.chunks(rows.len.max(1)).enumerate() {
        let at = rows.start(i);
        for (j, v) in row.iter().enumerate() {
            data[at + j * rows.step] = *v;
        }
    }
    Ok(())
}

/// The first `len` bytes of `b` as `E`s.
fn view<E: bytemuck::Pod>(b: &mut [u8], len: usize) -> Result<&mut [E], BackendError> {
    bytemuck::try_cast_slice_mut(&mut b[..len]).map_err(|e| bad(&format!("result view: {e}")))
}
