//! Custom calls the runtime's library runs: which targets are library routines, and the
//! LAPACK routine and options of a `lapack_?xxxx_ffi` call. Pure functions of an
//! instruction, shared by the program builder and its library-call selection.

use crate::LapackCall;

/// Whether a custom call's target is a routine of the runtime's library.
pub(crate) fn library_target(target: Option<&str>) -> bool {
    target.is_some_and(|t| {
        t == "TopK"
            || (t.starts_with("lapack_")
                && [
                    "potrf_ffi",
                    "trsm_ffi",
                    "getrf_ffi",
                    "geqrf_ffi",
                    "orgqr_ffi",
                    "syevd_ffi",
                    "gesdd_ffi",
                ]
                .iter()
                .any(|s| t.ends_with(s)))
    })
}

/// The integer fields of a custom call's MLIR-style `backend_config={uplo = 76 : ui8}`.
pub(crate) fn config_char(
    instr: &hlo::Instruction,
    key: &str,
    default: char,
) -> Result<char, String> {
    let Some(text) = instr.backend_config() else {
        return Ok(default);
    };
    let text = text.as_str();
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let found = inner.split(',').find_map(|entry| {
        let (k, rest) = entry.split_once('=')?;
        if k.trim() != key {
            return None;
        }
        rest.split(':').next()?.trim().parse::<u8>().ok()
    });
    Ok(found.map_or(default, char::from))
}

/// The LAPACK routine of a `lapack_?xxxx_ffi` custom call (real types only).
pub(crate) fn lapack_call(instr: &hlo::Instruction, target: &str) -> Result<LapackCall, String> {
    if !(target.starts_with("lapack_s") || target.starts_with("lapack_d")) {
        return Err(format!("custom-call target {target} (complex LAPACK)"));
    }
    let pick = |key: &str, default: char, yes: char, no: char| -> Result<bool, String> {
        match config_char(instr, key, default)? {
            c if c == yes => Ok(true),
            c if c == no => Ok(false),
            c => Err(format!("{target}: {key}={c}")),
        }
    };
    if target.ends_with("potrf_ffi") {
        return Ok(LapackCall::Potrf {
            lower: pick("uplo", 'L', 'L', 'U')?,
        });
    }
    if target.ends_with("trsm_ffi") {
        let transpose = match config_char(instr, "trans_x", 'N')? {
            'N' => false,
            'T' | 'C' => true,
            c => return Err(format!("{target}: trans_x={c}")),
        };
        return Ok(LapackCall::Trsm {
            left: pick("side", 'L', 'L', 'R')?,
            lower: pick("uplo", 'L', 'L', 'U')?,
            transpose,
            unit_diagonal: pick("diag", 'N', 'U', 'N')?,
        });
    }
    if target.ends_with("getrf_ffi") {
        return Ok(LapackCall::Getrf);
    }
    if target.ends_with("geqrf_ffi") {
        return Ok(LapackCall::Geqrf);
    }
    if target.ends_with("orgqr_ffi") {
        return Ok(LapackCall::Orgqr);
    }
    if target.ends_with("syevd_ffi") {
        return Ok(LapackCall::Syevd {
            lower: pick("uplo", 'L', 'L', 'U')?,
        });
    }
    if target.ends_with("gesdd_ffi") {
        return match config_char(instr, "mode", 'A')? {
            'A' | 'S' | 'N' => Ok(LapackCall::Gesdd),
            c => Err(format!("{target}: mode={c}")),
        };
    }
    Err(format!("custom-call target {target}"))
}
