//! Maps between physical shapes: an instruction's logical maps composed with the layout
//! permutations of its output and operands. The physical shape of an array lists its
//! dimensions in the order of its layout, most major first (a shape without a layout is
//! row-major: physical and logical shapes agree); tiles and other layout suffixes are not
//! modeled (such a shape gives UNDEFINED maps).

use affine::{Expr, IndexingMap};
use hlo::{InstrRef, Shape};

use crate::ops::util::{c as constant, map, output_count};
use crate::{
    input_to_output, output_to_input, GroupedIndexing, IndexedMap, IndexingError, OperandIndexing,
};

/// The logical dimension at each physical position (most major first), or why the shape's
/// layout is not a plain permutation.
fn major_to_minor(shape: &Shape) -> Result<Vec<usize>, String> {
    let rank = shape.dims().len();
    let Some(layout) = shape.layout() else {
        return Ok((0..rank).collect());
    };
    if !layout.tiles().is_empty() {
        return Err("physical maps of a tiled layout: not described".to_string());
    }
    if !layout.is_permutation_of(rank) {
        return Err("the layout is not a permutation of the dimensions".to_string());
    }
    Ok(layout
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| d as usize)
        .collect())
}

/// From the physical indices of `shape` to its logical indices.
fn physical_to_logical(shape: &Shape) -> Result<Result<IndexingMap, String>, IndexingError> {
    let order = match major_to_minor(shape) {
        Ok(o) => o,
        Err(r) => return Ok(Err(r)),
    };
    let dims = shape.dims();
    let phys: Vec<i64> = order.iter().map(|&d| dims[d]).collect();
    let mut results = vec![constant(0); dims.len()];
    for (i, &d) in order.iter().enumerate() {
        results[d] = Expr::dim(i as u32);
    }
    Ok(Ok(map(&phys, &[], results, vec![])?))
}

/// From the logical indices of `shape` to its physical indices.
fn logical_to_physical(shape: &Shape) -> Result<Result<IndexingMap, String>, IndexingError> {
    let order = match major_to_minor(shape) {
        Ok(o) => o,
        Err(r) => return Ok(Err(r)),
    };
    let results = order.iter().map(|&d| Expr::dim(d as u32)).collect();
    Ok(Ok(map(shape.dims(), &[], results, vec![])?))
}

/// `before`, then every map of `set`, then `after`, normalized; UNDEFINED (with the reason)
/// when either permutation cannot be built or the set is UNDEFINED.
fn conjugate(
    before: Result<IndexingMap, String>,
    set: &OperandIndexing,
    after: Result<IndexingMap, String>,
) -> Result<OperandIndexing, IndexingError> {
    let (before, after) = match (before, after) {
        (Ok(b), Ok(a)) => (IndexedMap::plain(b), IndexedMap::plain(a)),
        (Err(r), _) | (_, Err(r)) => return Ok(OperandIndexing::undefined(r)),
    };
    if set.is_undefined() {
        return Ok(set.clone());
    }
    let mut out = OperandIndexing::none();
    for m in set.maps() {
        let mut z = before.compose(m)?.compose(&after)?;
        z.normalize()?;
        out.insert(z);
    }
    Ok(out)
}

/// The shape of output `k` of an instruction (tuple element `k`, or the array itself).
fn output_shape<'a>(instr: &'a InstrRef<'_>, k: usize) -> &'a Shape {
    let shape = instr.instr().shape();
    if shape.is_tuple() {
        &shape.tuple_shapes()[k]
    } else {
        shape
    }
}

/// [`output_to_input`] between physical shapes: each map goes from the physical indices of
/// the output to the physical indices of the operand (the logical map composed with the
/// output's physical-to-logical permutation before it and the operand's logical-to-physical
/// permutation after it), simplified.
///
/// ```
/// let module = hlo::parse_module(r#"
/// HloModule m
/// ENTRY e {
///   p = f32[2,3] parameter(0)
///   ROOT x = f32[2,3]{0,1} exponential(p)
/// }"#).unwrap();
/// let x = module.instr("x").unwrap();
/// let maps = indexing::output_to_input_physical(&x).unwrap();
/// assert_eq!(
///     indexing::format_grouped(&maps),
///     "operand id = 0\n  (d0, d1) -> (d1, d0), domain: d0 in [0, 2], d1 in [0, 1]\n"
/// );
/// ```
pub fn output_to_input_physical(
    instr: &InstrRef<'_>,
) -> Result<Vec<GroupedIndexing>, IndexingError> {
    let logical = output_to_input(instr)?;
    let c = instr.computation();
    let operands = instr.instr().operands();
    let mut out = Vec::with_capacity(logical.len());
    for (k, g) in logical.iter().enumerate() {
        let mut sets = Vec::with_capacity(g.operands.len());
        for (j, s) in g.operands.iter().enumerate() {
            let op_shape = c.instr(operands[j]).shape();
            let before = physical_to_logical(output_shape(instr, k))?;
            sets.push(conjugate(before, s, logical_to_physical(op_shape)?)?);
        }
        out.push(GroupedIndexing { operands: sets });
    }
    Ok(out)
}

/// [`input_to_output`] between physical shapes: from the physical indices of operand
/// `operand` to the physical indices of each output.
pub fn input_to_output_physical(
    instr: &InstrRef<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let logical = input_to_output(instr, operand)?;
    let op_shape = instr
        .computation()
        .instr(instr.instr().operands()[operand])
        .shape();
    let n = output_count(instr.instr());
    logical
        .iter()
        .enumerate()
        .take(n)
        .map(|(k, s)| {
            conjugate(
                physical_to_logical(op_shape)?,
                s,
                logical_to_physical(output_shape(instr, k))?,
            )
        })
        .collect()
}
