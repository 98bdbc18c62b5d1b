//! The AMX tile instructions of the `bf16` and `s8` GEMMs ([`crate::gemm_amx`]): loading
//! the tile configuration, the micro-kernels that sum `bf16` products into `f32`
//! accumulator tiles (`tdpbf16ps`) or `s8` products into `s32` ones (`tdpbssd`) over the
//! whole contraction, and releasing the tiles.
//!
//! Written as `asm!` because the AMX intrinsics and the `amx-*` target features are not
//! stable in Rust (`x86_amx_intrinsics`, rust-lang/rust#126622); the assembler takes the
//! instructions without a target feature, and the caller runs them only where CPUID says
//! the CPU has them and the kernel granted the tile data (`gemm_path::path`, `gemm_path::s8_on_tiles`).
//!
//! Tiles (palette 1, eight of 16 rows x 64 bytes): `tmm0..tmm3` accumulate a 2 x 2 block of
//! 16 x 16 `f32` results, `tmm4`/`tmm5` hold two 16 x 32 `bf16` lhs tiles (rows of the
//! result, 32 contracted elements each), `tmm6`/`tmm7` two rhs tiles in the pair layout
//! (16 rows of contracted pairs, each row 16 columns x 2 `bf16`). `tdpbf16ps` adds to each
//! `f32` accumulator the products of the pairs, computed exactly, with bf16 denormal inputs
//! read as zero and denormal results flushed to zero whatever MXCSR says (as oneDNN and so
//! XLA:CPU compute on this hardware), rounding each addition to nearest even. For `s8`
//! operands the lhs tiles hold 64 contracted elements a row and the rhs tiles rows of
//! contracted quads (16 columns x 4 `s8`); `tdpbssd` adds the four exact products of each
//! quad to the `s32` accumulator, wrapping as XLA's `s32` sums do.
#![allow(unsafe_code)]

use std::arch::asm;

/// Bytes of one tile: 16 rows of 64 bytes.
pub(crate) const TILE_BYTES: usize = 1024;

/// Rows of a tile (results of an lhs tile, contracted pairs of an rhs tile).
pub(crate) const TILE_ROWS: usize = 16;

/// Contracted elements of one tile step (32 `bf16` a row of an lhs tile).
pub(crate) const TILE_K: usize = 32;

/// Bytes of a tile row: the stride of a packed tile.
const ROW_BYTES: usize = 64;

/// The tile configuration: palette 1, all eight tiles 16 rows x 64 bytes.
#[repr(C, align(64))]
struct Config([u8; 64]);

static CONFIG: Config = {
    let mut c = [0u8; 64];
    c[0] = 1;
    let mut t = 0;
    while t < 8 {
        // Bytes per row (u16 little endian at 16 + 2t) and rows (u8 at 48 + t).
        c[16 + 2 * t] = ROW_BYTES as u8;
        c[48 + t] = TILE_ROWS as u8;
        t += 1;
    }
    Config(c)
};

/// The tile product instruction of a GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `tdpbf16ps`: pairs of `bf16` into `f32`.
    Bf16,
    /// `tdpbssd`: quads of `s8` into `s32`.
    S8,
}

/// Where one lhs tile row panel lies: the address of its first tile, the byte stride of
/// its rows and the bytes from one tile step (32 contracted elements) to the next.
#[derive(Clone, Copy)]
pub(crate) struct Lhs {
    /// First tile.
    pub(crate) at: *const u8,
    /// Bytes between the tile's rows.
    pub(crate) stride: usize,
    /// Bytes between consecutive tiles along the contraction.
    pub(crate) step: usize,
}

/// The thread's tiles, configured for the kernels until dropped (which releases them, so
/// the thread's context switches do not save 8 KiB of tile data).
pub(crate) struct Tiles(());

