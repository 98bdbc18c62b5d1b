//! Coalescing of a kernel's reads: a thread-to-output map (from the caller, e.g. a loop
//! emitter's linear mapping) composed with an operand map and the operand's physical layout
//! gives each thread's byte addresses. For the first warp, every point of the range
//! variables (one loop iteration) is one load by all threads: it costs one transaction per
//! distinct 128-byte segment touched, against the ideal of the distinct bytes read packed
//! into segments. Exact by enumeration, bounded by a limit.
//!
//! A runtime variable (a dynamic-slice start, a gather index) whose value is the same for
//! every thread of the warp at each load (the warp's threads read one index element) only
//! moves the whole warp's addresses by one offset: the access pattern is the warp's own,
//! so it is counted with the variable at 0, or at the bound of its range nearest 0 (a
//! start index of 0: the slice at its first position), and the report names the values
//! used. A runtime variable that differs between the
//! warp's threads makes the addresses data-dependent: not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use affine::enumerate::{box_size, for_each_in_box};
use affine::{Expr, IndexingMap, Interval, MapForm, Point};
use hlo::Shape;

use crate::{IndexedMap, IndexingError};

/// Threads per warp.
pub const WARP: i64 = 32;
/// Bytes per memory transaction segment.
pub const SEGMENT: i64 = 128;

/// Transactions of the first warp for one operand map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coalescing {
    /// Counted exactly.
    Counted {
        /// Loads (points of the range variables with at least one active thread).
        loads: u64,
        /// 128-byte segments touched, summed over loads.
        transactions: u64,
        /// Segments needed if each load's distinct bytes were contiguous and aligned.
        ideal: u64,
        /// The value each runtime variable was counted at (`rt0`, `rt1`, ...; empty when
        /// the map has none): each is the same for the whole warp, see the module comment.
        runtime_at: Vec<i64>,
    },
    /// Not counted: more points than the limit.
    TooLarge {
        /// Points to enumerate.
        points: u128,
    },
    /// Not counted: addresses depend on runtime values.
    RuntimeDependent,
    /// Not counted: UNDEFINED map or a layout that is not a dimension permutation.
    Unknown(String),
}

impl Coalescing {
    /// True when counted and equal to the ideal.
    pub fn is_coalesced(&self) -> bool {
        matches!(self, Coalescing::Counted { transactions, ideal, .. } if transactions == ideal)
    }
}

impl fmt::Display for Coalescing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Coalescing::Counted {
                loads,
                transactions,
                ideal,
                runtime_at,
            } => {
                write!(
                    f,
                    "{} loads, {transactions} transactions, ideal {ideal}: {}",
                    loads,
                    if transactions == ideal {
                        "coalesced"
                    } else {
                        "not coalesced"
                    }
                )?;
                if !runtime_at.is_empty() {
                    let at: Vec<String> = runtime_at
                        .iter()
                        .enumerate()
                        .map(|(k, v)| format!("rt{k} = {v}"))
                        .collect();
                    write!(f, " (warp-uniform {})", at.join(", "))?;
                }
                Ok(())
            }
            Coalescing::TooLarge { points } => {
                write!(
                    f,
                    "not counted: {points} points to enumerate exceed the limit"
                )
            }
            Coalescing::RuntimeDependent => {
                write!(f, "not counted: addresses depend on runtime values")
            }
            Coalescing::Unknown(r) => write!(f, "not counted: {r}"),
        }
    }
}

/// The loop emitter's linear thread mapping: thread `d0` computes output element `d0` in
/// row-major order.
pub fn linear_thread_map(out_dims: &[i64]) -> Result<IndexingMap, IndexingError> {
    let n: i64 = out_dims.iter().product();
    let results = if out_dims.is_empty() {
        vec![]
    } else {
        crate::ops::reshape::reshape_exprs(&[n], out_dims).ok_or(IndexingError::Map(
            affine::MapError::Special("output too large"),
        ))?
    };
    let mut m = IndexingMap::new(
        vec![Interval::new(0, n - 1)],
        vec![],
        vec![],
        results,
        vec![],
    )?;
    m.simplify();
    Ok(m)
}

