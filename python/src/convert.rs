//! numpy arrays to literals (one copy, checked against the parameter) and literals to
//! numpy arrays.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use numpy::{Complex32, Complex64, Element, PyArray1, PyArrayDescr, PyArrayDescrMethods};
use numpy::{
    PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyTuple};

use crate::dtypes::Dtypes;
use crate::errors::UnsupportedError;

/// One array parameter or output: its logical dimensions, element type and dtype.
pub struct Spec {
    /// The shape as the module declares it.
    pub shape: Shape,
    /// The dimensions.
    pub dims: Vec<usize>,
    /// The element type.
    pub ty: ElementType,
    /// Its numpy dtype.
    pub dtype: Py<PyArrayDescr>,
}

impl Spec {
    /// The spec of an array shape; `what` names it in the error for a tuple or a type
    /// numpy cannot hold.
    pub fn new(py: Python<'_>, shape: &Shape, d: &Dtypes, what: &str) -> PyResult<Spec> {
        let ty = shape.element_type().filter(|_| shape.is_array());
        let dtype = ty.and_then(|t| d.of(t));
        let (Some(ty), Some(dtype)) = (ty, dtype) else {
            return Err(UnsupportedError::new_err(format!(
                "{what} has shape {}, which has no numpy array type",
                shape.to_string_without_layout()
            )));
        };
        Ok(Spec {
            shape: shape.clone(),
            dims: shape.dims().iter().map(|&x| x as usize).collect(),
            ty,
            dtype: dtype.clone_ref(py),
        })
    }

    /// The size of an array of this spec in bytes (one byte per `pred`, and per element
    /// of the sub-byte kinds, as the runtime holds them).
    pub fn bytes(&self) -> usize {
        let width = self.ty.byte_width().unwrap_or(1).max(1) as usize;
        self.dims.iter().product::<usize>() * width
    }

    /// `(shape tuple, dtype)`, as `Executable.parameters` lists it.
    pub fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let dims = PyTuple::new(py, &self.dims)?;
        PyTuple::new(
            py,
            [dims.into_any(), self.dtype.bind(py).clone().into_any()],
        )
    }

    /// `f32[2,3] (shape (2, 3), dtype float32)`: HLO's spelling and numpy's, as the
    /// given array's shape and dtype are written beside it.
    fn describe(&self, py: Python<'_>) -> String {
        format!(
            "{} (shape {}, dtype {})",
            self.shape.to_string_without_layout(),
            py_shape(&self.dims),
            self.dtype.bind(py)
        )
    }
}

/// Leaves of a shape in flattened tuple order.
pub fn leaves(shape: &Shape, out: &mut Vec<Shape>) {
    if shape.is_tuple() {
        shape.tuple_shapes().iter().for_each(|s| leaves(s, out));
    } else {
        out.push(shape.clone());
    }
}

/// The elements of `arr`, whose dtype is `T`'s, row-major.
fn elements<T: Element + Copy>(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Vec<T>> {
    let typed = arr.cast::<PyArrayDyn<T>>()?;
    let ro = typed.try_readonly()?;
    Ok(match ro.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => ro.as_array().iter().copied().collect(),
    })
}

/// `arr` viewed as `storage` (same item size), its elements row-major.
fn viewed<T: Element + Copy>(
    arr: &Bound<'_, PyUntypedArray>,
    storage: &Py<PyArrayDescr>,
) -> PyResult<Vec<T>> {
    let py = arr.py();
    let v = arr
        .call_method1("view", (storage.bind(py),))?
        .cast_into::<PyUntypedArray>()?;
    elements::<T>(&v)
}

