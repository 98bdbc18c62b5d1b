//! Compiling a CUDA module to a cubin with NVRTC (loaded at run time through cudarc), and
//! what `ptxas -v` reports of each kernel.

// The NVRTC calls are FFI.
#![allow(unsafe_code)]

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};

use crate::error::CudaError;

/// What `ptxas` reports of one compiled kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel's name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, in bytes.
    pub shared_bytes: u64,
    /// Stack frame per thread, in bytes.
    pub stack_bytes: u64,
    /// Bytes of register spill stores.
    pub spill_stores: u64,
    /// Bytes of register spill loads.
    pub spill_loads: u64,
}

/// A compiled module.
#[derive(Clone, Debug)]
pub struct Cubin {
    /// The cubin image, for `cuModuleLoadData`.
    pub image: Vec<u8>,
    /// Each kernel's resources, in the order `ptxas` reported them.
    pub kernels: Vec<KernelResources>,
    /// NVRTC's whole log (ptxas's report and any warnings).
    pub log: String,
}

/// Whether NVRTC can be loaded on this machine (cudarc panics on a missing library, so
/// this is asked before every first use).
pub fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: only tries to open the library with libloading; no symbol is called.
        let present = unsafe { sys::is_culib_present() };
        if present {
            preload_builtins();
        }
        present
    })
}

/// NVRTC opens its builtins library (`libnvrtc-builtins.so.MAJOR.MINOR`) with `dlopen` from
/// its own code, where the loader searches `LD_LIBRARY_PATH` and the system's directories but
/// not the run path of the binary that found NVRTC itself (hloc's points at the checkout's
/// `.deps/nvrtc/lib`, so no `ldconfig` is needed). Opened first from here, through that run
/// path, it stays loaded, and NVRTC's own `dlopen` of the same name finds it. Nothing happens
/// when it cannot be opened here: NVRTC then searches as before.
fn preload_builtins() {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (checked by the caller); the arguments are two out-parameters.
    if unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .is_err()
    {
        return;
    }
    let name = format!("libnvrtc-builtins.so.{major}.{minor}");
    // SAFETY: opening runs the library's initializers, as NVRTC's own opening of it would;
    // no symbol is called here.
    if let Ok(lib) = unsafe { libloading::Library::new(&name) } {
        // Kept loaded for the process's life, as NVRTC keeps it.
        std::mem::forget(lib);
    }
}

/// NVRTC's version (major, minor), once it is known to load ([`nvrtc_present`]).
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_present() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (checked above); the arguments are two out-parameters.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .ok()
        .map(|()| (major, minor))
}

/// Compiles `source` for `arch` (`sm_90`) to a cubin, with `ptxas -v`'s report per kernel.
pub fn compile_cubin(source: &str, arch: &str) -> Result<Cubin, CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let src = CString::new(source).map_err(|_| CudaError::Nvrtc("source holds a NUL".into()))?;
    let name = c"hloc.cu";
    let nv = |e: result::NvrtcError| CudaError::Nvrtc(e.to_string());
    let prog = result::create_program(&src, Some(name)).map_err(nv)?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--ptxas-options=-v".to_string(),
        "-std=c++17".to_string(),
    ];
    // SAFETY: `prog` was created above and is destroyed once, at the end.
    let compiled = unsafe { result::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(|l| log_text(&l))
        .unwrap_or_default();
    let image = compiled.map_err(|_| rejected(&log)).and_then(|()| {
        // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reports.
        unsafe {
            let mut size = 0usize;
            sys::nvrtcGetCUBINSize(prog, &mut size)
                .result()
                .map_err(nv)?;
            let mut image = vec![0u8; size];
            sys::nvrtcGetCUBIN(prog, image.as_mut_ptr().cast::<c_char>())
                .result()
                .map_err(nv)?;
            Ok(image)
        }
    });
    // SAFETY: `prog` is not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    Ok(Cubin {
        image: image?,
        kernels: ptxas_report(&log),
        log,
    })
}

fn log_text(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The error for a rejected module, naming the first kernel the log mentions.
fn rejected(log: &str) -> CudaError {
    let kernel = log
        .split(['"', '\''])
        .nth(1)
        .filter(|w| w.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .unwrap_or("?")
        .to_string();
    CudaError::Rejected {
        kernel,
        log: log.to_string(),
    }
}

/// The number before `unit` in `line` (`"23 registers"`), if any.
fn number_before(line: &str, unit: &str) -> Option<u64> {
    let at = line.find(unit)?;
    line[..at].split_whitespace().last()?.parse().ok()
}

/// Each kernel's resources from `ptxas -v`'s lines (`Function properties for NAME`, the
/// stack and spill line, `Used N registers, ... M bytes smem`).
pub(crate) fn ptxas_report(log: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(name) = line
            .split("Compiling entry function '")
            .nth(1)
            .and_then(|r| r.split('\'').next())
        {
            out.push(KernelResources {
                name: name.to_string(),
                ..Default::default()
            });
            continue;
        }
        let Some(k) = out.last_mut() else { continue };
        if line.contains("bytes stack frame") {
            k.stack_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
            k.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
            k.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
        }
        if line.contains("Used ") {
            k.registers = number_before(line, "registers").unwrap_or(0) as u32;
            k.shared_bytes = number_before(line, "bytes smem").unwrap_or(0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_lines_give_each_kernels_resources() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'k1' for 'sm_90'\n\
            ptxas info    : Function properties for k1\n\
            ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
            ptxas info    : Used 23 registers, used 1 barriers, 512 bytes smem\n\
            ptxas info    : Compiling entry function 'k2' for 'sm_90'\n\
            ptxas info    : Used 6 registers\n";
        let r = ptxas_report(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            KernelResources {
                name: "k1".into(),
                registers: 23,
                shared_bytes: 512,
                stack_bytes: 8,
                spill_stores: 4,
                spill_loads: 12,
            }
        );
        assert_eq!((r[1].name.as_str(), r[1].registers), ("k2", 6));
    }
}
