//! A scan's outputs, looking into its body: the exact relation where the carries are simple.
//!
//! Step `t` of a scan computes the body's outputs from the input slices at `t` and the
//! carries entering `t` (the init at the first step, the previous step's new carries after).
//! Each carry is classified by how its new value reads the carries entering its step:
//! *fresh* (it reads no carry) or *accumulating* (it reads its own carry through the
//! identity map and no other carry). Then, for an output that reads carry `j` through the
//! body's maps `M`, and `N_i` the maps from carry `j`'s new value to input `i`:
//! - accumulating: the init through `M` at every step, and input `i` at every earlier step
//!   through `M` then `N_i` (the element the carry holds gathers exactly those);
//! - fresh: the init through `M` at the first step only, and input `i` at the previous step
//!   through `M` then `N_i`.
//!
//! A stacked output at position `t` also reads the input slices at `t` through its own body
//! maps; a final carry is the body's output at the last step. Where a carry reads other
//! carries, reads its own through anything but the identity, or a body map is UNDEFINED or
//! has runtime variables, the per-op table's supersets stand (`ops/scan.rs`).

use affine::{Expr, IndexingMap, Interval, Var, VarKind};
use hlo::{InstrRef, Opcode};

use crate::compose::{compose_sets, through_computation};
use crate::{IndexedMap, IndexingError, OperandIndexing};

/// The shape facts of a scan the body analysis needs.
struct Scan {
    dim: usize,
    len: i64,
    inputs: usize,
    carries: usize,
    stacked: usize,
    reverse: bool,
}

impl Scan {
    /// The first position in scan order.
    fn first(&self) -> i64 {
        if self.reverse {
            self.len - 1
        } else {
            0
        }
    }

    /// The last position in scan order.
    fn last(&self) -> i64 {
        if self.reverse {
            0
        } else {
            self.len - 1
        }
    }

    /// The step before in scan order: `-1` forward, `+1` reverse.
    fn back(&self) -> i64 {
        if self.reverse {
            1
        } else {
            -1
        }
    }
}

/// How a carry's new value reads the carries entering its step.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Carry {
    /// Reads no carry.
    Fresh,
    /// Reads its own carry through the identity map, and no other carry.
    Accumulating,
}

/// Where a read lands along the scanned dimension of an input.
#[derive(Clone, Copy, Debug)]
enum At {
    /// The output's own position plus an offset (stacked outputs).
    Offset(i64),
    /// Every position strictly before the output's in scan order (stacked outputs).
    Before,
    /// Every position up to the output's in scan order, its own included (stacked outputs).
    UpTo,
    /// One fixed position (final carries).
    Fixed(i64),
    /// Every position in `[lo, hi]` (final carries).
    Span(i64, i64),
}