/// A shape as Python prints a tuple: `(3, 2)`, `(4,)`, `()`.
fn py_shape(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Argument `index` as a numpy array of exactly `spec`'s dtype and shape (anything
/// numpy.asarray turns into one; a Python scalar for a rank-0 parameter is converted to the
/// dtype). A wrong dtype is a `TypeError`, a wrong shape a `ValueError`, both naming the
/// parameter, the expected and the given shape and dtype.
fn checked_array<'py>(
    index: usize,
    arg: &Bound<'py, PyAny>,
    spec: &Spec,
    d: &Dtypes,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let py = arg.py();
    let dtype = spec.dtype.bind(py);
    let arr = match arg.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => {
            let scalar = arg.is_instance_of::<PyBool>()
                || arg.is_instance_of::<PyInt>()
                || arg.is_instance_of::<PyFloat>()
                || arg.is_instance_of::<PyComplex>();
            let asarray = d.asarray.bind(py);
            let a = if scalar && spec.dims.is_empty() {
                scalar_fits(index, arg, spec)?;
                asarray.call1((arg, dtype)).map_err(|e| {
                    PyValueError::new_err(format!(
                        "argument {index}: parameter {index} is {}, got the Python scalar {} \
                         ({e})",
                        spec.describe(py),
                        py_repr(arg)
                    ))
                })?
            } else {
                asarray.call1((arg,))?
            };
            a.cast_into::<PyUntypedArray>()?
        }
    };
    let given = || format!("shape {} and dtype {}", py_shape(arr.shape()), arr.dtype());
    if !arr.dtype().is_equiv_to(dtype) {
        return Err(PyTypeError::new_err(format!(
            "argument {index}: parameter {index} is {}, got an array of {}",
            spec.describe(py),
            given()
        )));
    }
    if arr.shape() != spec.dims.as_slice() {
        return Err(PyValueError::new_err(format!(
            "argument {index}: parameter {index} is {}, got an array of {}",
            spec.describe(py),
            given()
        )));
    }
    Ok(arr)
}

/// Whether Python scalar `arg` converts to rank-0 parameter `spec`'s dtype without losing
/// its kind: numpy would truncate `1.5` to an integer parameter's `1` or turn `2` into a
/// pred's `True`, a silent wrong answer, so a float for an integer or pred parameter, an int
/// for a pred one and a complex for a real one are a `TypeError` (a bool fits any numeric
/// parameter exactly; bf16 and the f8 kinds are floats, numpy kind `V`).
fn scalar_fits(index: usize, arg: &Bound<'_, PyAny>, spec: &Spec) -> PyResult<()> {
    let py = arg.py();
    let kind = spec.dtype.bind(py).kind();
    let fits = if arg.is_instance_of::<PyBool>() {
        true
    } else if arg.is_instance_of::<PyInt>() {
        kind != b'b'
    } else if arg.is_instance_of::<PyFloat>() {
        matches!(kind, b'f' | b'c' | b'V')
    } else {
        kind == b'c'
    };
    if fits {
        return Ok(());
    }
    Err(PyTypeError::new_err(format!(
        "argument {index}: parameter {index} is {}, got the Python {} {}, which it cannot \
         hold exactly: pass an array of the parameter's dtype",
        spec.describe(py),
        arg.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default(),
        py_repr(arg)
    )))
}

/// `repr(arg)`, or `?` when it raises.
fn py_repr(arg: &Bound<'_, PyAny>) -> String {
    arg.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// Argument `index` as a literal of `spec` (checked as [`checked_array`] does; one copy):
/// the reference evaluator's arguments.
pub fn to_literal(
    index: usize,
    arg: &Bound<'_, PyAny>,
    spec: &Spec,
    d: &Dtypes,
) -> PyResult<Literal> {
    let py = arg.py();
    let arr = checked_array(index, arg, spec, d)?;
    let given = || format!("shape {} and dtype {}", py_shape(arr.shape()), arr.dtype());
    use ElementType as T;
    let data = match spec.ty {
        T::Pred => ArrayData::Pred(elements::<bool>(&arr)?),
        T::S8 => ArrayData::S8(elements::<i8>(&arr)?),
        T::S1 | T::S2 | T::S4 => ArrayData::S8(viewed::<i8>(&arr, &d.i8)?),
        T::S16 => ArrayData::S16(elements::<i16>(&arr)?),
        T::S32 => ArrayData::S32(elements::<i32>(&arr)?),
        T::S64 => ArrayData::S64(elements::<i64>(&arr)?),
        T::U8 => ArrayData::U8(elements::<u8>(&arr)?),
        T::U1 | T::U2 | T::U4 => ArrayData::U8(viewed::<u8>(&arr, &d.u8)?),
        T::U16 => ArrayData::U16(elements::<u16>(&arr)?),
        T::U32 => ArrayData::U32(elements::<u32>(&arr)?),
        T::U64 => ArrayData::U64(elements::<u64>(&arr)?),
        T::F16 | T::BF16 => ArrayData::Bits16(viewed::<u16>(&arr, &d.u16)?),
        T::F32 => ArrayData::F32(elements::<f32>(&arr)?),
        T::F64 => ArrayData::F64(elements::<f64>(&arr)?),
        T::C64 => ArrayData::C64(
            elements::<Complex32>(&arr)?
                .into_iter()
                .map(|c| [c.re, c.im])
                .collect(),
        ),
        T::C128 => ArrayData::C128(
            elements::<Complex64>(&arr)?
                .into_iter()
                .map(|c| [c.re, c.im])
                .collect(),
        ),
        _ => ArrayData::Bits8(viewed::<u8>(&arr, &d.u8)?),
    };
    ArrayLiteral::new(spec.shape.clone(), data)
        .map(Literal::Array)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "argument {index}: cannot hold {} as {}",
                given(),
                spec.describe(py)
            ))
        })
}

