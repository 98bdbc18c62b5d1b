//! Reshape (factored into minimal sub-shapes, each linearized then delinearized), bitcast
//! (through the physical layouts) and bitcast-convert (a trailing dimension for a change of
//! element width).

use affine::{Expr, IndexingMap};

use super::util::{c, map, OpView};
use crate::{IndexingError, OperandIndexing};

/// Expressions for the indices of a `to`-shaped tensor in terms of the dimension variables
/// of a `from`-shaped one with the same element count, both row-major: the dimensions are
/// split into the smallest groups with equal products; inside a group the `from` index is
/// linearized and the `to` index delinearized. `None` if the element counts differ.
pub(crate) fn reshape_exprs(from: &[i64], to: &[i64]) -> Option<Vec<Expr>> {
    let mut res = vec![c(0); to.len()];
    let (mut i, mut j) = (0, 0);
    loop {
        if i < from.len() && from[i] == 1 {
            i += 1;
            continue;
        }
        if j < to.len() && to[j] == 1 {
            j += 1;
            continue;
        }
        if i == from.len() && j == to.len() {
            return Some(res);
        }
        if i == from.len() || j == to.len() {
            return None;
        }
        let (gi, gj) = (i, j);
        let (mut pf, mut pt) = (from[i], to[j]);
        i += 1;
        j += 1;
        while pf != pt {
            if pf < pt {
                pf = pf.checked_mul(*from.get(i)?)?;
                i += 1;
            } else {
                pt = pt.checked_mul(*to.get(j)?)?;
                j += 1;
            }
        }
        let mut lin = c(0);
        let mut stride = 1i64;
        for k in (gi..i).rev() {
            lin = Expr::dim(k as u32) * stride + lin;
            stride = stride.checked_mul(from[k])?;
        }
        let mut stride = 1i64;
        for t in (gj..j).rev() {
            let q = if stride == 1 {
                lin
            } else {
                lin.floor_div(c(stride))
            };
            res[t] = if t == gj { q } else { q.modulo(c(to[t])) };
            stride = stride.checked_mul(to[t])?;
        }
    }
}

fn has_zero(d: &[i64]) -> bool {
    d.contains(&0)
}

/// The map of a row-major reshape from `from` to `to`, over `from`'s indices.
fn reshape_map(v: &OpView<'_>, from: &[i64], to: &[i64]) -> Result<OperandIndexing, IndexingError> {
    if has_zero(from) || has_zero(to) {
        return Ok(OperandIndexing::map(IndexingMap::known_empty()));
    }
    let results = reshape_exprs(from, to)
        .ok_or_else(|| v.malformed("operand and result have different element counts"))?;
    let mut m = map(from, &[], results, vec![])?;
    m.simplify();
    Ok(OperandIndexing::map(m))
}

pub(crate) fn reshape_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    Ok(vec![reshape_map(v, v.out_dims(0)?, v.operand_dims(0)?)?])
}

pub(crate) fn reshape_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    Ok(vec![reshape_map(v, v.operand_dims(0)?, v.out_dims(0)?)?])
}

/// Minor-to-major order of a shape (row-major when it has no layout); `None` for a tiled
/// or sub-byte-packed layout, which is not a permutation of dimensions.
fn minor_to_major(s: &hlo::Shape) -> Option<Vec<i64>> {
    match s.layout() {
        None => Some((0..s.rank() as i64).rev().collect()),
        Some(l) if l.tiles().is_empty() && l.element_size_bits() == 0 => l
            .is_permutation_of(s.rank())
            .then(|| l.minor_to_major.clone()),
        Some(_) => None,
    }
}

/// Map from `from` logical indices to `to` logical indices for a bitcast: permute to the
/// physical order of `from`, reshape the physical shapes, permute back from `to`'s.
fn bitcast_map(
    v: &OpView<'_>,
    from: &hlo::Shape,
    to: &hlo::Shape,
) -> Result<OperandIndexing, IndexingError> {
    let (Some(mf), Some(mt)) = (minor_to_major(from), minor_to_major(to)) else {
        return Ok(OperandIndexing::undefined(
            "bitcast through a tiled or packed layout",
        ));
    };
    let bits = |s: &hlo::Shape| s.element_type().and_then(|t| t.bit_width());
    if bits(from) != bits(to) {
        return Ok(OperandIndexing::undefined(
            "bitcast changes the element width",
        ));
    }
    let (fd, td) = (from.dims(), to.dims());
    if has_zero(fd) || has_zero(td) {
        return Ok(OperandIndexing::map(IndexingMap::known_empty()));
    }
    // Physical position p holds logical dimension m2m[rank - 1 - p].
    let phys = |dims: &[i64], m2m: &[i64]| -> Vec<i64> {
        m2m.iter().rev().map(|&d| dims[d as usize]).collect()
    };
    let (pf, pt) = (phys(fd, &mf), phys(td, &mt));
    let exprs = reshape_exprs(&pf, &pt)
        .ok_or_else(|| v.malformed("operand and result have different element counts"))?;
    let rf = fd.len();
    let mut to_logical = |var: affine::Var| -> Option<Expr> {
        // Physical variable p of `from` is logical dimension m2m[rank - 1 - p].
        Some(Expr::dim(mf[rf - 1 - var.index as usize] as u32))
    };
    let mut results = vec![c(0); td.len()];
    for (p, e) in exprs.into_iter().enumerate() {
        results[mt[td.len() - 1 - p] as usize] = e.substitute(&mut to_logical);
    }
    let mut m = map(fd, &[], results, vec![])?;
    m.simplify();
    Ok(OperandIndexing::map(m))
}

pub(crate) fn bitcast_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    Ok(vec![bitcast_map(v, v.out_shape(0)?, v.operand_shape(0)?)?])
}

pub(crate) fn bitcast_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    Ok(vec![bitcast_map(v, v.operand_shape(0)?, v.out_shape(0)?)?])
}

/// bitcast-convert: the identity for equal widths; a narrower result has one more
/// (trailing) dimension, indexing the pieces of a wide element.
fn bitcast_convert_map(
    v: &OpView<'_>,
    from: &[i64],
    to: &[i64],
) -> Result<OperandIndexing, IndexingError> {
    let dims: Vec<Expr> = (0..from.len() as u32).map(Expr::dim).collect();
    let m = if from.len() == to.len() {
        map(from, &[], dims, vec![])?
    } else if from.len() == to.len() + 1 {
        map(from, &[], dims[..to.len()].to_vec(), vec![])?
    } else if from.len() + 1 == to.len() {
        let mut r = dims;
        r.push(Expr::range(0));
        map(from, &[to[to.len() - 1]], r, vec![])?
    } else {
        return Err(v.malformed("ranks differ by more than one"));
    };
    Ok(OperandIndexing::map(m))
}

pub(crate) fn bitcast_convert_out_to_in(
    v: &OpView<'_>,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    Ok(vec![bitcast_convert_map(
        v,
        v.out_dims(0)?,
        v.operand_dims(0)?,
    )?])
}

pub(crate) fn bitcast_convert_in_to_out(
    v: &OpView<'_>,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    Ok(vec![bitcast_convert_map(
        v,
        v.operand_dims(0)?,
        v.out_dims(0)?,
    )?])
}
