//! A loaded shared object and the kernel entry points in it. The only FFI of the crate
//! besides calling those entry points (see `exec`).
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::path::Path;

use crate::error::BackendError;

/// A kernel entry point: `void NAME(void *const *bufs, int64_t block_begin, int64_t
/// block_end)`.
pub type KernelFn = unsafe extern "C" fn(*const *mut c_void, i64, i64);

/// A loaded object with its kernels, in the order asked for.
pub struct Loaded {
    /// Kernel entry points; valid while `_lib` is alive.
    pub kernels: Vec<KernelFn>,
    /// The shared object (`None` for a module without kernels, which needs none).
    _lib: Option<libloading::Library>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Loaded({} kernels)", self.kernels.len())
    }
}

impl Loaded {
    /// What a module without kernels loads: nothing (no C compiler is run for it).
    pub fn without_kernels() -> Loaded {
        Loaded {
            kernels: Vec::new(),
            _lib: None,
        }
    }

    /// Opens `path`, checks that its `hloc_cache_key` symbol holds `key`, and resolves
    /// `names`.
    pub fn open(path: &Path, key: &str, names: &[String]) -> Result<Loaded, BackendError> {
        let err = |message: String| BackendError::Load {
            path: path.to_path_buf(),
            message,
        };
        // SAFETY: the object is one hloc compiled (or a file claiming to be one, which the
        // key check below rejects before any of its code is called); loading it runs no
        // initializers of ours beyond the C runtime's, as the generated source defines none.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| err(e.to_string()))?;
        // SAFETY: `hloc_cache_key` is a NUL-terminated `const char[]` in every object hloc
        // writes; we read at most `key.len() + 1` bytes of it, its exact length in ours.
        let stored = unsafe {
            let sym: libloading::Symbol<'_, *const u8> = lib
                .get(b"hloc_cache_key\0")
                .map_err(|e| err(format!("no cache key: {e}")))?;
            let p: *const u8 = *sym;
            if p.is_null() {
                return Err(err("null cache key".into()));
            }
            let bytes = std::slice::from_raw_parts(p, key.len() + 1);
            bytes.to_vec()
        };
        if stored[..key.len()] != *key.as_bytes() || stored[key.len()] != 0 {
            return Err(err("cache key mismatch (corrupt or foreign object)".into()));
        }
        let mut kernels = Vec::with_capacity(names.len());
        for n in names {
            let mut sym_name = n.as_bytes().to_vec();
            sym_name.push(0);
            // SAFETY: every kernel hloc emits has exactly the `KernelFn` signature; the
            // pointer stays valid while `lib` lives, which `Loaded` owns.
            let f: KernelFn = unsafe {
                *lib.get::<KernelFn>(&sym_name)
                    .map_err(|e| err(format!("kernel `{n}`: {e}")))?
            };
            kernels.push(f);
        }
        Ok(Loaded {
            kernels,
            _lib: Some(lib),
        })
    }
}