/// A flat numpy array of `v`, viewed as `dtype` when that is not `T`'s own.
fn flat<'py, T: Element + Copy>(
    py: Python<'py>,
    v: &[T],
    view: Option<&Py<PyArrayDescr>>,
) -> PyResult<Bound<'py, PyAny>> {
    let a = PyArray1::from_slice(py, v).into_any();
    match view {
        Some(dtype) => a.call_method1("view", (dtype.bind(py),)),
        None => Ok(a),
    }
}

/// A literal (an array of `spec`) as a numpy array of the spec's shape and dtype.
pub fn to_numpy<'py>(py: Python<'py>, lit: &Literal, spec: &Spec) -> PyResult<Bound<'py, PyAny>> {
    let a = lit.as_array().ok_or_else(|| {
        pyo3::exceptions::PyRuntimeError::new_err("internal error: an output is not an array")
    })?;
    let view = Some(&spec.dtype);
    let flat = match a.data() {
        ArrayData::Pred(v) => flat(py, v, None)?,
        ArrayData::S8(v) => flat(py, v, view)?,
        ArrayData::S16(v) => flat(py, v, None)?,
        ArrayData::S32(v) => flat(py, v, None)?,
        ArrayData::S64(v) => flat(py, v, None)?,
        ArrayData::U8(v) => flat(py, v, view)?,
        ArrayData::U16(v) => flat(py, v, None)?,
        ArrayData::U32(v) => flat(py, v, None)?,
        ArrayData::U64(v) => flat(py, v, None)?,
        ArrayData::Bits16(v) => flat(py, v, view)?,
        ArrayData::Bits8(v) => flat(py, v, view)?,
        ArrayData::F32(v) => flat(py, v, None)?,
        ArrayData::F64(v) => flat(py, v, None)?,
        ArrayData::C64(v) => {
            let c: Vec<Complex32> = v.iter().map(|&[re, im]| Complex32::new(re, im)).collect();
            flat(py, &c, None)?
        }
        ArrayData::C128(v) => {
            let c: Vec<Complex64> = v.iter().map(|&[re, im]| Complex64::new(re, im)).collect();
            flat(py, &c, None)?
        }
    };
    flat.call_method1("reshape", (PyTuple::new(py, &spec.dims)?,))
}

