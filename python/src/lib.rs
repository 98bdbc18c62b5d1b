//! # hloc-python — the extension module `hloc._hloc` of the Python package `hloc`
//!
//! The native half of `import hloc` (PyO3, abi3 for Python >= 3.10, built into a wheel by
//! maturin; the pure-Python half is `python/hloc/`): compiling HLO text with
//! [`runtime::compile`] into an [`executable::Executable`] called on numpy arrays, the
//! reference evaluator, parsing and verifying ([`module::Module`]), and the analyses of
//! `hloc indexing`, `hloc fuse` and `hloc map simplify`. The GIL is released while
//! compiling and running. Errors become the package's exceptions ([`errors`]).

use pyo3::prelude::*;

mod analysis;
mod convert;
mod dtypes;
mod errors;
mod executable;
mod module;
mod output_memory;

/// The extension module `hloc._hloc`.
#[pymodule]
fn _hloc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("HloError", py.get_type::<errors::HloError>())?;
    m.add(
        "UnsupportedError",
        py.get_type::<errors::UnsupportedError>(),
    )?;
    // How the extension was compiled: "release" (what `pip install ./python` builds) or
    // "debug" (a `--profile dev` build, e.g. tools/test_python.sh's default, whose Rust
    // parts of a run are several times slower: never time one against XLA).
    m.add(
        "BUILD_PROFILE",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    )?;
    m.add_class::<executable::Executable>()?;
    m.add_class::<module::Module>()?;
    m.add_class::<output_memory::OutputMemory>()?;
    m.add_function(wrap_pyfunction!(executable::compile, m)?)?;
    m.add_function(wrap_pyfunction!(executable::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(module::parse, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::indexing_text_of, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::fuse, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::simplify_map, m)?)?;
    Ok(())
}
