//! HLO element types as numpy dtypes: numpy's own for the standard types, `ml_dtypes`'
//! for bf16, the f8 kinds, f4e2m1fn and the narrow integers. Looked up once per process.

use std::collections::HashMap;

use hlo::ElementType;
use numpy::PyArrayDescr;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// The numpy (or ml_dtypes) type name of each element type that has one.
const NAMES: &[(ElementType, &str, &str)] = &[
    (ElementType::Pred, "numpy", "bool_"),
    (ElementType::S8, "numpy", "int8"),
    (ElementType::S16, "numpy", "int16"),
    (ElementType::S32, "numpy", "int32"),
    (ElementType::S64, "numpy", "int64"),
    (ElementType::U8, "numpy", "uint8"),
    (ElementType::U16, "numpy", "uint16"),
    (ElementType::U32, "numpy", "uint32"),
    (ElementType::U64, "numpy", "uint64"),
    (ElementType::F16, "numpy", "float16"),
    (ElementType::F32, "numpy", "float32"),
    (ElementType::F64, "numpy", "float64"),
    (ElementType::C64, "numpy", "complex64"),
    (ElementType::C128, "numpy", "complex128"),
    (ElementType::BF16, "ml_dtypes", "bfloat16"),
    (ElementType::F8E5M2, "ml_dtypes", "float8_e5m2"),
    (ElementType::F8E4M3, "ml_dtypes", "float8_e4m3"),
    (ElementType::F8E4M3FN, "ml_dtypes", "float8_e4m3fn"),
    (
        ElementType::F8E4M3B11FNUZ,
        "ml_dtypes",
        "float8_e4m3b11fnuz",
    ),
    (ElementType::F8E3M4, "ml_dtypes", "float8_e3m4"),
    (ElementType::F8E5M2FNUZ, "ml_dtypes", "float8_e5m2fnuz"),
    (ElementType::F8E4M3FNUZ, "ml_dtypes", "float8_e4m3fnuz"),
    (ElementType::F8E8M0FNU, "ml_dtypes", "float8_e8m0fnu"),
    (ElementType::F4E2M1FN, "ml_dtypes", "float4_e2m1fn"),
    (ElementType::S1, "ml_dtypes", "int1"),
    (ElementType::S2, "ml_dtypes", "int2"),
    (ElementType::S4, "ml_dtypes", "int4"),
    (ElementType::U1, "ml_dtypes", "uint1"),
    (ElementType::U2, "ml_dtypes", "uint2"),
    (ElementType::U4, "ml_dtypes", "uint4"),
];

/// The dtypes of this process, by element type.
pub struct Dtypes {
    by_type: HashMap<ElementType, Py<PyArrayDescr>>,
    /// `numpy.uint8`, `numpy.uint16` and `numpy.int8`: the storage views of the
    /// ml_dtypes types.
    pub u8: Py<PyArrayDescr>,
    /// See [`Dtypes::u8`].
    pub u16: Py<PyArrayDescr>,
    /// See [`Dtypes::u8`].
    pub i8: Py<PyArrayDescr>,
    /// `numpy.float32`: `complex64`'s storage view.
    pub f32: Py<PyArrayDescr>,
    /// `numpy.float64`: `complex128`'s storage view.
    pub f64: Py<PyArrayDescr>,
    /// `numpy.ascontiguousarray`.
    pub ascontiguousarray: Py<PyAny>,
    /// `numpy.asarray`.
    pub asarray: Py<PyAny>,
}

static DTYPES: PyOnceLock<Dtypes> = PyOnceLock::new();

/// The process's [`Dtypes`] (imports numpy and ml_dtypes on first use).
pub fn get(py: Python<'_>) -> PyResult<&Dtypes> {
    DTYPES.get_or_try_init(py, || {
        let numpy = py.import("numpy")?;
        let dtype = numpy.getattr("dtype")?;
        let ml = py.import("ml_dtypes").ok();
        let mut by_type = HashMap::new();
        for &(ty, module, name) in NAMES {
            let scalar = match module {
                "numpy" => numpy.getattr(name).ok(),
                _ => ml.as_ref().and_then(|m| m.getattr(name).ok()),
            };
            if let Some(scalar) = scalar {
                let d = dtype.call1((scalar,))?.cast_into::<PyArrayDescr>()?;
                by_type.insert(ty, d.unbind());
            }
        }
        let pick = |ty| {
            by_type
                .get(&ty)
                .map(|d: &Py<PyArrayDescr>| d.clone_ref(py))
                .ok_or_else(|| pyo3::exceptions::PyImportError::new_err("numpy lacks a dtype"))
        };
        Ok(Dtypes {
            u8: pick(ElementType::U8)?,
            u16: pick(ElementType::U16)?,
            i8: pick(ElementType::S8)?,
            f32: pick(ElementType::F32)?,
            f64: pick(ElementType::F64)?,
            ascontiguousarray: numpy.getattr("ascontiguousarray")?.unbind(),
            asarray: numpy.getattr("asarray")?.unbind(),
            by_type,
        })
    })
}

impl Dtypes {
    /// The dtype of `ty`; `None` for types without one (token, opaque, or an ml_dtypes too
    /// old to know it).
    pub fn of(&self, ty: ElementType) -> Option<&Py<PyArrayDescr>> {
        self.by_type.get(&ty)
    }
}