impl Tiles {
    /// Loads the tile configuration on this thread.
    ///
    /// # Safety
    /// The CPU has AMX-TILE and AMX-BF16 and the kernel granted this process the tile
    /// data (`gemm_path::path`, `gemm_path::s8_on_tiles`).
    pub(crate) unsafe fn configure() -> Tiles {
        let cfg = &CONFIG;
        // SAFETY: the caller's contract: `ldtilecfg` exists and may run; the 64 bytes are
        // a valid palette-1 configuration.
        unsafe { asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly)) };
        Tiles(())
    }

    /// The sums (`f32` for [`Op::Bf16`], `s32` for [`Op::S8`]) over `steps` tile steps
    /// of lhs panels `a` (one or two; two share their stride and step) times rhs panels `b`
    /// (one or two, packed: tile after tile, rows of 64 bytes), result tile `(i, j)` (16 x
    /// 16 sums) stored at `c.tile(i, j)`.
    ///
    /// # Safety
    /// Each panel holds `steps` tiles where its fields say; `a` and `b` have one or two
    /// panels; `c` has room for every result tile, which nothing else touches meanwhile;
    /// for [`Op::S8`] the CPU has AMX-INT8.
    pub(crate) unsafe fn product(&self, op: Op, a: &[Lhs], b: &[*const u8], steps: usize, c: Dest) {
        debug_assert!(steps > 0 && (1..=2).contains(&a.len()) && (1..=2).contains(&b.len()));
        // SAFETY: the caller's contract for the operands; the tiles are configured.
        unsafe {
            match (op, a.len(), b.len()) {
                (Op::Bf16, 2, 2) => bf16::two_by_two(a[0], a[1], b[0], b[1], steps),
                (Op::Bf16, 2, _) => bf16::two_by_one(a[0], a[1], b[0], steps),
                (Op::Bf16, _, 2) => bf16::one_by_two(a[0], b[0], b[1], steps),
                (Op::Bf16, _, _) => bf16::one_by_one(a[0], b[0], steps),
                (Op::S8, 2, 2) => s8::two_by_two(a[0], a[1], b[0], b[1], steps),
                (Op::S8, 2, _) => s8::two_by_one(a[0], a[1], b[0], steps),
                (Op::S8, _, 2) => s8::one_by_two(a[0], b[0], b[1], steps),
                (Op::S8, _, _) => s8::one_by_one(a[0], b[0], steps),
            }
        }
        for i in 0..a.len() {
            for j in 0..b.len() {
                // SAFETY: the caller's contract for the result tiles.
                unsafe { store(2 * i + j, c.tile(i, j), c.stride) };
            }
        }
    }
}

/// Where result tiles go: tile `(i, j)` at `at + i * down + j * right`, its rows
/// `stride` bytes apart.
#[derive(Clone, Copy)]
pub(crate) struct Dest {
    /// Sums into `tmm0` (`(0, 0)`).
    pub(crate) at: *mut u8,
    /// Bytes between the tiles of consecutive rows of tiles.
    pub(crate) down: usize,
    /// Bytes between the tiles of consecutive columns of tiles.
    pub(crate) right: usize,
    /// Bytes between a tile's rows.
    pub(crate) stride: usize,
}

impl Dest {
    /// Result tile `(i, j)`.
    fn tile(&self, i: usize, j: usize) -> *mut u8 {
        self.at.wrapping_add(i * self.down + j * self.right)
    }
}

