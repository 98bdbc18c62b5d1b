//! Shape helpers of inference: comparison and printing as the verifier does them (ignoring
//! layouts), dimension-number checks, and small constructors.

use crate::shape::{ElementType, Shape};

/// `s` without layouts (inferred shapes carry none).
pub(crate) fn strip_layouts(s: &Shape) -> Shape {
    match s {
        Shape::Array(a) => Shape::array_with(
            a.element_type(),
            a.dims().to_vec(),
            (0..a.dims().len()).map(|i| a.is_dynamic_dim(i)).collect(),
            None,
        ),
        Shape::Tuple(t) => Shape::tuple(t.iter().map(strip_layouts).collect()),
    }
}

/// The shape in messages: XLA's text without layout.
pub(crate) fn show(s: &Shape) -> String {
    s.to_string_without_layout()
}

/// Shapes are the same for the verifier when equal ignoring layouts and whether bounded
/// dimensions are dynamic (XLA's `ShapeUtil::Compatible`).
pub(crate) fn same_shape(a: &Shape, b: &Shape) -> bool {
    match (a, b) {
        (Shape::Array(x), Shape::Array(y)) => {
            x.element_type() == y.element_type() && x.dims() == y.dims()
        }
        (Shape::Tuple(x), Shape::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_shape(p, q))
        }
        _ => false,
    }
}

/// An array shape without layout.
pub(crate) fn array(et: ElementType, dims: Vec<i64>) -> Shape {
    Shape::array(et, dims)
}

/// A dimension number checked against a rank.
pub(crate) fn dim(d: i64, rank: usize, what: &str) -> Result<usize, String> {
    usize::try_from(d)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| format!("{what} {d} is out of range for rank {rank}"))
}

/// Distinct dimension numbers, each below `rank`.
pub(crate) fn distinct_dims(ds: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, String> {
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(ds.len());
    for &d in ds {
        let u = dim(d, rank, what)?;
        if std::mem::replace(&mut seen[u], true) {
            return Err(format!("{what} {d} appears twice"));
        }
        out.push(u);
    }
    Ok(out)
}

/// A permutation of `0..rank`.
pub(crate) fn permutation(ds: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, String> {
    if ds.len() != rank {
        return Err(format!(
            "{what} {{{}}} must be a permutation of the {rank} dimensions",
            join(ds)
        ));
    }
    distinct_dims(ds, rank, what)
}

/// `a,b,c`.
pub(crate) fn join(ds: &[i64]) -> String {
    ds.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A scalar of an integral type.
pub(crate) fn is_int_scalar(s: &Shape) -> bool {
    s.as_array()
        .is_some_and(|a| a.dims().is_empty() && a.element_type().is_integral())
}

/// The element type of a real or complex part.
pub(crate) fn complex_component(et: ElementType) -> ElementType {
    match et {
        ElementType::C64 => ElementType::F32,
        ElementType::C128 => ElementType::F64,
        other => other,
    }
}
