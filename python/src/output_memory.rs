//! Large outputs handed to numpy without a copy: the run's output memory, moved out of the
//! run whole ([`runtime::Executable::take_output`]), becomes the memory of the numpy array
//! (its `base`); when numpy frees the array the memory goes back to the executable for
//! later runs' outputs, so neither a copy nor fresh pages cost a call.
//!
//! numpy builds the array from the owner's `__array_interface__` (the address, shape and
//! type string: numpy's documented protocol for foreign memory), so this crate needs no
//! `unsafe`. The address stays valid for the array's life: the array holds the owner as
//! its base, the owner holds the buffer and never touches it, and the buffer's memory
//! does not move.

use numpy::PyArrayDescrMethods;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::convert::Spec;
use crate::dtypes::Dtypes;

/// Outputs at least this large are handed over rather than copied. Below it a copy into
/// numpy's memory costs less than the Python-level array construction (about 2 us), and
/// malloc reuses the pages of freed small arrays anyway.
pub const HAND_OVER_MIN_BYTES: usize = 256 << 10;

/// Environment variable overriding [`HAND_OVER_MIN_BYTES`] (bytes; read once, when the
/// first executable runs): to time copies against hand-overs in one build.
pub const HAND_OVER_ENV: &str = "HLOC_PY_HAND_OVER_MIN_BYTES";

/// The size from which outputs are handed over: [`HAND_OVER_ENV`] if set to a number,
/// else [`HAND_OVER_MIN_BYTES`].
pub fn hand_over_min_bytes() -> usize {
    static MIN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| {
        std::env::var(HAND_OVER_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(HAND_OVER_MIN_BYTES)
    })
}

/// The memory of an output array: numpy's `base` of the array, holding the run's buffer
/// (given back to the executable when the array is freed).
#[pyclass(frozen, module = "hloc")]
pub struct OutputMemory {
    /// The buffer the array's data pointer points into; kept, never read here.
    _buffer: runtime::OutputBuffer,
    /// numpy's `__array_interface__` of the memory.
    interface: Py<PyDict>,
}

#[pymethods]
impl OutputMemory {
    /// numpy's array interface (version 3) of the output's bytes: its address, shape and
    /// element type; writable.
    #[getter]
    fn __array_interface__(&self, py: Python<'_>) -> Py<PyDict> {
        self.interface.clone_ref(py)
    }

    /// `OutputMemory(BYTES bytes)`.
    fn __repr__(&self, py: Python<'_>) -> String {
        let shape = self
            .interface
            .bind(py)
            .get_item("shape")
            .ok()
            .flatten()
            .map(|s| s.to_string())
            .unwrap_or_default();
        format!("OutputMemory(shape={shape})")
    }
}

/// A numpy array of `spec` over `buffer` (its row-major bytes, of the spec's size),
/// without a copy. Element types numpy has a type string for are built at their shape;
/// the others (bf16, the f8 kinds) as bytes viewed as the dtype and reshaped.
pub fn numpy_over<'py>(
    py: Python<'py>,
    mut buffer: runtime::OutputBuffer,
    spec: &Spec,
    d: &Dtypes,
) -> PyResult<Bound<'py, PyAny>> {
    let len = buffer.bytes().len();
    let address = buffer.as_mut_ptr() as usize;
    let dtype = spec.dtype.bind(py);
    let native = dtype.kind() != b'V';
    let interface = PyDict::new(py);
    if native {
        interface.set_item("shape", PyTuple::new(py, &spec.dims)?)?;
        interface.set_item("typestr", dtype.getattr("str")?)?;
    } else {
        interface.set_item("shape", (len,))?;
        interface.set_item("typestr", "|u1")?;
    }
    interface.set_item("data", (address, false))?;
    interface.set_item("version", 3)?;
    let owner = Bound::new(
        py,
        OutputMemory {
            _buffer: buffer,
            interface: interface.unbind(),
        },
    )?;
    let array = d.asarray.bind(py).call1((owner,))?;
    if native {
        Ok(array)
    } else {
        array
            .call_method1("view", (dtype,))?
            .call_method1("reshape", (PyTuple::new(py, &spec.dims)?,))
    }
}