/// The maps of output `k` of a scan to each of its operands through the body (see the
/// module documentation), or `None` where the per-op table's supersets stand.
pub(crate) fn through_body(
    instr: &InstrRef<'_>,
    k: usize,
) -> Result<Option<Vec<OperandIndexing>>, IndexingError> {
    let Some(s) = facts(instr) else {
        return Ok(None);
    };
    let i = instr.instr();
    let Some(body) = i.to_apply() else {
        return Ok(None);
    };
    let arity = s.inputs + s.carries;
    let shape = i.shape();
    let out: Vec<i64> = if shape.is_tuple() {
        match shape.tuple_shapes().get(k) {
            Some(sh) if !sh.is_tuple() => sh.dims().to_vec(),
            _ => return Ok(None),
        }
    } else {
        shape.dims().to_vec()
    };
    let stacked = k < s.stacked;
    if s.len < 1 || (stacked && s.dim >= out.len()) {
        return Ok(None);
    }
    let module = instr.module();
    let body_maps = through_computation(module, body)?;
    if body_maps.len() != s.stacked + s.carries
        || body_maps.iter().any(|g| g.operands.len() != arity)
    {
        return Ok(None);
    }
    let g = |b: usize, p: usize| &body_maps[b].operands[p];
    let mut result = vec![OperandIndexing::none(); arity];
    // The input slices the output reads at its own step; then those its carries gathered.
    let own = if stacked {
        At::Offset(0)
    } else {
        At::Fixed(s.last())
    };
    let mut reads: Vec<Vec<Read>> = (0..s.inputs)
        .map(|p| vec![(g(k, p).clone(), own, None)])
        .collect();
    for j in 0..s.carries {
        let through = g(k, s.inputs + j);
        match through {
            OperandIndexing::Undefined(_) => return Ok(None),
            OperandIndexing::Maps(m) if m.is_empty() => continue,
            OperandIndexing::Maps(_) => {}
        }
        let Some(kind) = classify(&s, &body_maps[s.stacked + j].operands, j) else {
            return Ok(None);
        };
        // The init, at every step or at the first one only.
        let init_when = match (kind, stacked) {
            (Carry::Accumulating, _) => Some(None),
            (Carry::Fresh, true) => Some(Some(Interval::new(s.first(), s.first()))),
            (Carry::Fresh, false) => (s.len == 1).then_some(None),
        };
        if let Some(when) = init_when {
            if !place_all(&mut result[s.inputs + j], through, &s, stacked, None, when) {
                return Ok(None);
            }
        }
        // The inputs the carry gathered before this step.
        let (at, when) = match (kind, stacked) {
            (Carry::Accumulating, true) => (At::Before, None),
            (Carry::Accumulating, false) => {
                let (lo, hi) = if s.reverse {
                    (1, s.len - 1)
                } else {
                    (0, s.len - 2)
                };
                (At::Span(lo, hi), None)
            }
            (Carry::Fresh, true) => {
                let valid = if s.reverse {
                    Interval::new(0, s.len - 2)
                } else {
                    Interval::new(1, s.len - 1)
                };
                (At::Offset(s.back()), Some(valid))
            }
            (Carry::Fresh, false) => (At::Fixed(s.last() + s.back()), None),
        };
        if s.len < 2 {
            continue;
        }
        for (p, input_reads) in reads.iter_mut().enumerate() {
            let composed = compose_sets(module, through, g(s.stacked + j, p))?;
            input_reads.push((composed, at, when));
        }
    }
    for (p, input_reads) in reads.iter_mut().enumerate() {
        join_own_and_earlier(input_reads, &s);
        for (set, at, when) in input_reads.iter() {
            if !place_all(&mut result[p], set, &s, stacked, Some(*at), *when) {
                return Ok(None);
            }
        }
    }
    Ok(Some(result))
}

/// One read of an input: the body's maps, where along the scanned dimension, and for which
/// output positions.
type Read = (OperandIndexing, At, Option<Interval>);

/// Where an input is read through the same maps at the output's own step and at every
/// earlier one (an accumulating carry gathering what the output reads directly, a running
/// sum), the two reads become one over every step up to the output's: one map, where a
/// tile can cover it.
fn join_own_and_earlier(reads: &mut Vec<Read>, s: &Scan) {
    let Some((own_set, own_at, None)) = reads.first().cloned() else {
        return;
    };
    let joined = match own_at {
        At::Offset(0) => At::UpTo,
        At::Fixed(_) => At::Span(0, s.len - 1),
        _ => return,
    };
    let earlier = reads.iter().position(|(set, at, when)| {
        when.is_none() && matches!(at, At::Before | At::Span(..)) && *set == own_set
    });
    if let Some(e) = earlier {
        reads.remove(e);
        reads[0].1 = joined;
    }
}

/// The scan's facts, or `None` for anything malformed (the per-op table reports it).
fn facts(instr: &InstrRef<'_>) -> Option<Scan> {
    let i = instr.instr();
    if instr.opcode() != Opcode::Scan {
        return None;
    }
    let dim = usize::try_from(i.scan_dimension()?).ok()?;
    let arity = i.operands().len();
    let carries = usize::try_from(i.scan_num_carries()).ok()?;
    let inputs = arity.checked_sub(carries)?;
    let shape = i.shape();
    let outputs = if shape.is_tuple() {
        shape.tuple_shapes().len()
    } else {
        1
    };
    let stacked = outputs.checked_sub(carries)?;
    let first = instr.operand(0).filter(|_| inputs > 0)?;
    let len = *first.instr().shape().dims().get(dim)?;
    Some(Scan {
        dim,
        len,
        inputs,
        carries,
        stacked,
        reverse: i.scan_is_reverse(),
    })
}

