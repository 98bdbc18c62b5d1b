//! The elemental emitter: the value of any instruction at an index, built from the
//! instructions' output-to-input indexing maps. An operand's index is the op's map
//! (from `indexing::output_to_input`) applied to the index the op is evaluated at — so a
//! chain of ops composes the maps, simplified at every step over the kernel's variable
//! bounds. A map's domain narrower than where it is evaluated (pad, concatenate,
//! dynamic-update-slice) becomes a guard; its range variables become loops (reduce, dot);
//! its runtime variables are bound from the elements their producers hold.

use affine::{Expr, Interval, MapForm, Var, VarKind};
use hlo::{CompId, InstrId, Opcode};
use indexing::{GroupedIndexing, IndexedMap, OperandIndexing};

use super::builder::{BufferSource, Builder, Leaf};
use super::scalar_ops;
use crate::error::CodegenError;
use crate::kir::{Access, BinOp, Const, Guard, ScalarType, Stmt, UnOp, Value};

mod blocked_sum;
mod contraction;
mod map;
mod op_maps;
mod precision;
mod reduction;
mod reinterpret;
pub(crate) mod xla_order;

use precision::reduce_precision;

/// Largest expression tree built without binding intermediate values (guarded regions
/// cannot bind them).
const MAX_GUARDED_TREE: usize = 20_000;

/// Why an op outside the elemental table ([`scalar_ops::computes`]) is not emitted.
pub(crate) const NO_ELEMENTAL_EMITTER: &str = "no elemental emitter for this op";

/// An operand read under a guard: the operand and its access.
type Branch = (InstrId, Applied);

/// What a chain of guarded branches gives when no guard holds.
enum Fallback {
    /// A value computed already.
    Value(Value),
    /// Another operand, read where the branches' guards all fail.
    Operand(Branch),
}

/// The zero of a type.
fn zero(ty: ScalarType) -> Value {
    let c = if ty.is_float() {
        Const::Float(0.0)
    } else if ty == ScalarType::Pred {
        Const::Bool(false)
    } else {
        Const::Int(0)
    };
    Value::Const(ty, c)
}

/// An operand access: the operand's index over the kernel's variables, when it is read
/// (`guard`), and the range variables the map introduced.
pub struct Applied {
    pub index: Vec<Expr>,
    pub guard: Guard,
    pub ranges: Vec<Var>,
}

/// The maps of output 0 of an instruction, shared ([`op_maps`]); derefs to them.
pub(crate) struct FirstMaps(op_maps::AllMaps);

impl std::ops::Deref for FirstMaps {
    type Target = GroupedIndexing;

    fn deref(&self) -> &GroupedIndexing {
        // `all_maps` never gives an empty list.
        &self.0[0]
    }
}