/// The first warp of a GPU emitter's thread map in XLA's form `(th_x, th_y, th_z, bl_x,
/// bl_y, bl_z)[chunk_id, unroll_id] -> (output index)`: a map `(lane, unroll_id) -> (output
/// index)` of block 0's threads 0–31 and the first chunk. The unroll step becomes a
/// dimension, so a thread's unrolled elements count in the same load as its neighbours'
/// (they are one vector access, or consecutive accesses the same cache lines serve), as
/// XLA's coalescing analysis counts them.
pub fn first_warp_of_launch(thread_map: &IndexingMap) -> Result<IndexingMap, IndexingError> {
    if thread_map.dims().len() != 6 || thread_map.ranges().len() != 2 {
        return Err(IndexingError::Map(affine::MapError::Special(
            "a thread map has 6 dimensions and 2 range variables",
        )));
    }
    let lanes = thread_map.dims()[0].intersect(Interval::new(0, WARP - 1));
    let unroll = thread_map.ranges()[1];
    let mut bind = |v: affine::Var| {
        Some(match (v.kind, v.index) {
            (affine::VarKind::Dim, 0) => Expr::dim(0),
            (affine::VarKind::Range, 1) => Expr::dim(1),
            _ => Expr::constant(0),
        })
    };
    let results = thread_map
        .results()
        .iter()
        .map(|e| e.substitute(&mut bind))
        .collect();
    let constraints = thread_map
        .constraints()
        .iter()
        .map(|c| (c.expr.substitute(&mut bind), c.interval))
        .collect();
    let mut m = IndexingMap::new(vec![lanes, unroll], vec![], vec![], results, constraints)?;
    m.simplify();
    Ok(m)
}

/// Strides (in elements) of each logical dimension under the shape's layout.
fn strides(shape: &Shape) -> Option<Vec<i64>> {
    let rank = shape.rank();
    let m2m: Vec<i64> = match shape.layout() {
        None => (0..rank as i64).rev().collect(),
        Some(l) if l.tiles().is_empty() && l.is_permutation_of(rank) => l.minor_to_major.clone(),
        Some(_) => return None,
    };
    let mut s = vec![0i64; rank];
    let mut acc = 1i64;
    for &d in &m2m {
        s[d as usize] = acc;
        acc = acc.checked_mul(shape.dims()[d as usize])?;
    }
    Some(s)
}