/// How carry `j`'s new value (body maps `reads`, one set per body parameter) reads the
/// carries entering its step; `None` when neither fresh nor accumulating.
fn classify(s: &Scan, reads: &[OperandIndexing], j: usize) -> Option<Carry> {
    let mut own = None;
    for (l, set) in reads.iter().enumerate().skip(s.inputs) {
        let OperandIndexing::Maps(m) = set else {
            return None;
        };
        if m.is_empty() {
            continue;
        }
        if l != s.inputs + j || m.len() != 1 {
            return None;
        }
        own = m.values().next();
    }
    match own {
        None => Some(Carry::Fresh),
        Some(m) if is_identity(m) => Some(Carry::Accumulating),
        Some(_) => None,
    }
}

/// True for a plain identity map (no range or runtime variables, no constraints).
fn is_identity(m: &IndexedMap) -> bool {
    let map = &m.map;
    m.runtime.is_empty()
        && map.ranges().is_empty()
        && map.runtimes().is_empty()
        && map.constraints().is_empty()
        && map.results().len() == map.dims().len()
        && map
            .results()
            .iter()
            .enumerate()
            .all(|(d, &e)| e == Expr::dim(d as u32))
}

/// Adds every map of `set`, placed by [`place`], to `out`; false when a map cannot be
/// placed (UNDEFINED, runtime variables, unexpected rank).
fn place_all(
    out: &mut OperandIndexing,
    set: &OperandIndexing,
    s: &Scan,
    stacked: bool,
    at: Option<At>,
    when: Option<Interval>,
) -> bool {
    let OperandIndexing::Maps(maps) = set else {
        return false;
    };
    for m in maps.values() {
        if !m.runtime.is_empty() {
            return false;
        }
        match place(&m.map, s, stacked, at, when) {
            Some(p) => out.insert(IndexedMap::plain(p)),
            None => return false,
        }
    }
    true
}

/// A body map (from a step's output to a step's input slice or carry) as a map from the
/// scan's output: for a stacked output, dimension `d` (the position `t`) inserted into the
/// domain, the other dimensions renumbered; `at` inserts the position read into the results
/// (input slices; `None` for a carry's init), `when` constrains `t`.
fn place(
    m: &IndexingMap,
    s: &Scan,
    stacked: bool,
    at: Option<At>,
    when: Option<Interval>,
) -> Option<IndexingMap> {
    if !m.runtimes().is_empty() {
        return None;
    }
    let d = s.dim;
    let shift = |e: Expr| {
        e.substitute(&mut |v: Var| {
            (stacked && v.kind == VarKind::Dim && v.index as usize >= d)
                .then(|| Expr::dim(v.index + 1))
        })
    };
    let mut dims = m.dims().to_vec();
    if stacked {
        if d > dims.len() {
            return None;
        }
        dims.insert(d, Interval::new(0, s.len - 1));
    }
    let mut ranges = m.ranges().to_vec();
    let mut results: Vec<Expr> = m.results().iter().map(|&e| shift(e)).collect();
    let mut constraints: Vec<(Expr, Interval)> = m
        .constraints()
        .iter()
        .map(|c| (shift(c.expr), c.interval))
        .collect();
    let t = Expr::dim(d as u32);
    if let Some(at) = at {
        let position = match (at, stacked) {
            (At::Offset(k), true) => t + Expr::constant(k),
            (At::Before | At::UpTo, true) => {
                let r = Expr::range(ranges.len() as u32);
                ranges.push(Interval::new(0, s.len - 1));
                let order = if s.reverse { r - t } else { t - r };
                let nearest = if matches!(at, At::UpTo) { 0 } else { 1 };
                constraints.push((order, Interval::new(nearest, s.len - 1)));
                r
            }
            (At::Fixed(c), false) => Expr::constant(c),
            (At::Span(lo, hi), false) => {
                let r = Expr::range(ranges.len() as u32);
                ranges.push(Interval::new(lo, hi));
                r
            }
            _ => return None,
        };
        if d > results.len() {
            return None;
        }
        results.insert(d, position);
    }
    if let Some(w) = when {
        if !stacked {
            return None;
        }
        constraints.push((t, w));
    }
    IndexingMap::new(dims, ranges, vec![], results, constraints).ok()
}