impl Builder<'_> {
    /// `a` at one value of its range variable `r`: `r` replaced by `at` in the index
    /// (simplified), unguarded, with no range left (one element of a reduction's range).
    pub(crate) fn at_range(&self, a: &Applied, r: Var, at: Expr) -> Applied {
        Applied {
            index: a
                .index
                .iter()
                .map(|x| self.simplify(x.substitute(&mut |v| (v == r).then_some(at))))
                .collect(),
            guard: Guard::default(),
            ranges: vec![],
        }
    }

    fn elem_type(&self, comp: CompId, id: InstrId) -> Result<ScalarType, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let et = instr.shape().element_type().ok_or_else(|| {
            self.unsupported(
                instr.opcode().as_str(),
                "a tuple-shaped value where an array is needed",
            )
        })?;
        ScalarType::from_element(et).ok_or_else(|| {
            self.unsupported(
                et.as_str(),
                format!("element type {} in kernels", et.as_str()),
            )
        })
    }

    /// The value of array-shaped instruction `id` at `index`.
    pub fn value(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        let mut v = self.values(comp, id, index, guarded, out)?;
        if v.len() != 1 {
            return Err(CodegenError::Internal(format!(
                "`{}` has {} outputs where one is used",
                self.module.computation(comp).instr(id).name(),
                v.len()
            )));
        }
        Ok(v.remove(0))
    }

    /// The values of every output of `id` at `index` (one for an array). Outside guarded
    /// regions, each is bound to a variable once per block and reused.
    pub fn values(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        if guarded {
            let v = self.compute(comp, id, index, true, out)?;
            if v.iter().map(Value::size).sum::<usize>() > MAX_GUARDED_TREE {
                return Err(self.unsupported("expression", "guarded expression tree too large"));
            }
            return Ok(v);
        }
        let key = (comp, id, index.to_vec());
        if let Some(v) = self.memo_get(&key) {
            return Ok(v);
        }
        let vals = self.compute(comp, id, index, false, out)?;
        let mut bound = Vec::with_capacity(vals.len());
        for v in vals {
            if v.is_trivial() {
                bound.push(v);
            } else {
                let ty = v.ty();
                let var = self.new_var(ty);
                out.push(Stmt::Let { var, value: v });
                bound.push(Value::Var(var, ty));
            }
        }
        self.memo_put(key, bound.clone());
        Ok(bound)
    }

    /// The maps of output 0 of `id` (the first of [`Self::all_maps`]).
    pub(crate) fn maps(&self, comp: CompId, id: InstrId) -> Result<FirstMaps, CodegenError> {
        Ok(FirstMaps(self.all_maps(comp, id)?))
    }

    /// The maps of every output of `id` (one entry per tuple element), shared with every
    /// other emission of an op of the same signature ([`op_maps`]).
    fn all_maps(&self, comp: CompId, id: InstrId) -> Result<op_maps::AllMaps, CodegenError> {
        let c = self.module.computation(comp);
        let instr = c.instr(id);
        let name = || instr.name().to_string();
        let handle = hlo::InstrRef::new(self.module, comp, id).ok_or_else(|| {
            CodegenError::Internal(format!("`{}` is not in its computation", name()))
        })?;
        let groups = op_maps::get_or_compute(c, instr, || {
            indexing::output_to_input(&handle).map_err(|source| CodegenError::Indexing {
                instr: name(),
                source,
            })
        })?;
        if groups.is_empty() {
            return Err(CodegenError::Internal(format!(
                "`{}` has no output maps",
                name()
            )));
        }
        Ok(groups)
    }

    /// The one map from the output to operand `j` (`None`: the operand is never read).
    pub(crate) fn single<'g>(
        &self,
        op: Opcode,
        g: &'g GroupedIndexing,
        j: usize,
    ) -> Result<Option<&'g IndexedMap>, CodegenError> {
        match g.operands.get(j) {
            None => Err(CodegenError::Internal(format!("no maps for operand {j}"))),
            Some(OperandIndexing::Undefined(r)) => Err(self.unsupported(
                op.as_str(),
                format!("indexing of operand {j} is undefined: {r}"),
            )),
            Some(s) => {
                let maps: Vec<&IndexedMap> = s.maps().collect();
                match maps.len() {
                    0 => Ok(None),
                    1 => Ok(Some(maps[0])),
                    n => Err(self
                        .unsupported(op.as_str(), format!("operand {j} is read through {n} maps"))),
                }
            }
        }
    }

    /// Applies map `m` at `index`: substitutes the index for the map's dimensions, fresh
    /// (or `reuse`d) kernel range variables for its range variables, and bound runtime
    /// variables for its runtime variables. `None` when the access never happens.
    pub fn apply(
        &mut self,
        m: &IndexedMap,
        index: &[Expr],
        reuse: Option<&[Var]>,
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Option<Applied>, CodegenError> {
        match m.map.form() {
            MapForm::KnownEmpty => return Ok(None),
            MapForm::Undefined => return Err(self.unsupported("indexing", "an UNDEFINED map")),
            MapForm::Normal => {}
        }
        if m.map.dims().len() != index.len() {
            return Err(CodegenError::Internal(format!(
                "map of {} dimensions applied to an index of {}",
                m.map.dims().len(),
                index.len()
            )));
        }
        let ranges: Vec<Var> = match reuse {
            Some(r) if r.len() == m.map.ranges().len() => r.to_vec(),
            Some(_) => {
                return Err(
                    self.unsupported("indexing", "operand maps with different range variables")
                )
            }
            None => m
                .map
                .ranges()
                .iter()
                .map(|iv| self.new_range(*iv))
                .collect(),
        };
        let rts: Vec<Var> = m
            .map
            .runtimes()
            .iter()
            .map(|iv| self.new_runtime(*iv))
            .collect();
        let subst = |e: Expr| {
            e.substitute(&mut |v: Var| {
                let i = v.index as usize;
                match v.kind {
                    VarKind::Dim => index.get(i).copied(),
                    VarKind::Range => ranges.get(i).map(|r| Expr::var(*r)),
                    VarKind::Runtime => rts.get(i).map(|r| Expr::var(*r)),
                }
            })
        };
        let mut unchecked_runtimes = Vec::new();
        for (k, rv) in m.runtime.iter().enumerate() {
            if rv.map.form() != MapForm::Normal {
                return Err(self.unsupported("indexing", "a runtime variable without a map"));
            }
            let pidx: Vec<Expr> = rv
                .map
                .results()
                .iter()
                .map(|e| self.simplify(subst(*e)))
                .collect();
            if guarded && !pidx.is_empty() {
                return Err(self.unsupported(
                    "indexing",
                    "a non-scalar runtime index inside a guarded region",
                ));
            }
            let val = self.value(rv.computation, rv.producer, &pidx, false, out)?;
            if !(val.ty().is_int() || val.ty() == ScalarType::Pred) {
                return Err(
                    self.unsupported("indexing", format!("runtime index of type {}", val.ty()))
                );
            }
            // A runtime variable's domain narrower than its index type's values is a
            // condition on the loaded index (a scatter skips an update whose window leaves
            // the operand), not a promise: checked below with the map's constraints.
            let declared = m.map.runtimes()[k];
            if let Some((lo, hi)) = val.ty().index_range() {
                if !declared.contains_interval(Interval::new(lo, hi)) {
                    unchecked_runtimes.push((Expr::var(rts[k]), declared));
                }
            }
            out.push(Stmt::BindIndex {
                var: rts[k],
                value: val,
            });
        }
        let result: Vec<Expr> = m
            .map
            .results()
            .iter()
            .map(|e| self.simplify(subst(*e)))
            .collect();
        let mut guard = Guard::default();
        for (e, want) in unchecked_runtimes {
            guard.conds.push((e, want.lo, want.hi));
        }
        let mut check = |b: &Self, e: Expr, want: Interval| -> Result<bool, CodegenError> {
            let r = b.range_of(e)?;
            if want.contains_interval(r) {
                return Ok(true);
            }
            if want.intersect(r).is_empty() {
                return Ok(false);
            }
            guard.conds.push((e, want.lo, want.hi));
            Ok(true)
        };
        for (i, e) in index.iter().enumerate() {
            if !check(self, *e, m.map.dims()[i])? {
                return Ok(None);
            }
        }
        for c in m.map.constraints() {
            let e = self.simplify(subst(c.expr));
            if !check(self, e, c.interval)? {
                return Ok(None);
            }
        }
        Ok(Some(Applied {
            index: result,
            guard,
            ranges,
        }))
    }

    /// Operand `j` of an op that reads it everywhere, through one map without loops.
    pub(crate) fn plain_operand(
        &mut self,
        (comp, id): (CompId, InstrId),
        g: &GroupedIndexing,
        j: usize,
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let op = instr.opcode();
        let operand = instr.operands()[j];
        let m = self.single(op, g, j)?.ok_or_else(|| {
            CodegenError::Internal(format!("operand {j} of `{}` is never read", instr.name()))
        })?;
        let a = self.apply(m, index, None, guarded, out)?.ok_or_else(|| {
            CodegenError::Internal(format!("operand {j} of `{}` is never read", instr.name()))
        })?;
        if !a.guard.is_true() || !a.ranges.is_empty() {
            return Err(self.unsupported(
                op.as_str(),
                format!("operand {j} read conditionally or over a range"),
            ));
        }
        self.values(comp, operand, &a.index, guarded, out)
    }

    /// The value of the first branch whose guard holds, else of the fallback. Outside
    /// guarded regions this is statement code (`if`/`else` assigning one variable, each
    /// branch binding its own values); inside one, a conditional expression.
    fn choose(
        &mut self,
        comp: CompId,
        branches: Vec<Branch>,
        fallback: Fallback,
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        if branches.iter().any(|(_, a)| !a.ranges.is_empty())
            || matches!(&fallback, Fallback::Operand((_, a)) if !a.ranges.is_empty())
        {
            return Err(self.unsupported("indexing", "a conditional access over a range"));
        }
        if guarded {
            let mut v = match fallback {
                Fallback::Value(v) => v,
                Fallback::Operand((op, a)) => self.branch_value(comp, op, &a, true, out)?,
            };
            for (op, a) in branches.into_iter().rev() {
                let t = self.branch_value(comp, op, &a, true, out)?;
                v = if a.guard.is_true() {
                    t
                } else {
                    Value::Cond(a.guard, Box::new(t), Box::new(v))
                };
            }
            return Ok(v);
        }
        let ty = match (&fallback, branches.first()) {
            (Fallback::Value(v), _) => v.ty(),
            (Fallback::Operand((op, _)), _) => self.elem_type(comp, *op)?,
        };
        let var = self.new_var(ty);
        out.push(Stmt::Decl {
            var,
            value: zero(ty),
        });
        let body = self.branch_stmts(comp, &branches, &fallback, var)?;
        out.extend(body);
        Ok(Value::Var(var, ty))
    }

    /// The value of `op` at an access, built under the access's guard.
    fn branch_value(
        &mut self,
        comp: CompId,
        op: InstrId,
        a: &Applied,
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        self.guards.push(a.guard.clone());
        let v = self.value(comp, op, &a.index, guarded, out);
        self.guards.pop();
        v
    }

    /// Statements assigning `var` the value of the first branch whose guard holds.
    fn branch_stmts(
        &mut self,
        comp: CompId,
        branches: &[Branch],
        fallback: &Fallback,
        var: crate::kir::VarId,
    ) -> Result<Vec<Stmt>, CodegenError> {
        let assign_in_frame =
            |b: &mut Self, op: InstrId, a: &Applied| -> Result<Vec<Stmt>, CodegenError> {
                let mut body = Vec::new();
                b.memo.push(Default::default());
                let v = b.branch_value(comp, op, a, false, &mut body);
                b.memo.pop();
                body.push(Stmt::Assign { var, value: v? });
                Ok(body)
            };
        let Some(((op, a), rest)) = branches.split_first() else {
            return match fallback {
                Fallback::Value(v) => Ok(vec![Stmt::Assign {
                    var,
                    value: v.clone(),
                }]),
                Fallback::Operand((op, a)) => assign_in_frame(self, *op, a),
            };
        };
        let body = assign_in_frame(self, *op, a)?;
        if a.guard.is_true() {
            return Ok(body);
        }
        let else_body = self.branch_stmts(comp, rest, fallback, var)?;
        Ok(vec![Stmt::If {
            guard: a.guard.clone(),
            body,
            else_body,
        }])
    }

    /// Operand `top` of `at` read where its map's domain holds, else operand `under` read
    /// everywhere (pad over its padding value, dynamic-update-slice's update over its base).
    #[allow(clippy::too_many_arguments)]
    fn overlay(
        &mut self,
        at: (CompId, InstrId),
        g: &GroupedIndexing,
        top: usize,
        under: usize,
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let (comp, id) = at;
        let instr = self.module.computation(comp).instr(id);
        let fallback = self
            .plain_operand(at, g, under, index, guarded, out)?
            .remove(0);
        let a = match self.single(instr.opcode(), g, top)? {
            Some(m) => self.apply(m, index, None, guarded, out)?,
            None => None,
        };
        let branches: Vec<Branch> = a.into_iter().map(|a| (instr.operands()[top], a)).collect();
        Ok(vec![self.choose(
            comp,
            branches,
            Fallback::Value(fallback),
            guarded,
            out,
        )?])
    }

    fn compute(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        if let Some(leaf) = self.leaves.get(&(comp, id)).cloned() {
            return Ok(vec![match leaf {
                Leaf::Value(v) => v,
                Leaf::Buffer(b) => self.load(b, index),
            }]);
        }
        let op = instr.opcode();
        if !scalar_ops::computes(op) {
            return Err(self.unsupported(op.as_str(), NO_ELEMENTAL_EMITTER));
        }
        match op {
            Opcode::Parameter => {
                return Err(CodegenError::Internal(format!(
                    "kernel of `{}`: parameter `{}` has no buffer",
                    self.instr_name,
                    instr.name()
                )))
            }
            Opcode::Constant => return Ok(vec![self.constant(comp, id, index)?]),
            // One device: every replica and partition id is 0 (as the evaluator has it).
            Opcode::ReplicaId | Opcode::PartitionId => {
                let ty = self.elem_type(comp, id)?;
                return Ok(vec![Value::Const(ty, crate::kir::Const::Int(0))]);
            }
            Opcode::Iota => {
                let ty = self.elem_type(comp, id)?;
                let dim = instr.iota_dimension().unwrap_or(0);
                let e = usize::try_from(dim)
                    .ok()
                    .and_then(|d| index.get(d))
                    .ok_or_else(|| self.unsupported("iota", "iota dimension out of range"))?;
                return Ok(vec![Value::Convert(Box::new(Value::Index(*e)), ty)]);
            }
            Opcode::Reduce | Opcode::ReduceWindow => {
                if guarded {
                    return Err(
                        self.unsupported(op.as_str(), "a reduction inside a guarded region")
                    );
                }
                return self.reduce(comp, id, index, out);
            }
            Opcode::Dot | Opcode::Convolution => {
                if guarded {
                    return Err(
                        self.unsupported(op.as_str(), "a contraction inside a guarded region")
                    );
                }
                return Ok(vec![self.dot(comp, id, index, out)?]);
            }
            _ => {}
        }
        let g = self.maps(comp, id)?;
        let n = instr.operands().len();
        if let Some(u) = scalar_ops::unary(op) {
            let ty = self.elem_type(comp, id)?;
            let a = self
                .plain_operand((comp, id), &g, 0, index, guarded, out)?
                .remove(0);
            if !a.ty().is_complex() && matches!(u, UnOp::Real | UnOp::Imag) {
                // `real`/`imag` of a real value: itself, or zero.
                return Ok(vec![if u == UnOp::Real { a } else { zero(ty) }]);
            }
            if a.ty().is_complex() && !scalar_ops::unary_on_complex(u) {
                return Err(self.unsupported(op.as_str(), format!("on {}", a.ty())));
            }
            return Ok(vec![Value::Unary(u, Box::new(a), ty)]);
        }
        if op == Opcode::ReducePrecision {
            let ty = self.elem_type(comp, id)?;
            let (exp_bits, man_bits) = instr
                .reduce_precision_bits()
                .filter(|&(e, m)| e >= 1 && m >= 0)
                .ok_or_else(|| {
                    self.unsupported("reduce-precision", "bad exponent/mantissa bits")
                })?;
            let a = self
                .plain_operand((comp, id), &g, 0, index, guarded, out)?
                .remove(0);
            if !ty.is_float() || a.ty() != ty {
                return Err(self.unsupported("reduce-precision", "a non-float operand"));
            }
            // Intermediate bit patterns are bound to variables (outside guarded regions,
            // where statements may not be emitted, they stay one expression).
            let mut bind = |v: Value| -> Value {
                if guarded || v.is_trivial() {
                    return v;
                }
                let t = v.ty();
                let var = self.new_var(t);
                out.push(Stmt::Let { var, value: v });
                Value::Var(var, t)
            };
            return Ok(vec![if matches!(ty, ScalarType::F32 | ScalarType::F64) {
                reduce_precision(a, exp_bits, man_bits, &mut bind)
            } else {
                // Small floats: reduced in f32, rounded back (as the evaluator does).
                let w = bind(Value::Convert(Box::new(a), ScalarType::F32));
                Value::Convert(
                    Box::new(reduce_precision(w, exp_bits, man_bits, &mut bind)),
                    ty,
                )
            }]);
        }
        if let Some(bop) = scalar_ops::binary(op) {
            let ty = self.elem_type(comp, id)?;
            let a = self
                .plain_operand((comp, id), &g, 0, index, guarded, out)?
                .remove(0);
            let b = self
                .plain_operand((comp, id), &g, 1, index, guarded, out)?
                .remove(0);
            if ty.is_complex() && !scalar_ops::binary_on_complex(bop) {
                return Err(self.unsupported(op.as_str(), format!("on {ty}")));
            }
            return Ok(vec![Value::Binary(bop, Box::new(a), Box::new(b), ty)]);
        }
        match op {
            Opcode::Broadcast
            | Opcode::Transpose
            | Opcode::Reshape
            | Opcode::Bitcast
            | Opcode::Slice
            | Opcode::Reverse
            | Opcode::Copy
            | Opcode::DynamicSlice
            | Opcode::Gather => {
                let v = self.plain_operand((comp, id), &g, 0, index, guarded, out)?;
                let ty = self.elem_type(comp, id)?;
                // XLA's layout-level bitcast may also reinterpret the element type (of the
                // same width): a bitcast-convert of the element read.
                if op == Opcode::Bitcast
                    && v.len() == 1
                    && v[0].ty() != ty
                    && v[0].ty().byte_width() == ty.byte_width()
                    && v[0].ty() != ScalarType::Pred
                    && ty != ScalarType::Pred
                {
                    return Ok(vec![Value::BitcastConvert(Box::new(v[0].clone()), ty)]);
                }
                if v.len() != 1 || v[0].ty() != ty {
                    return Err(self.unsupported(op.as_str(), "changes the element type"));
                }
                Ok(v)
            }
            Opcode::GetTupleElement => {
                let k = instr.tuple_index().unwrap_or(0);
                let v = self.plain_operand((comp, id), &g, 0, index, guarded, out)?;
                let k = usize::try_from(k)
                    .ok()
                    .filter(|k| *k < v.len())
                    .ok_or_else(|| {
                        CodegenError::Internal(format!("tuple index {k} out of range"))
                    })?;
                Ok(vec![v[k].clone()])
            }
            Opcode::Tuple => {
                let groups = self.all_maps(comp, id)?;
                let mut vals = Vec::with_capacity(n);
                for j in 0..n {
                    let gj = groups.get(j).ok_or_else(|| {
                        CodegenError::Internal(format!("tuple output {j} has no maps"))
                    })?;
                    let mut v = self.plain_operand((comp, id), gj, j, index, guarded, out)?;
                    if v.len() != 1 {
                        return Err(self.unsupported("tuple", "nested tuples"));
                    }
                    vals.push(v.remove(0));
                }
                Ok(vals)
            }
            Opcode::Convert => {
                let ty = self.elem_type(comp, id)?;
                let a = self
                    .plain_operand((comp, id), &g, 0, index, guarded, out)?
                    .remove(0);
                Ok(vec![Value::Convert(Box::new(a), ty)])
            }
            Opcode::BitcastConvert => {
                let ty = self.elem_type(comp, id)?;
                let from = self.elem_type(comp, instr.operands()[0])?;
                if from.byte_width() != ty.byte_width() {
                    return self.reinterpret_width(comp, id, (from, ty), index, guarded, out);
                }
                let a = self
                    .plain_operand((comp, id), &g, 0, index, guarded, out)?
                    .remove(0);
                if a.ty().byte_width() != ty.byte_width()
                    || a.ty() == ScalarType::Pred
                    || ty == ScalarType::Pred
                {
                    return Err(
                        self.unsupported("bitcast-convert", "between types of different widths")
                    );
                }
                Ok(vec![Value::BitcastConvert(Box::new(a), ty)])
            }
            Opcode::Compare => {
                let a = self
                    .plain_operand((comp, id), &g, 0, index, guarded, out)?
                    .remove(0);
                let b = self
                    .plain_operand((comp, id), &g, 1, index, guarded, out)?
                    .remove(0);
                let dir = instr
                    .comparison_direction()
                    .ok_or_else(|| self.unsupported("compare", "no direction"))?;
                let total = a.ty().is_float()
                    && instr.comparison_type() == Some(hlo::attrs::ComparisonType::TotalOrder);
                if a.ty().is_complex() && !scalar_ops::compare_on_complex(dir) {
                    return Err(
                        self.unsupported("compare", "an ordered comparison of complex values")
                    );
                }
                Ok(vec![Value::Compare(
                    scalar_ops::compare(dir),
                    total,
                    Box::new(a),
                    Box::new(b),
                )])
            }
            Opcode::Select => {
                let p = self
                    .plain_operand((comp, id), &g, 0, index, guarded, out)?
                    .remove(0);
                let a = self
                    .plain_operand((comp, id), &g, 1, index, guarded, out)?
                    .remove(0);
                let b = self
                    .plain_operand((comp, id), &g, 2, index, guarded, out)?
                    .remove(0);
                Ok(vec![Value::Select(Box::new(p), Box::new(a), Box::new(b))])
            }
            Opcode::Clamp => {
                let ty = self.elem_type(comp, id)?;
                let lo = self
                    .plain_operand((comp, id), &g, 0, index, guarded, out)?
                    .remove(0);
                let x = self
                    .plain_operand((comp, id), &g, 1, index, guarded, out)?
                    .remove(0);
                let hi = self
                    .plain_operand((comp, id), &g, 2, index, guarded, out)?
                    .remove(0);
                let m = Value::Binary(BinOp::Max, Box::new(x), Box::new(lo), ty);
                Ok(vec![Value::Binary(
                    BinOp::Min,
                    Box::new(m),
                    Box::new(hi),
                    ty,
                )])
            }
            // The operand where its map's domain holds, else the padding value.
            Opcode::Pad => self.overlay((comp, id), &g, 0, 1, index, guarded, out),
            // The update where its map's domain holds, else the base.
            Opcode::DynamicUpdateSlice => self.overlay((comp, id), &g, 1, 0, index, guarded, out),
            Opcode::Concatenate => {
                // Each operand is chosen by its map's domain; the last one read is the
                // fallback.
                let mut branches = Vec::with_capacity(n);
                for j in 0..n {
                    let a = match self.single(op, &g, j)? {
                        Some(m) => self.apply(m, index, None, guarded, out)?,
                        None => None,
                    };
                    if let Some(a) = a {
                        branches.push((instr.operands()[j], a));
                    }
                }
                let last = branches
                    .pop()
                    .ok_or_else(|| CodegenError::Internal("concatenate reads no operand".into()))?;
                Ok(vec![self.choose(
                    comp,
                    branches,
                    Fallback::Operand(last),
                    guarded,
                    out,
                )?])
            }
            Opcode::Map => self.map(comp, id, &g, index, guarded, out),
            _ => Err(CodegenError::Internal(format!(
                "`{}` is in the elemental table but has no emitter",
                op.as_str()
            ))),
        }
    }

    fn load(&mut self, b: usize, index: &[Expr]) -> Value {
        let offset = self.offset(b, index);
        let guard = Guard {
            conds: self
                .guards
                .iter()
                .flat_map(|g| g.conds.iter().cloned())
                .collect(),
        };
        self.note(b, index, &guard);
        Value::Load {
            buf: b,
            offset,
            ty: self.buffers[b].ty,
        }
    }

    fn constant(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
    ) -> Result<Value, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let ty = self.elem_type(comp, id)?;
        let lit = instr
            .literal()
            .and_then(|l| l.as_array())
            .ok_or_else(|| self.unsupported("constant", "an elided or non-array constant"))?;
        if lit.data().len() == 1 {
            return scalar_const(lit, ty)
                .ok_or_else(|| self.unsupported("constant", "constant value"));
        }
        let b = self.add_buffer(
            instr.name(),
            instr.shape(),
            Access::In,
            BufferSource::Constant(comp, id),
        )?;
        self.leaves.insert((comp, id), Leaf::Buffer(b));
        Ok(self.load(b, index))
    }

    /// Nests `body` in loops over `ranges` (the first outermost).
    pub fn wrap_loops(&self, ranges: &[Var], body: Vec<Stmt>) -> Vec<Stmt> {
        let mut body = body;
        for r in ranges.iter().rev() {
            let iv = self.ranges[r.index as usize];
            body = vec![Stmt::Loop {
                kind: crate::kir::LoopKind::Serial,
                var: *r,
                lo: iv.lo,
                hi: iv.hi,
                body,
            }];
        }
        body
    }
}

