//! Which path this process runs `bf16 x bf16` and `s8 x s8` GEMMs on, asked of the CPU
//! (CPUID) and Linux (the AMX tile data permission) once per process: AMX tiles
//! ([`crate::gemm_amx`]), AVX512-BF16 register tiles ([`crate::gemm_bf16`]) or the
//! widened `f32` GEMM ([`crate::gemm_half::Widened`]) for `bf16`; AMX tiles or the packed
//! AVX2/VNNI kernel ([`crate::gemm_s8`]) for `s8`. `HLOC_GEMM_HALF` and `HLOC_GEMM_INT`
//! force a path, so every path is testable on one machine.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// The path of the half GEMMs with two `bf16` operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// On the AMX tiles.
    Amx,
    /// On AVX512-BF16 register tiles ([`crate::gemm_bf16`]), where the CPU has no AMX.
    Avx512Bf16,
    /// Widened to `f32` ([`crate::gemm_half::Widened`]).
    Convert,
}

/// Whether this process runs `s8` GEMMs on the tiles: the CPU has AMX-INT8 and Linux grants
/// the tile data, unless `HLOC_GEMM_INT=portable` (asked once per process).
pub(crate) fn s8_on_tiles() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let forced = std::env::var("HLOC_GEMM_INT").unwrap_or_default();
        match forced.as_str() {
            "portable" => return false,
            "" | "amx" => {}
            other => log::warn!("HLOC_GEMM_INT={other} is neither `amx` nor `portable`: ignored"),
        }
        amx_int8() && amx_usable()
    })
}

/// Whether the CPU has AMX-INT8 (CPUID leaf 7, EDX bit 25).
#[cfg(target_os = "linux")]
fn amx_int8() -> bool {
    use std::arch::x86_64::__cpuid_count;
    __cpuid_count(0, 0).eax >= 7 && (__cpuid_count(7, 0).edx >> 25) & 1 == 1
}

/// Elsewhere the tiles are not asked for.
#[cfg(not(target_os = "linux"))]
fn amx_int8() -> bool {
    false
}

/// This process's path: `HLOC_GEMM_HALF=convert` forces the convert path and
/// `HLOC_GEMM_HALF=avx512` the AVX512-BF16 tiles (where the CPU has them: both paths are
/// then testable on an AMX machine); otherwise the AMX tiles where the CPU has them and
/// Linux grants them, else AVX512-BF16 where the CPU has it (asked once per process).
pub(crate) fn path() -> Path {
    static PATH: OnceLock<Path> = OnceLock::new();
    *PATH.get_or_init(|| {
        let forced = std::env::var("HLOC_GEMM_HALF").unwrap_or_default();
        let avx512 = crate::gemm_bf16_tile::available();
        match forced.as_str() {
            "convert" => return Path::Convert,
            "avx512" if avx512 => return Path::Avx512Bf16,
            "avx512" => log::warn!("HLOC_GEMM_HALF=avx512: this CPU has no AVX512-BF16"),
            "" | "amx" => {}
            other => log::warn!(
                "HLOC_GEMM_HALF={other} is none of `amx`, `avx512` and `convert`: ignored"
            ),
        }
        if forced != "avx512" && amx_usable() {
            Path::Amx
        } else {
            if forced == "amx" {
                log::warn!("HLOC_GEMM_HALF=amx: this CPU or kernel has no AMX-BF16 tiles");
            }
            if avx512 {
                Path::Avx512Bf16
            } else {
                Path::Convert
            }
        }
    })
}

/// Whether the CPU has AMX-TILE and AMX-BF16 (and AVX2, for the packing) and Linux lets
/// this process use the tile data (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`,
/// required before the first tile instruction since Linux 5.16).
#[cfg(target_os = "linux")]
fn amx_usable() -> bool {
    use std::arch::x86_64::__cpuid_count;
    const ARCH_GET_XCOMP_PERM: libc::c_long = 0x1022;
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    if __cpuid_count(0, 0).eax < 7 {
        return false;
    }
    let edx = __cpuid_count(7, 0).edx;
    let (bf16, tile) = ((edx >> 22) & 1 == 1, (edx >> 24) & 1 == 1);
    if !(bf16 && tile && std::arch::is_x86_feature_detected!("avx2")) {
        return false;
    }
    // SAFETY: `arch_prctl` with these codes changes only this process's permission to
    // use the tile state, and writes only the `u64` it is given.
    let granted = unsafe {
        let req = libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        );
        let mut perm = 0u64;
        let get = libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_GET_XCOMP_PERM,
            &mut perm as *mut u64,
        );
        req == 0 && get == 0 && perm & (1 << XFEATURE_XTILEDATA) != 0
    };
    if !granted {
        log::info!("the kernel refused the AMX tile data: bf16 GEMMs widen to f32");
    }
    granted
}

/// Elsewhere the tiles are not asked for.
#[cfg(not(target_os = "linux"))]
fn amx_usable() -> bool {
    false
}
