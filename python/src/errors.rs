//! The package's exceptions and the mapping of hloc's errors onto Python's.
//!
//! `hloc.HloError` (a `ValueError`) carries `.line` and `.column` (1-based, `None` when
//! unknown) and renders the caret text in `str()`; `hloc.UnsupportedError` (a
//! `NotImplementedError`) names the op; a size over the memory limit is a `MemoryError`;
//! anything else a `RuntimeError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    hloc,
    HloError,
    PyValueError,
    "A parse or verify error in HLO text (or an indexing map): `.line` and `.column` are \
     1-based (None when unknown); `str()` holds the message with the offending line and a \
     caret under the column."
);
create_exception!(
    hloc,
    UnsupportedError,
    PyNotImplementedError,
    "An operation (or form of one) that hloc cannot compile or evaluate; the message names \
     the op and the instruction."
);

/// A `HloError` with `.line` and `.column` set.
pub fn hlo_error(message: String, line: Option<usize>, column: Option<usize>) -> PyErr {
    Python::attach(|py| {
        let err = HloError::new_err(message);
        let value = err.value(py);
        // Setting attributes on a fresh exception instance cannot fail in practice; if it
        // does, the error still carries its message.
        let _ = value.setattr("line", line);
        let _ = value.setattr("column", column);
        err
    })
}

/// A parse error as `HloError`.
pub fn parse_error(e: &hlo::ParseError) -> PyErr {
    hlo_error(e.to_string(), Some(e.line()), Some(e.column()))
}

/// Verifier errors as one `HloError` (all of them, one per line; the first's position).
pub fn verify_error(errors: &[hlo::verifier::VerifyError], file: &str) -> PyErr {
    let text: Vec<String> = errors.iter().map(|e| e.render(file)).collect();
    let first = errors.first();
    hlo_error(
        text.join("\n"),
        first.and_then(|e| e.line),
        first.and_then(|e| e.column),
    )
}

/// A compile or run error of the CPU runtime.
pub fn runtime_error(e: runtime::RuntimeError, limit_hint: &str) -> PyErr {
    use runtime::RuntimeError as R;
    match e {
        R::TooLarge { .. } => PyMemoryError::new_err(format!("{e}; {limit_hint}")),
        R::Codegen(codegen_error) => codegen_err(codegen_error),
        R::Cuda(backend_cuda_error) => cuda_err(backend_cuda_error),
        R::Backend(runtime::BackendError::Argument { .. }) => PyValueError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// `target=GPU` without NVRTC: a `RuntimeError` saying how to get it.
pub fn no_nvrtc(target: &str) -> PyErr {
    PyRuntimeError::new_err(format!(
        "target={target:?} compiles the kernels with NVRTC, which was not found \
         (libnvrtc.so.13): install it (`pip install nvidia-cuda-nvrtc==13.0.88`, or run \
         tools/setup.sh in hloc's checkout, which puts it in .deps/nvrtc/lib) and put the \
         directory holding libnvrtc.so.13 on LD_LIBRARY_PATH before starting Python"
    ))
}

/// A code generation error: `UnsupportedError` for an unsupported op.
fn codegen_err(e: CodegenError) -> PyErr {
    match e {
        CodegenError::Unsupported { .. } => UnsupportedError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

use codegen::CodegenError;

/// A CUDA printing or NVRTC error: `UnsupportedError` for what the CUDA printer cannot
/// print (complex values, ...), else `RuntimeError`.
fn cuda_err(e: runtime::CudaError) -> PyErr {
    match e {
        runtime::CudaError::Unsupported { .. } => UnsupportedError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// An error of the reference evaluator.
pub fn eval_error(e: hlo_eval::EvalError, limit_hint: &str) -> PyErr {
    use hlo_eval::EvalError as E;
    match e {
        E::TooLarge { .. } => PyMemoryError::new_err(format!("{e}; {limit_hint}")),
        E::Unsupported { .. } => UnsupportedError::new_err(e.to_string()),
        E::ArgumentCount { .. } => pyo3::exceptions::PyTypeError::new_err(e.to_string()),
        E::ArgumentMismatch { .. } => PyValueError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}
