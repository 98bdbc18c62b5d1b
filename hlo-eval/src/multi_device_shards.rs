//! Global arrays and their per-device shards under a sharding: what a runner of a
//! partitioned module does at its edges (issue 35's `hloc run --devices N` on an annotated
//! module: `in<i>` are global, each device gets its shard by the entry parameter's
//! sharding; `out<i>` is assembled from the devices' shards by the root's sharding).
//! Shards are XLA's (`hlo::sharding::Sharding::shard`): ceil-divided, the last ones
//! zero-padded where a dimension does not divide.

use hlo::attrs::SliceDim;
use hlo::literal::ArrayLiteral;
use hlo::shape::Shape;
use hlo::sharding::{Shard, Sharding};
use hlo::Literal;

use crate::collectives::index_scalar;
use crate::control::zeros;
use crate::data::array;
use crate::error::EvalError;
use crate::movement as mv;

fn slice_dims(offsets: &[i64], sizes: &[i64]) -> Vec<SliceDim> {
    offsets
        .iter()
        .zip(sizes)
        .map(|(&o, &n)| SliceDim {
            start: o,
            limit: o + n,
            stride: 1,
        })
        .collect()
}

fn shape_like(like: &Shape, dims: Vec<i64>, what: &str) -> Result<Shape, EvalError> {
    let ty = like
        .element_type()
        .ok_or_else(|| EvalError::invalid(what, "expects an array"))?;
    Ok(Shape::array(ty, dims))
}

/// Device `d`'s shard of global array `v` under `s`, for each of `devices` devices (a
/// device holding nothing gets zeros of the shard's shape).
pub fn split_global(
    v: &Literal,
    s: &Sharding,
    devices: i64,
    what: &str,
) -> Result<Vec<Literal>, EvalError> {
    let a = array(v, what)?;
    let dims = a.shape().dims().to_vec();
    (0..devices)
        .map(|d| {
            let shard = s.shard(d, &dims).map_err(|m| EvalError::invalid(what, m))?;
            let Some(shard) = shard else {
                return Err(EvalError::invalid(
                    what,
                    format!("device {d} holds no shard of sharding {s}"),
                ));
            };
            let shape = shape_like(a.shape(), shard.shape.clone(), what)?;
            take_shard(v, &shard, &shape, what)
        })
        .collect()
}

/// The global array of `shape` assembled from every device's shard (`pieces[d]`) under
/// `s` (each tile from the first device holding it).
pub fn assemble_global(
    pieces: &[Literal],
    s: &Sharding,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let dims = shape.dims().to_vec();
    let Literal::Array(mut full) = zeros(shape, what)? else {
        return Err(EvalError::invalid(what, "expects an array"));
    };
    let mut seen: Vec<Vec<i64>> = Vec::new();
    for (d, piece) in pieces.iter().enumerate() {
        let Some(shard) = s
            .shard(d as i64, &dims)
            .map_err(|m| EvalError::invalid(what, m))?
        else {
            continue;
        };
        if seen.contains(&shard.tile) {
            continue;
        }
        seen.push(shard.tile.clone());
        full = put_shard(full, piece, &shard, shape, what)?;
    }
    Ok(Literal::Array(full))
}

/// The shard `shard` of array `v` as a value of the per-device `shape`: its valid part
/// sliced out at the shard's offsets, zero-padded past it (XLA's padded last shards).
pub(crate) fn take_shard(
    v: &Literal,
    shard: &Shard,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let a = array(v, what)?;
    if shard.valid == shard.shape && shard.shape == shape.dims() {
        return mv::slice(a, &slice_dims(&shard.offsets, &shard.shape), shape, what);
    }
    let out = zeros(shape, what)?;
    if shard.valid.contains(&0) {
        return Ok(out);
    }
    let valid = shape_like(shape, shard.valid.clone(), what)?;
    let piece = mv::slice(a, &slice_dims(&shard.offsets, &shard.valid), &valid, what)?;
    let Literal::Array(out) = out else {
        return Err(EvalError::invalid(what, "expects an array"));
    };
    let zero = (0..shard.valid.len())
        .map(|_| index_scalar(0))
        .collect::<Result<Vec<_>, _>>()?;
    let zero: Vec<_> = zero.iter().collect();
    mv::dynamic_update_slice(out, array(&piece, what)?, &zero, shape, what)
}

/// `full` (a global array of `shape`) with the valid part of `piece`, a device's value of
/// shard `shard`, written at the shard's offsets.
pub(crate) fn put_shard(
    full: ArrayLiteral,
    piece: &Literal,
    shard: &Shard,
    shape: &Shape,
    what: &str,
) -> Result<ArrayLiteral, EvalError> {
    if shard.valid.contains(&0) {
        return Ok(full);
    }
    let zero = vec![0; shard.valid.len()];
    let valid = mv::slice(
        array(piece, what)?,
        &slice_dims(&zero, &shard.valid),
        &shape_like(shape, shard.valid.clone(), what)?,
        what,
    )?;
    let at = shard
        .offsets
        .iter()
        .map(|&o| index_scalar(o))
        .collect::<Result<Vec<_>, _>>()?;
    let at: Vec<_> = at.iter().collect();
    match mv::dynamic_update_slice(full, array(&valid, what)?, &at, shape, what)? {
        Literal::Array(next) => Ok(next),
        _ => Err(EvalError::invalid(what, "expects an array")),
    }
}
