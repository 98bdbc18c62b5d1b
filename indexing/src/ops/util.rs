//! Shared helpers for building per-op maps.

use affine::{Expr, IndexingMap, Interval};
use hlo::{CompId, Computation, ElementType, InstrId, InstrRef, Instruction, Module, Shape};

use crate::{IndexingError, OperandIndexing, RuntimeVar};

/// An instruction with its context.
pub(crate) struct OpView<'a> {
    pub comp_id: CompId,
    pub comp: &'a Computation,
    pub instr: &'a Instruction,
}

impl<'a> OpView<'a> {
    /// The view of the instruction a handle names.
    pub fn of(instr: &InstrRef<'a>) -> OpView<'a> {
        OpView {
            comp_id: instr.comp_id(),
            comp: instr.computation(),
            instr: instr.instr(),
        }
    }

    /// The view of instruction `id` of computation `comp_id` (both taken from the module,
    /// so they are valid).
    pub fn new(module: &'a Module, comp_id: CompId, id: InstrId) -> OpView<'a> {
        let comp = module.computation(comp_id);
        OpView {
            comp_id,
            comp,
            instr: comp.instr(id),
        }
    }

    pub fn arity(&self) -> usize {
        self.instr.operands().len()
    }

    pub fn operand_id(&self, i: usize) -> Result<InstrId, IndexingError> {
        self.instr
            .operand(i)
            .ok_or_else(|| self.malformed(format!("missing operand {i}")))
    }

    pub fn operand(&self, i: usize) -> Result<&'a Instruction, IndexingError> {
        Ok(self.comp.instr(self.operand_id(i)?))
    }

    pub fn operand_shape(&self, i: usize) -> Result<&'a Shape, IndexingError> {
        Ok(self.operand(i)?.shape())
    }

    pub fn operand_dims(&self, i: usize) -> Result<&'a [i64], IndexingError> {
        Ok(self.operand_shape(i)?.dims())
    }

    /// The shape of output `k` (the instruction's shape for an array result).
    pub fn out_shape(&self, k: usize) -> Result<&'a Shape, IndexingError> {
        let s = self.instr.shape();
        if s.is_tuple() {
            s.tuple_shapes()
                .get(k)
                .ok_or_else(|| self.malformed(format!("no output {k}")))
        } else if k == 0 {
            Ok(s)
        } else {
            Err(self.malformed(format!("no output {k}")))
        }
    }

    pub fn out_dims(&self, k: usize) -> Result<&'a [i64], IndexingError> {
        Ok(self.out_shape(k)?.dims())
    }

    pub fn malformed(&self, message: impl Into<String>) -> IndexingError {
        IndexingError::Malformed {
            instr: self.instr.name().to_string(),
            opcode: self.instr.opcode().as_str().to_string(),
            message: message.into(),
        }
    }

    pub fn dimensions(&self) -> Result<&'a [i64], IndexingError> {
        self.instr
            .dimensions()
            .ok_or_else(|| self.malformed("missing dimensions={...}"))
    }

    /// A runtime variable read from element `map` of operand `i`.
    pub fn runtime_var(&self, i: usize, map: IndexingMap) -> Result<RuntimeVar, IndexingError> {
        let op = self.operand_id(i)?;
        Ok(RuntimeVar {
            computation: self.comp_id,
            producer: op,
            producer_name: self.comp.instr(op).name().to_string(),
            map,
        })
    }
}

/// How many outputs an instruction has: one per tuple element, or one for an array.
pub(crate) fn output_count(instr: &Instruction) -> usize {
    if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().len()
    } else {
        1
    }
}

/// `[0, n - 1]` for each size.
pub(crate) fn boxes(sizes: &[i64]) -> Vec<Interval> {
    sizes.iter().map(|&n| Interval::new(0, n - 1)).collect()
}

pub(crate) fn dims_of(n: usize) -> Vec<Expr> {
    (0..n as u32).map(Expr::dim).collect()
}

pub(crate) fn c(v: i64) -> Expr {
    Expr::constant(v)
}

/// A map over dimensions `dims`, range variables `ranges` (sizes) and no runtime variables.
pub(crate) fn map(
    dims: &[i64],
    ranges: &[i64],
    results: Vec<Expr>,
    constraints: Vec<(Expr, Interval)>,
) -> Result<IndexingMap, IndexingError> {
    Ok(IndexingMap::new(
        boxes(dims),
        boxes(ranges),
        vec![],
        results,
        constraints,
    )?)
}

/// The identity on a shape.
pub(crate) fn identity(dims: &[i64]) -> OperandIndexing {
    OperandIndexing::map(IndexingMap::identity(dims))
}

/// `(d...) -> ()` from every element of a shape to a scalar.
pub(crate) fn to_scalar(dims: &[i64]) -> Result<OperandIndexing, IndexingError> {
    Ok(OperandIndexing::map(map(dims, &[], vec![], vec![])?))
}

/// `()[s...] -> (s...)` from a scalar to every element of a shape.
pub(crate) fn from_scalar(dims: &[i64]) -> Result<OperandIndexing, IndexingError> {
    let results = (0..dims.len() as u32).map(Expr::range).collect();
    Ok(OperandIndexing::map(map(&[], dims, results, vec![])?))
}

/// Values an index of element type `ty` can hold (u64 is cut at `i64::MAX`).
pub(crate) fn index_range(ty: Option<ElementType>) -> Interval {
    use ElementType as T;
    match ty {
        Some(T::S8) => Interval::new(i8::MIN.into(), i8::MAX.into()),
        Some(T::S16) => Interval::new(i16::MIN.into(), i16::MAX.into()),
        Some(T::S32) => Interval::new(i32::MIN.into(), i32::MAX.into()),
        Some(T::U8) => Interval::new(0, u8::MAX.into()),
        Some(T::U16) => Interval::new(0, u16::MAX.into()),
        Some(T::U32) => Interval::new(0, u32::MAX.into()),
        Some(T::U64) => Interval::new(0, i64::MAX),
        _ => Interval::new(i64::MIN, i64::MAX),
    }
}

/// `min(max(e, 0), hi)`: XLA's clamping of a start index.
pub(crate) fn clamp(e: Expr, hi: i64) -> Expr {
    e.max(c(0)).min(c(hi))
}

/// Checks that `dims` is a permutation-free list of valid dimensions of a rank-`rank` shape.
pub(crate) fn check_dims(v: &OpView<'_>, dims: &[i64], rank: usize) -> Result<(), IndexingError> {
    let mut seen = vec![false; rank];
    for &d in dims {
        let ok = usize::try_from(d).ok().filter(|&d| d < rank);
        match ok {
            Some(d) if !seen[d] => seen[d] = true,
            _ => return Err(v.malformed(format!("bad dimension {d} for rank {rank}"))),
        }
    }
    Ok(())
}