/// Stores accumulator tile `tmm{t}` (`t < 4`) at `at`, rows `stride` bytes apart.
///
/// # Safety
/// The tiles are configured and `at` has room for 16 rows of 64 bytes `stride` apart.
unsafe fn store(t: usize, at: *mut u8, stride: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        match t {
            0 => asm!("tilestored [{} + {}*1], tmm0", in(reg) at, in(reg) stride, options(nostack)),
            1 => asm!("tilestored [{} + {}*1], tmm1", in(reg) at, in(reg) stride, options(nostack)),
            2 => asm!("tilestored [{} + {}*1], tmm2", in(reg) at, in(reg) stride, options(nostack)),
            _ => asm!("tilestored [{} + {}*1], tmm3", in(reg) at, in(reg) stride, options(nostack)),
        }
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: the tiles were configured (so AMX exists); releasing them has no
        // other effect.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}

/// Four result tiles (16 x 16 `f32`, or `s32` bits, each, row-major), tile `(i, j)` at
/// `256 * (2i + j)`: where sums go that are not stored straight into the result.
#[repr(C, align(64))]
pub(crate) struct Out(pub(crate) [f32; 4 * 256]);

impl Out {
    /// The tiles as a [`Dest`].
    pub(crate) fn dest(&mut self) -> Dest {
        Dest {
            at: self.0.as_mut_ptr().cast(),
            down: 2 * TILE_BYTES,
            right: TILE_BYTES,
            stride: ROW_BYTES,
        }
    }
}

/// The four micro-kernels of tile product instruction `$op`: sums into accumulator tiles
/// `tmm0` (`(0, 0)`), `tmm1` (`(0, 1)`), `tmm2` (`(1, 0)`) and `tmm3` (`(1, 1)`) as far as
/// the kernel's lhs and rhs panels reach.
macro_rules! kernels {
    ($op:literal) => {
        use std::arch::asm;

        use super::{Lhs, ROW_BYTES};

        /// Sums into all four accumulator tiles.
        ///
        /// # Safety
        /// As [`super::Tiles::product`]'s, the tiles configured.
        pub(super) unsafe fn two_by_two(a0: Lhs, a1: Lhs, b0: *const u8, b1: *const u8, steps: usize) {
            // SAFETY: the caller's contract: every tile loaded lies in its panel.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "2:",
                    "tileloadd tmm4, [{a0} + {as0}*1]",
                    "tileloadd tmm6, [{b0} + {bs}*1]",
                    concat!($op, " tmm0, tmm4, tmm6"),
                    "tileloadd tmm7, [{b1} + {bs}*1]",
                    concat!($op, " tmm1, tmm4, tmm7"),
                    "tileloadd tmm5, [{a1} + {as0}*1]",
                    concat!($op, " tmm2, tmm5, tmm6"),
                    concat!($op, " tmm3, tmm5, tmm7"),
                    "add {a0}, {ad0}",
                    "add {a1}, {ad0}",
                    "add {b0}, 1024",
                    "add {b1}, 1024",
                    "dec {n}",
                    "jnz 2b",
                    a0 = inout(reg) a0.at => _,
                    as0 = in(reg) a0.stride,
                    ad0 = in(reg) a0.step,
                    a1 = inout(reg) a1.at => _,
                    b0 = inout(reg) b0 => _,
                    b1 = inout(reg) b1 => _,
                    bs = in(reg) ROW_BYTES,
                    n = inout(reg) steps => _,
                    options(nostack),
                );
            }
        }

        /// Sums into `tmm0` (`(0, 0)`) and `tmm2` (`(1, 0)`).
        ///
        /// # Safety
        /// As [`two_by_two`]'s.
        pub(super) unsafe fn two_by_one(a0: Lhs, a1: Lhs, b0: *const u8, steps: usize) {
            // SAFETY: as in `two_by_two`.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm2",
                    "2:",
                    "tileloadd tmm4, [{a0} + {as0}*1]",
                    "tileloadd tmm6, [{b0} + {bs}*1]",
                    concat!($op, " tmm0, tmm4, tmm6"),
                    "tileloadd tmm5, [{a1} + {as0}*1]",
                    concat!($op, " tmm2, tmm5, tmm6"),
                    "add {a0}, {ad0}",
                    "add {a1}, {ad0}",
                    "add {b0}, 1024",
                    "dec {n}",
                    "jnz 2b",
                    a0 = inout(reg) a0.at => _,
                    as0 = in(reg) a0.stride,
                    ad0 = in(reg) a0.step,
                    a1 = inout(reg) a1.at => _,
                    b0 = inout(reg) b0 => _,
                    bs = in(reg) ROW_BYTES,
                    n = inout(reg) steps => _,
                    options(nostack),
                );
            }
        }

        /// Sums into `tmm0` (`(0, 0)`) and `tmm1` (`(0, 1)`).
        ///
        /// # Safety
        /// As [`two_by_two`]'s.
        pub(super) unsafe fn one_by_two(a0: Lhs, b0: *const u8, b1: *const u8, steps: usize) {
            // SAFETY: as in `two_by_two`.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "2:",
                    "tileloadd tmm4, [{a0} + {as0}*1]",
                    "tileloadd tmm6, [{b0} + {bs}*1]",
                    concat!($op, " tmm0, tmm4, tmm6"),
                    "tileloadd tmm7, [{b1} + {bs}*1]",
                    concat!($op, " tmm1, tmm4, tmm7"),
                    "add {a0}, {ad0}",
                    "add {b0}, 1024",
                    "add {b1}, 1024",
                    "dec {n}",
                    "jnz 2b",
                    a0 = inout(reg) a0.at => _,
                    as0 = in(reg) a0.stride,
                    ad0 = in(reg) a0.step,
                    b0 = inout(reg) b0 => _,
                    b1 = inout(reg) b1 => _,
                    bs = in(reg) ROW_BYTES,
                    n = inout(reg) steps => _,
                    options(nostack),
                );
            }
        }

        /// Sums into `tmm0` (`(0, 0)`).
        ///
        /// # Safety
        /// As [`two_by_two`]'s.
        pub(super) unsafe fn one_by_one(a0: Lhs, b0: *const u8, steps: usize) {
            // SAFETY: as in `two_by_two`.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "2:",
                    "tileloadd tmm4, [{a0} + {as0}*1]",
                    "tileloadd tmm6, [{b0} + {bs}*1]",
                    concat!($op, " tmm0, tmm4, tmm6"),
                    "add {a0}, {ad0}",
                    "add {b0}, 1024",
                    "dec {n}",
                    "jnz 2b",
                    a0 = inout(reg) a0.at => _,
                    as0 = in(reg) a0.stride,
                    ad0 = in(reg) a0.step,
                    b0 = inout(reg) b0 => _,
                    bs = in(reg) ROW_BYTES,
                    n = inout(reg) steps => _,
                    options(nostack),
                );
            }
        }
    };
}

/// The `bf16` kernels (`tdpbf16ps`).
mod bf16 {
    kernels!("tdpbf16ps");
}

/// The `s8` kernels (`tdpbssd`).
mod s8 {
    kernels!("tdpbssd");
}
