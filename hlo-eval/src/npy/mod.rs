//! NumPy `.npy` and `.npz` files: how arrays travel in and out of `hloc run` and the
//! corpus.
//!
//! - `.npy` (format versions 1-3): `bool`, `int8`..`int64`, `uint8`..`uint64`,
//!   `float16`/`32`/`64`, `complex64`/`128`, little- or big-endian (`>f4` data is
//!   byte-swapped on read), C or Fortran order. Written files are version 1.0,
//!   little-endian, C order, with the data 64-byte aligned.
//! - `.npz`: a zip archive of `.npy` members, read and written with the `zip` crate.
//!   Stored (`np.savez`) and deflated (`np.savez_compressed`) members are read, with their
//!   CRC-32s checked; written archives are stored, as `np.savez` writes them, with zip64
//!   records where a member reaches 4 GiB.
//! - Memory stays bounded on any input: an array whose header (or zip entry) declares more
//!   bytes than the size limit is [`NpyError::TooLarge`] before its buffer is allocated
//!   (the limit is [`default_size_limit`](crate::memory::default_size_limit) for
//!   [`read_npy`]/[`read_npz`], or given to [`read_npy_from`]/[`read_npz_from`], which
//!   stream from a file), and no array may yield more bytes than its header announces.
//!   The arrays of one archive share the limit. Malformed files are errors, never panics.
//! - Types NumPy lacks travel as bit patterns: `bf16` as `uint16`, the `f8` types as
//!   `uint8` (see [`adapt_to`], which reinterprets them for a parameter of that type);
//!   sub-byte integers are written widened to `int8`/`uint8`.

mod archive;
mod array;
mod header;
mod reader;

pub use archive::{read_npz, read_npz_from, write_npz, write_npz_to};
pub use array::{adapt_to, write_npy};
pub use reader::{read_npy, read_npy_from, read_npy_with_limit};

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
    /// An array (or the arrays of an archive together) would take more bytes than the
    /// size limit.
    #[error(
        "{what} needs {}, more than the limit of {}",
        crate::memory::describe_bytes(*bytes),
        crate::memory::describe_bytes(*limit)
    )]
    TooLarge {
        /// What would be allocated (`member in0.npy`, `an array of shape (2, 3) (<f4)`).
        what: String,
        /// The bytes it declares (saturated at `u64::MAX`).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Reading or writing the underlying file failed.
    #[error("{0}")]
    Io(String),
}
