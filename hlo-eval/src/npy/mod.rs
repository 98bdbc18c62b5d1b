//! NumPy `.npy` and `.npz` files: how arrays travel in and out of `hloc run` and the
//! corpus.
//!
//! - `.npy` (format versions 1-3, little-endian or byte-order-free dtypes): `bool`,
//!   `int8`..`int64`, `uint8`..`uint64`, `float16`/`32`/`64`, `complex64`/`128`, C or
//!   Fortran order. Big-endian data is refused.
//! - `.npz`: a zip archive of `.npy` members, read with stored (uncompressed) members as
//!   `np.savez` writes them (zip64 extra fields understood); compressed members
//!   (`np.savez_compressed`) are refused with a clear error rather than pulling in a
//!   deflate implementation. Written archives are stored, with CRC-32s.
//! - Types NumPy lacks travel as bit patterns: `bf16` as `uint16`, the `f8` types as
//!   `uint8` (see [`adapt_to`], which reinterprets them for a parameter of that type);
//!   sub-byte integers are written widened to `int8`/`uint8`.

mod array;
mod zip;

pub use array::{adapt_to, read_npy, write_npy};
pub use zip::{read_npz, write_npz};

/// Why a `.npy`/`.npz` file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// Not a `.npy` file (bad magic or header).
    #[error("not a .npy file: {0}")]
    NotNpy(String),
    /// Not a zip archive, or a malformed one.
    #[error("not an .npz (zip) file: {0}")]
    NotNpz(String),
    /// A dtype hloc does not handle.
    #[error("unsupported dtype {0}")]
    Dtype(String),
    /// The data is shorter or longer than the header says.
    #[error("{0}")]
    Size(String),
    /// The array does not fit the expected element type or shape.
    #[error("{0}")]
    Mismatch(String),
}
