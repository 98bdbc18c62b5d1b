//! The collectives with XLA's semantics, on the devices of an N-device evaluation: each
//! participant leaves its operands at the rendezvous and computes its result from all of
//! them. all-reduce folds the participants' values in group order with `to_apply`;
//! all-gather concatenates them along `dimensions`; reduce-scatter reduces, then keeps
//! this participant's piece; all-to-all sends piece (or operand) j to participant j;
//! collective-permute takes the value of the source paired with this device (zeros when
//! none is); collective-broadcast takes the group's first member's value. The async
//! `-start` forms compute at the start; `-done` reads the result out.

use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::Shape;
use hlo::{ElementType, Instruction, Literal, Opcode};

use crate::collective_groups::{participants, permute_scope};
use crate::control::{tuple_part, zeros};
use crate::data::array;
use crate::device::Device;
use crate::error::EvalError;
use crate::movement as mv;
use crate::reduce::{map, Caller};

/// True for the opcodes [`evaluate`] handles.
pub(crate) fn handles(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::AllReduce
            | Opcode::AllReduceStart
            | Opcode::AllReduceDone
            | Opcode::AllGather
            | Opcode::AllGatherStart
            | Opcode::AllGatherDone
            | Opcode::ReduceScatter
            | Opcode::AllToAll
            | Opcode::CollectivePermute
            | Opcode::CollectivePermuteStart
            | Opcode::CollectivePermuteDone
            | Opcode::CollectiveBroadcast
    )
}

/// Evaluates collective `instr` on this device's operand values `vals`.
pub(crate) fn evaluate(
    dev: &mut Device,
    instr: &Instruction,
    vals: &[&Literal],
    call: &mut Caller<'_>,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let shape = instr.shape();
    if has_dynamic_root(instr) {
        // The root is a run-time value (the last operand); the evaluator's exchange takes
        // its data from a fixed group member, so it refuses rather than misread the root
        // operand as data.
        return Err(unsupported(
            instr,
            "has_dynamic_root=true (the root participant is a run-time operand)",
        ));
    }
    match instr.opcode() {
        Opcode::AllReduceDone => vals
            .first()
            .map(|v| (*v).clone())
            .ok_or_else(|| EvalError::invalid(what, "missing operand")),
        Opcode::AllGatherDone | Opcode::CollectivePermuteDone => tuple_part(vals, 1, what),
        Opcode::AllReduce | Opcode::AllReduceStart => {
            let all = gather_operands(dev, instr, vals)?;
            per_operand(what, shape, vals.len(), |i, s| {
                reduce_all(instr, &all, i, s, call)
            })
        }
        Opcode::AllGather => {
            let all = gather_operands(dev, instr, vals)?;
            per_operand(what, shape, vals.len(), |i, s| {
                concat_all(instr, &all, i, s)
            })
        }
        Opcode::AllGatherStart => {
            let all = gather_operands(dev, instr, vals)?;
            let results = shape
                .tuple_shapes()
                .get(1)
                .ok_or_else(|| EvalError::invalid(what, "all-gather-start must be a tuple"))?;
            let out = per_operand(what, results, vals.len(), |i, s| {
                concat_all(instr, &all, i, s)
            })?;
            Ok(Literal::Tuple(vec![operands_value(vals), out]))
        }
        Opcode::ReduceScatter => {
            let all = gather_operands(dev, instr, vals)?;
            let me = my_index(dev, instr)?;
            per_operand(what, shape, vals.len(), |i, s| {
                let full_shape = scaled(s, dim(instr)?, all.len() as i64, what)?;
                let full = reduce_all(instr, &all, i, &full_shape, call)?;
                piece(array(&full, what)?, dim(instr)?, me, all.len(), s, what)
            })
        }
        Opcode::AllToAll => all_to_all(dev, instr, vals),
        Opcode::CollectivePermute => permute(dev, instr, vals, shape),
        Opcode::CollectivePermuteStart => {
            if vals.len() == 4 && vals[2].shape().is_tuple() {
                return Err(unsupported(instr, "in-place collective-permute"));
            }
            let parts = shape.tuple_shapes();
            let result_shape = parts.get(1).ok_or_else(|| {
                EvalError::invalid(what, "collective-permute-start must be a tuple")
            })?;
            let result = permute(dev, instr, vals, result_shape)?;
            let mut out = vec![operands_value(vals), result];
            for s in &parts[2..] {
                out.push(zeros(s, what)?);
            }
            Ok(Literal::Tuple(out))
        }
        Opcode::CollectiveBroadcast => {
            let all = gather_operands(dev, instr, vals)?;
            let first = all
                .first()
                .ok_or_else(|| EvalError::invalid(what, "no participants"))?;
            per_operand(what, shape, vals.len(), |i, _| Ok(first[i].clone()))
        }
        op => Err(EvalError::Unsupported {
            opcode: op,
            instr: what.to_string(),
            detail: Some("not a collective".to_string()),
        }),
    }
}