/// A C-contiguous argument borrowed read-only for a run, by its storage type.
pub enum Held<'py> {
    /// `pred`.
    Bool(PyReadonlyArrayDyn<'py, bool>),
    /// 8-bit integers, and the 8-bit float kinds viewed as `uint8`.
    U8(PyReadonlyArrayDyn<'py, u8>),
    /// `s8`.
    I8(PyReadonlyArrayDyn<'py, i8>),
    /// `u16`, and `f16`/`bf16` viewed as `uint16`.
    U16(PyReadonlyArrayDyn<'py, u16>),
    /// `s16`.
    I16(PyReadonlyArrayDyn<'py, i16>),
    /// `u32`.
    U32(PyReadonlyArrayDyn<'py, u32>),
    /// `s32`.
    I32(PyReadonlyArrayDyn<'py, i32>),
    /// `u64`.
    U64(PyReadonlyArrayDyn<'py, u64>),
    /// `s64`.
    I64(PyReadonlyArrayDyn<'py, i64>),
    /// `f32`, and `c64` viewed as pairs of `float32`.
    F32(PyReadonlyArrayDyn<'py, f32>),
    /// `f64`, and `c128` viewed as pairs of `float64`.
    F64(PyReadonlyArrayDyn<'py, f64>),
}

impl Held<'_> {
    /// The elements as row-major native-endian bytes (`None` if not contiguous, which
    /// [`hold`] rules out).
    pub fn bytes(&self) -> Option<&[u8]> {
        fn b<'a, T: bytemuck::NoUninit + Element>(
            a: &'a PyReadonlyArrayDyn<'_, T>,
        ) -> Option<&'a [u8]> {
            a.as_slice().ok().map(bytemuck::cast_slice)
        }
        match self {
            Held::Bool(a) => b(a),
            Held::U8(a) => b(a),
            Held::I8(a) => b(a),
            Held::U16(a) => b(a),
            Held::I16(a) => b(a),
            Held::U32(a) => b(a),
            Held::I32(a) => b(a),
            Held::U64(a) => b(a),
            Held::I64(a) => b(a),
            Held::F32(a) => b(a),
            Held::F64(a) => b(a),
        }
    }
}

/// Argument `index` checked against `spec` ([`checked_array`]) and borrowed for a run: a
/// C-contiguous array is read in place, another one is copied once into a contiguous one.
pub fn hold<'py>(
    index: usize,
    arg: &Bound<'py, PyAny>,
    spec: &Spec,
    d: &Dtypes,
) -> PyResult<Held<'py>> {
    let py = arg.py();
    let mut arr = checked_array(index, arg, spec, d)?;
    if !arr.is_c_contiguous() {
        arr = d
            .ascontiguousarray
            .bind(py)
            .call1((arr,))?
            .cast_into::<PyUntypedArray>()?;
    }
    // A view as another storage type: flattened first (a 0-d array cannot change its
    // item size).
    let view = |storage: &Py<PyArrayDescr>| -> PyResult<Bound<'py, PyUntypedArray>> {
        Ok(arr
            .call_method1("reshape", (-1,))?
            .call_method1("view", (storage.bind(py),))?
            .cast_into::<PyUntypedArray>()?)
    };
    fn ro<'py, T: Element>(a: &Bound<'py, PyUntypedArray>) -> PyResult<PyReadonlyArrayDyn<'py, T>> {
        Ok(a.cast::<PyArrayDyn<T>>()?.try_readonly()?)
    }
    use ElementType as T;
    Ok(match spec.ty {
        T::Pred => Held::Bool(ro(&arr)?),
        T::S8 => Held::I8(ro(&arr)?),
        T::U8 => Held::U8(ro(&arr)?),
        T::S16 => Held::I16(ro(&arr)?),
        T::U16 => Held::U16(ro(&arr)?),
        T::S32 => Held::I32(ro(&arr)?),
        T::U32 => Held::U32(ro(&arr)?),
        T::S64 => Held::I64(ro(&arr)?),
        T::U64 => Held::U64(ro(&arr)?),
        T::F32 => Held::F32(ro(&arr)?),
        T::F64 => Held::F64(ro(&arr)?),
        T::F16 | T::BF16 => Held::U16(ro(&view(&d.u16)?)?),
        T::C64 => Held::F32(ro(&view(&d.f32)?)?),
        T::C128 => Held::F64(ro(&view(&d.f64)?)?),
        _ => Held::U8(ro(&view(&d.u8)?)?),
    })
}

/// Row-major bytes of an output as a numpy array of `spec`'s dtype and shape (one copy).
/// Native element types are built at their shape through numpy's C API; the others (pred,
/// 16-bit and 8-bit floats, complex) as a byte array viewed as the dtype.
pub fn bytes_to_numpy<'py>(
    py: Python<'py>,
    bytes: &[u8],
    spec: &Spec,
) -> PyResult<Bound<'py, PyAny>> {
    fn typed<'py, T: Element + bytemuck::Pod>(
        py: Python<'py>,
        bytes: &[u8],
        dims: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        let flat = match bytemuck::try_cast_slice::<u8, T>(bytes) {
            Ok(s) => PyArray1::from_slice(py, s),
            // Not aligned for `T`: one copy into an aligned vector, handed to numpy.
            Err(_) => PyArray1::from_vec(py, bytemuck::pod_collect_to_vec::<u8, T>(bytes)),
        };
        Ok(flat.reshape(dims)?.into_any())
    }
    use ElementType as T;
    let dims = spec.dims.as_slice();
    match spec.ty {
        T::S8 => typed::<i8>(py, bytes, dims),
        T::U8 => typed::<u8>(py, bytes, dims),
        T::S16 => typed::<i16>(py, bytes, dims),
        T::U16 => typed::<u16>(py, bytes, dims),
        T::S32 => typed::<i32>(py, bytes, dims),
        T::U32 => typed::<u32>(py, bytes, dims),
        T::S64 => typed::<i64>(py, bytes, dims),
        T::U64 => typed::<u64>(py, bytes, dims),
        T::F32 => typed::<f32>(py, bytes, dims),
        T::F64 => typed::<f64>(py, bytes, dims),
        _ => PyArray1::from_slice(py, bytes)
            .into_any()
            .call_method1("view", (spec.dtype.bind(py),))?
            .call_method1("reshape", (PyTuple::new(py, &spec.dims)?,)),
    }
}