/// Counts the first warp's transactions for the operand access `map` (output to operand),
/// with threads mapped to outputs by `thread_map`: its first dimension is the thread id
/// (limited to the first 32); further dimensions (the unroll step of
/// [`first_warp_of_launch`]) are enumerated within each load.
pub fn first_warp(
    thread_map: &IndexingMap,
    map: &IndexedMap,
    operand: &Shape,
    limit: u128,
) -> Result<Coalescing, IndexingError> {
    if map.map.form() == MapForm::Undefined {
        return Ok(Coalescing::Unknown("unknown indexing".into()));
    }
    let Some(strides) = strides(operand) else {
        return Ok(Coalescing::Unknown(
            "tiled or non-permutation layout".into(),
        ));
    };
    let bytes = i64::from(
        operand
            .element_type()
            .and_then(|t| t.byte_width())
            .unwrap_or(1),
    );
    let (access, runtime_at) = if map.map.runtimes().is_empty() {
        (map.map.clone(), Vec::new())
    } else {
        match at_warp_uniform_runtimes(thread_map, map)? {
            Some(fixed) => fixed,
            None => return Ok(Coalescing::RuntimeDependent),
        }
    };
    let mut m = thread_map.compose(&access)?;
    m.add_constraint(Expr::dim(0), Interval::new(0, WARP - 1));
    m.simplify();
    if m.form() == MapForm::KnownEmpty {
        return Ok(Coalescing::Counted {
            loads: 0,
            transactions: 0,
            ideal: 0,
            runtime_at,
        });
    }
    if !m.runtimes().is_empty() {
        return Ok(Coalescing::RuntimeDependent);
    }
    let nd = m.dims().len();
    let bounds: Vec<Interval> = m.dims().iter().chain(m.ranges()).copied().collect();
    let points = box_size(&bounds);
    if points > limit {
        return Ok(Coalescing::TooLarge { points });
    }
    let mut loads: BTreeMap<Vec<i64>, BTreeSet<i64>> = BTreeMap::new();
    let mut err = None;
    for_each_in_box(&bounds, |flat| {
        let p = Point {
            dims: &flat[..nd],
            ranges: &flat[nd..],
            runtimes: &[],
        };
        match m
            .constraints_satisfied(&p)
            .and_then(|ok| Ok((ok, m.evaluate(&p)?)))
        {
            Ok((true, idx)) => {
                let off: i64 = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
                loads
                    .entry(flat[nd..].to_vec())
                    .or_default()
                    .insert(off * bytes);
            }
            Ok((false, _)) => {}
            Err(e) => {
                err = Some(e);
                return false;
            }
        }
        true
    });
    if let Some(e) = err {
        return Err(e.into());
    }
    let mut transactions = 0u64;
    let mut ideal = 0u64;
    for addrs in loads.values() {
        let segs: BTreeSet<i64> = addrs.iter().map(|a| a.div_euclid(SEGMENT)).collect();
        transactions += segs.len() as u64;
        let total = addrs.len() as i64 * bytes;
        ideal += ((total + SEGMENT - 1) / SEGMENT) as u64;
    }
    Ok(Coalescing::Counted {
        loads: loads.len() as u64,
        transactions,
        ideal,
        runtime_at,
    })
}

/// `map` with each runtime variable replaced by 0 (or the bound of its range nearest 0),
/// and those values, when
/// every runtime variable is warp-uniform: under `thread_map` (the first warp, `(lane,
/// unroll step) -> output index`), the element it is read from depends on no thread
/// coordinate and on no other runtime value. `None` when one is not (or its provenance
/// is not in `map`'s variables).
fn at_warp_uniform_runtimes(
    thread_map: &IndexingMap,
    map: &IndexedMap,
) -> Result<Option<(IndexingMap, Vec<i64>)>, IndexingError> {
    let m = &map.map;
    if map.runtime.len() != m.runtimes().len() {
        return Ok(None);
    }
    for rt in &map.runtime {
        if rt.map.dims().len() != m.dims().len() {
            return Ok(None);
        }
        let mut read = thread_map.compose(&rt.map)?;
        read.add_constraint(Expr::dim(0), Interval::new(0, WARP - 1));
        read.simplify();
        if read.form() == MapForm::KnownEmpty {
            continue;
        }
        let thread_dependent = read.results().iter().any(|e| {
            e.variables()
                .iter()
                .any(|v| matches!(v.kind, affine::VarKind::Dim | affine::VarKind::Runtime))
        });
        if read.form() != MapForm::Normal || thread_dependent {
            return Ok(None);
        }
    }
    let lower: Vec<i64> = m.runtimes().iter().map(|b| 0.clamp(b.lo, b.hi)).collect();
    let mut bind = |v: affine::Var| match v.kind {
        affine::VarKind::Runtime => Some(Expr::constant(lower[v.index as usize])),
        _ => None,
    };
    let results = m
        .results()
        .iter()
        .map(|e| e.substitute(&mut bind))
        .collect();
    let constraints = m
        .constraints()
        .iter()
        .map(|c| (c.expr.substitute(&mut bind), c.interval))
        .collect();
    let fixed = IndexingMap::new(
        m.dims().to_vec(),
        m.ranges().to_vec(),
        vec![],
        results,
        constraints,
    )?;
    Ok(Some((fixed, lower)))
}