/// The value of a one-element literal as a kernel constant.
fn scalar_const(lit: &hlo::literal::ArrayLiteral, ty: ScalarType) -> Option<Value> {
    use hlo::literal::ArrayData as D;
    let c = match lit.data() {
        D::Pred(v) => Const::Bool(*v.first()?),
        D::S8(v) => Const::Int(i128::from(*v.first()?)),
        D::S16(v) => Const::Int(i128::from(*v.first()?)),
        D::S32(v) => Const::Int(i128::from(*v.first()?)),
        D::S64(v) => Const::Int(i128::from(*v.first()?)),
        D::U8(v) => Const::Int(i128::from(*v.first()?)),
        D::U16(v) => Const::Int(i128::from(*v.first()?)),
        D::U32(v) => Const::Int(i128::from(*v.first()?)),
        D::U64(v) => Const::Int(i128::from(*v.first()?)),
        D::F32(_) | D::F64(_) | D::Bits16(_) | D::Bits8(_) => Const::Float(lit.get_f64(0)?),
        D::C64(v) => {
            let [re, im] = *v.first()?;
            Const::Complex(f64::from(re), f64::from(im))
        }
        D::C128(v) => {
            let [re, im] = *v.first()?;
            Const::Complex(re, im)
        }
    };
    Some(Value::Const(ty, c))
}