/// `has_dynamic_root=true` on a collective-broadcast or collective-reduce.
fn has_dynamic_root(instr: &Instruction) -> bool {
    matches!(
        instr.attr(&AttrName::HasDynamicRoot),
        Some(AttrValue::Bool(true))
    )
}

fn unsupported(instr: &Instruction, detail: &str) -> EvalError {
    EvalError::Unsupported {
        opcode: instr.opcode(),
        instr: instr.name().to_string(),
        detail: Some(detail.to_string()),
    }
}

/// The operands as one value: the operand itself, or a tuple of several.
fn operands_value(vals: &[&Literal]) -> Literal {
    match vals {
        [one] => (*one).clone(),
        _ => Literal::Tuple(vals.iter().map(|v| (*v).clone()).collect()),
    }
}

/// Every participant's operands (participant-major), exchanged at the rendezvous.
fn gather_operands(
    dev: &mut Device,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Vec<Vec<Literal>>, EvalError> {
    let group = participants(instr, dev)?;
    let mine = Literal::Tuple(vals.iter().map(|v| (*v).clone()).collect());
    let all = dev.exchange(&group, mine, instr.name())?;
    Ok(all
        .into_iter()
        .map(|l| match l {
            Literal::Tuple(t) => t,
            other => vec![other],
        })
        .collect())
}

/// This device's position in its group.
fn my_index(dev: &Device, instr: &Instruction) -> Result<usize, EvalError> {
    let group = participants(instr, dev)?;
    group
        .iter()
        .position(|&d| d == dev.id())
        .ok_or_else(|| EvalError::invalid(instr.name(), "device not in its own group"))
}

/// Builds the result from one value per operand: the value itself for one operand, a
/// tuple for several.
fn per_operand(
    what: &str,
    shape: &Shape,
    n: usize,
    mut f: impl FnMut(usize, &Shape) -> Result<Literal, EvalError>,
) -> Result<Literal, EvalError> {
    if n == 1 && !shape.is_tuple() {
        return f(0, shape);
    }
    let parts = shape.tuple_shapes();
    if parts.len() != n {
        return Err(EvalError::invalid(
            what,
            "collective result has another arity than its operands",
        ));
    }
    Ok(Literal::Tuple(
        parts
            .iter()
            .enumerate()
            .map(|(i, s)| f(i, s))
            .collect::<Result<_, _>>()?,
    ))
}

/// The single dimension of `dimensions={d}`.
fn dim(instr: &Instruction) -> Result<i64, EvalError> {
    match instr.dimensions() {
        Some([d]) => Ok(*d),
        _ => Err(EvalError::invalid(instr.name(), "expects dimensions={d}")),
    }
}

/// `s` with dimension `d` multiplied by `k`.
fn scaled(s: &Shape, d: i64, k: i64, what: &str) -> Result<Shape, EvalError> {
    let ty = s
        .element_type()
        .ok_or_else(|| EvalError::invalid(what, "expects an array"))?;
    let mut dims = s.dims().to_vec();
    let x = dims
        .get_mut(d as usize)
        .ok_or_else(|| EvalError::invalid(what, "dimension out of range"))?;
    *x *= k;
    Ok(Shape::array(ty, dims))
}

/// Participants' operand `i` folded in group order with `to_apply`.
fn reduce_all(
    instr: &Instruction,
    all: &[Vec<Literal>],
    i: usize,
    shape: &Shape,
    call: &mut Caller<'_>,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let comp = instr
        .to_apply()
        .ok_or_else(|| EvalError::invalid(what, "missing to_apply="))?;
    let value = |p: &Vec<Literal>| {
        p.get(i)
            .cloned()
            .ok_or_else(|| EvalError::invalid(what, "a participant lacks an operand"))
    };
    let mut acc = value(&all[0])?;
    for p in &all[1..] {
        let v = value(p)?;
        acc = map(
            &[array(&acc, what)?, array(&v, what)?],
            comp,
            shape,
            call,
            what,
        )?;
    }
    // A one-member group: the operand itself, in the result's shape.
    if let Literal::Array(a) = &acc {
        if a.shape() != shape {
            return crate::data::make(shape, a.data().clone(), what);
        }
    }
    Ok(acc)
}

/// Participants' operand `i` concatenated along `dimensions`.
fn concat_all(
    instr: &Instruction,
    all: &[Vec<Literal>],
    i: usize,
    shape: &Shape,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let parts = all
        .iter()
        .map(|p| {
            p.get(i)
                .ok_or_else(|| EvalError::invalid(what, "a participant lacks an operand"))
                .and_then(|l| array(l, what))
        })
        .collect::<Result<Vec<_>, _>>()?;
    mv::concatenate(&parts, dim(instr)?, shape, what)
}

/// Piece `k` of `n` equal pieces of `a` along dimension `d`, in `shape`.
fn piece(
    a: &ArrayLiteral,
    d: i64,
    k: usize,
    n: usize,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let dims = a.shape().dims();
    let len = *dims
        .get(d as usize)
        .ok_or_else(|| EvalError::invalid(what, "dimension out of range"))?;
    if n == 0 || len % n as i64 != 0 {
        return Err(EvalError::invalid(
            what,
            format!("dimension {d} of size {len} does not split in {n} pieces"),
        ));
    }
    let size = len / n as i64;
    let sl: Vec<SliceDim> = dims
        .iter()
        .enumerate()
        .map(|(j, &m)| {
            if j == d as usize {
                SliceDim {
                    start: k as i64 * size,
                    limit: (k as i64 + 1) * size,
                    stride: 1,
                }
            } else {
                SliceDim {
                    start: 0,
                    limit: m,
                    stride: 1,
                }
            }
        })
        .collect();
    mv::slice(a, &sl, shape, what)
}

/// all-to-all: with `dimensions={d}` each operand is split in as many pieces as there
/// are participants along d, piece j goes to participant j and the received pieces are
/// concatenated along d in participant order; without, operand j goes to participant j
/// and the result's element i is what participant i sent.
fn all_to_all(
    dev: &mut Device,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let shape = instr.shape();
    let me = my_index(dev, instr)?;
    let all = gather_operands(dev, instr, vals)?;
    let n = all.len();
    if instr.dimensions().is_some() {
        let d = dim(instr)?;
        return per_operand(what, shape, vals.len(), |i, s| {
            let ty = s
                .element_type()
                .ok_or_else(|| EvalError::invalid(what, "expects an array"))?;
            let mut pdims = s.dims().to_vec();
            let x = pdims
                .get_mut(d as usize)
                .ok_or_else(|| EvalError::invalid(what, "dimension out of range"))?;
            if n == 0 || *x % n as i64 != 0 {
                return Err(EvalError::invalid(what, "split dimension does not divide"));
            }
            *x /= n as i64;
            let pshape = Shape::array(ty, pdims);
            let pieces = all
                .iter()
                .map(|p| {
                    let a = p.get(i).ok_or_else(|| {
                        EvalError::invalid(what, "a participant lacks an operand")
                    })?;
                    piece(array(a, what)?, d, me, n, &pshape, what)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let refs = pieces
                .iter()
                .map(|l| array(l, what))
                .collect::<Result<Vec<_>, _>>()?;
            mv::concatenate(&refs, d, s, what)
        });
    }
    if vals.len() != n {
        return Err(EvalError::invalid(
            what,
            format!(
                "tuple all-to-all has {} operands for {n} participants",
                vals.len()
            ),
        ));
    }
    Ok(Literal::Tuple(
        all.iter()
            .map(|p| {
                p.get(me)
                    .cloned()
                    .ok_or_else(|| EvalError::invalid(what, "a participant lacks an operand"))
            })
            .collect::<Result<_, _>>()?,
    ))
}

/// collective-permute: the value from the source paired with this device, zeros when no
/// pair targets it.
fn permute(
    dev: &mut Device,
    instr: &Instruction,
    vals: &[&Literal],
    result_shape: &Shape,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let pairs = match instr.attr(&AttrName::SourceTargetPairs) {
        Some(AttrValue::IntListList(p)) => p.clone(),
        None => Vec::new(),
        _ => return Err(EvalError::invalid(what, "malformed source_target_pairs")),
    };
    let (scope, me) = permute_scope(instr, dev);
    let mut seen_targets = Vec::new();
    for p in &pairs {
        match p[..] {
            [s, t]
                if s >= 0 && t >= 0 && (s as usize) < scope.len() && (t as usize) < scope.len() =>
            {
                if seen_targets.contains(&t) {
                    return Err(EvalError::invalid(
                        what,
                        format!("target {t} receives twice"),
                    ));
                }
                seen_targets.push(t);
            }
            _ => {
                return Err(EvalError::invalid(
                    what,
                    format!("source-target pair {p:?} is outside 0..{}", scope.len()),
                ))
            }
        }
    }
    let all = dev.exchange(&scope, operands_value(vals), what)?;
    match pairs.iter().find(|p| p[1] == me) {
        Some(p) => Ok(all[p[0] as usize].clone()),
        None => zeros(result_shape, what),
    }
}

/// A scalar s64 literal (an index for dynamic-update-slice).
pub(crate) fn index_scalar(v: i64) -> Result<ArrayLiteral, EvalError> {
    ArrayLiteral::new(
        Shape::array(ElementType::S64, vec![]),
        ArrayData::S64(vec![v]),
    )
    .ok_or_else(|| EvalError::invalid("?", "an index scalar"))
}
