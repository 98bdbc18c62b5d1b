//! The interpreter loop: evaluates a computation's instructions in def-before-use order,
//! keeps each value until its last use, and dispatches every opcode.

use super::data::array;
use super::error::EvalError;
use super::{async_chain, control, convert, elementwise as ew, movement as mv, reduce};
use crate::numeric::{self, KernelError};
use hlo::ir::Computation;
use hlo::literal::ArrayLiteral;
use hlo::shape::Shape;
use hlo::{CompId, InstrId, Instruction, Literal, Module, Opcode};

/// Default largest number of iterations one `while` loop may run (a million).
pub const DEFAULT_WHILE_LIMIT: u64 = 1_000_000;

/// Evaluates computations of one module.
pub struct Evaluator<'m> {
    module: &'m Module,
    limit: u64,
    while_limit: u64,
    /// Bytes the enclosing activations hold (their values and arguments) while a nested
    /// computation runs: the limit bounds every live value of the run together.
    outer_live: u64,
    /// The device this evaluator runs as in an N-device run (none: a lone device).
    device: Option<crate::device::Device>,
}

/// Values of one computation activation.
struct Frame {
    values: Vec<Option<Literal>>,
    uses: Vec<u32>,
    args: Vec<Option<Literal>>,
    /// Bytes of the values and arguments this activation holds.
    live: u64,
}

/// Bytes of a value's elements (a tuple's leaves together).
fn literal_bytes(l: &Literal) -> u64 {
    match l {
        Literal::Array(a) => a
            .shape()
            .byte_size()
            .map_or(u64::MAX, |b| u64::try_from(b).unwrap_or(u64::MAX)),
        Literal::Tuple(t) => t.iter().map(literal_bytes).fold(0, u64::saturating_add),
        _ => 0,
    }
}

impl Frame {
    /// The value of `id`, taken when this is its last use, cloned otherwise.
    fn take(&mut self, id: InstrId, what: &str) -> Result<Literal, EvalError> {
        let i = id.index();
        let uses = self
            .uses
            .get_mut(i)
            .ok_or_else(|| EvalError::invalid(what, "unknown operand"))?;
        *uses = uses.saturating_sub(1);
        let slot = &mut self.values[i];
        let v = if *uses == 0 {
            let v = slot.take();
            // Moved to the consumer, whose result is counted when it is stored.
            let gone = v.as_ref().map_or(0, literal_bytes);
            self.live = self.live.saturating_sub(gone);
            v
        } else {
            slot.clone()
        };
        v.ok_or_else(|| EvalError::invalid(what, "operand used before it is defined"))
    }

    fn get(&self, id: InstrId, what: &str) -> Result<&Literal, EvalError> {
        self.values
            .get(id.index())
            .and_then(Option::as_ref)
            .ok_or_else(|| EvalError::invalid(what, "operand used before it is defined"))
    }

    fn release(&mut self, id: InstrId) {
        let i = id.index();
        if let Some(u) = self.uses.get_mut(i) {
            *u = u.saturating_sub(1);
            if *u == 0 {
                let gone = self.values[i].take().as_ref().map_or(0, literal_bytes);
                self.live = self.live.saturating_sub(gone);
            }
        }
    }
}

impl<'m> Evaluator<'m> {
    /// An evaluator with the default size limit
    /// ([`default_size_limit`](crate::memory::default_size_limit): half of the machine's
    /// available memory).
    pub fn new(module: &'m Module) -> Evaluator<'m> {
        Evaluator {
            module,
            limit: crate::memory::default_size_limit(),
            while_limit: DEFAULT_WHILE_LIMIT,
            outer_live: 0,
            device: None,
        }
    }

    /// Runs as `device` of an N-device run: its replica and partition ids, and the
    /// collectives it meets the other devices at.
    pub fn with_device(mut self, device: crate::device::Device) -> Evaluator<'m> {
        self.device = Some(device);
        self
    }

    /// The device this evaluator runs as, if any.
    pub fn device(&self) -> Option<&crate::device::Device> {
        self.device.as_ref()
    }

    /// Sets the most bytes the run's live values may take together (arguments, every
    /// value still to be used, the result being computed; nested computations included):
    /// an instruction whose result would pass it fails before allocating.
    pub fn with_size_limit(mut self, bytes: u64) -> Evaluator<'m> {
        self.limit = bytes;
        self
    }

    /// The most bytes the run's live values may take together.
    pub fn size_limit(&self) -> u64 {
        self.limit
    }

    /// Sets the largest number of iterations one `while` loop may run.
    pub fn with_while_limit(mut self, iterations: u64) -> Evaluator<'m> {
        self.while_limit = iterations;
        self
    }

    /// The largest number of iterations one `while` loop may run.
    pub fn while_limit(&self) -> u64 {
        self.while_limit
    }

    /// The module being evaluated.
    pub fn module(&self) -> &'m Module {
        self.module
    }

    /// Evaluates the entry computation; checks the arguments against its parameters.
    pub fn run(&mut self, args: &[Literal]) -> Result<Literal, EvalError> {
        let entry = self.module.entry();
        check_args(entry, args)?;
        // The caller keeps its arguments while the evaluator runs on copies.
        let held = args.iter().map(literal_bytes).fold(0, u64::saturating_add);
        self.outer_live = held;
        let r = self.call(self.module.entry_id(), args.to_vec());
        self.outer_live = 0;
        r
    }

    /// Evaluates computation `comp` on `args` (by value: they become its parameters).
    pub fn call(&mut self, comp: CompId, args: Vec<Literal>) -> Result<Literal, EvalError> {
        let module = self.module;
        let c = module
            .get_computation(comp)
            .ok_or_else(|| EvalError::invalid("?", "call of an unknown computation"))?;
        let order = c.def_before_use_order();
        let cap = order.iter().map(|i| i.index() + 1).max().unwrap_or(0);
        let live = args.iter().map(literal_bytes).fold(0, u64::saturating_add);
        let mut frame = Frame {
            values: (0..cap).map(|_| None).collect(),
            uses: vec![0; cap],
            args: args.into_iter().map(Some).collect(),
            live,
        };
        let base = self.outer_live;
        for &id in order.iter() {
            for &op in c.operands(id) {
                if let Some(u) = frame.uses.get_mut(op.index()) {
                    *u += 1;
                }
            }
        }
        let root = c.root();
        if let Some(u) = frame.uses.get_mut(root.index()) {
            *u += 1;
        }
        for &id in order.iter() {
            let instr = c.instr(id);
            if frame.uses.get(id.index()).copied().unwrap_or(0) == 0
                && id != root
                && !has_effect(instr)
            {
                continue; // dead code
            }
            // Parameters, tuples and their elements, copies: the operand's own value (the
            // evaluator moves it), so only the single-result bound applies.
            let aliases = matches!(
                instr.opcode(),
                Opcode::Parameter
                    | Opcode::Tuple
                    | Opcode::GetTupleElement
                    | Opcode::Copy
                    | Opcode::OptimizationBarrier
                    | Opcode::Domain
                    | Opcode::AddDependency
            );
            let live = if aliases {
                0
            } else {
                base.saturating_add(frame.live)
            };
            self.check_size(instr, live)?;
            self.outer_live = base.saturating_add(frame.live);
            let value = self.eval_instr(c, instr, &mut frame);
            self.outer_live = base;
            let value = value?;
            frame.live = frame.live.saturating_add(literal_bytes(&value));
            frame.values[id.index()] = Some(value);
        }
        frame
            .values
            .get_mut(root.index())
            .and_then(Option::take)
            .ok_or_else(|| EvalError::invalid(c.name(), "the root was not evaluated"))
    }

    /// Fails unless `instr`'s result fits under the limit beside the `live` bytes the run
    /// already holds.
    fn check_size(&self, instr: &Instruction, live: u64) -> Result<(), EvalError> {
        let bytes = match instr.shape().byte_size() {
            Ok(b) => u64::try_from(b).unwrap_or(u64::MAX),
            Err(_) => u64::MAX,
        };
        if bytes > self.limit {
            return Err(EvalError::TooLarge {
                instr: instr.name().to_string(),
                bytes,
                limit: self.limit,
            });
        }
        if live.saturating_add(bytes) > self.limit {
            return Err(EvalError::LiveTooLarge {
                instr: instr.name().to_string(),
                bytes,
                live,
                limit: self.limit,
            });
        }
        Ok(())
    }

    /// Evaluates one instruction; operands come from (and are released in) `frame`.
    fn eval_instr(
        &mut self,
        c: &Computation,
        instr: &Instruction,
        frame: &mut Frame,
    ) -> Result<Literal, EvalError> {
        let what = instr.name();
        let ops = instr.operands();
        match instr.opcode() {
            Opcode::Parameter => {
                let n = instr.parameter_number().unwrap_or(-1);
                let slot = usize::try_from(n).ok().and_then(|n| frame.args.get_mut(n));
                let slot = slot.ok_or_else(|| {
                    EvalError::invalid(what, format!("no argument for parameter {n}"))
                })?;
                let v = slot.take().ok_or_else(|| {
                    EvalError::invalid(what, format!("parameter {n} appears twice"))
                })?;
                // Counted again when stored as the parameter's value.
                frame.live = frame.live.saturating_sub(literal_bytes(&v));
                return Ok(v);
            }
            Opcode::GetTupleElement => {
                let t = frame.take(op(ops, 0, what)?, what)?;
                let i = instr.tuple_index().unwrap_or(-1);
                return match t {
                    Literal::Tuple(mut parts) => {
                        let i = usize::try_from(i).ok().filter(|&i| i < parts.len());
                        let i =
                            i.ok_or_else(|| EvalError::invalid(what, "tuple index out of range"))?;
                        Ok(parts.swap_remove(i))
                    }
                    _ => Err(EvalError::invalid(what, "get-tuple-element of a non-tuple")),
                };
            }
            Opcode::Tuple => {
                let parts = ops
                    .iter()
                    .map(|&o| frame.take(o, what))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(Literal::Tuple(parts));
            }
            Opcode::AsyncUpdate => {
                let prev = frame.take(op(ops, 0, what)?, what)?;
                let bound = ops[1..]
                    .iter()
                    .map(|&o| frame.take(o, what))
                    .collect::<Result<Vec<_>, _>>()?;
                return async_chain::update(instr, prev, bound);
            }
            Opcode::Copy | Opcode::OptimizationBarrier | Opcode::Domain | Opcode::AddDependency => {
                let v = frame.take(op(ops, 0, what)?, what)?;
                for &o in &ops[1..] {
                    frame.release(o);
                }
                return Ok(v);
            }
            Opcode::DynamicUpdateSlice => {
                let a = frame.take(op(ops, 0, what)?, what)?;
                let Literal::Array(a) = a else {
                    return Err(EvalError::invalid(what, "expected an array operand"));
                };
                let r = {
                    let upd = array(frame.get(op(ops, 1, what)?, what)?, what)?;
                    let idx = ops[2..]
                        .iter()
                        .map(|&o| frame.get(o, what).and_then(|l| array(l, what)))
                        .collect::<Result<Vec<_>, _>>()?;
                    mv::dynamic_update_slice(a, upd, &idx, instr.shape(), what)?
                };
                for &o in &ops[1..] {
                    frame.release(o);
                }
                return Ok(r);
            }
            Opcode::While => {
                let init = frame.take(op(ops, 0, what)?, what)?;
                return control::run_while(self, instr, init);
            }
            _ => {}
        }
        let result = {
            let vals = ops
                .iter()
                .map(|&o| frame.get(o, what))
                .collect::<Result<Vec<_>, _>>()?;
            self.eval_op(c, instr, &vals)?
        };
        for &o in ops {
            frame.release(o);
        }
        Ok(result)
    }

    /// Evaluates an instruction whose operands are borrowed.
    fn eval_op(
        &mut self,
        c: &Computation,
        instr: &Instruction,
        vals: &[&Literal],
    ) -> Result<Literal, EvalError> {
        let what = instr.name();
        let shape = instr.shape();
        let arr = |i: usize| -> Result<&ArrayLiteral, EvalError> {
            let v = vals
                .get(i)
                .ok_or_else(|| EvalError::invalid(what, format!("missing operand {i}")))?;
            array(v, what)
        };
        let dims_attr = || {
            instr
                .dimensions()
                .ok_or_else(|| EvalError::invalid(what, "missing dimensions="))
        };
        let opcode = instr.opcode();
        if crate::collectives::handles(opcode)
            || opcode == Opcode::CustomCall
                && crate::spmd_calls::handles(instr.custom_call_target())
        {
            let had = self.device.is_some();
            let mut dev = self
                .device
                .take()
                .unwrap_or_else(crate::device::Device::single);
            let r = if opcode == Opcode::CustomCall {
                crate::spmd_calls::evaluate(&mut dev, self.module, c, instr, vals)
            } else {
                let mut call = |c: CompId, a: Vec<Literal>| self.call(c, a);
                crate::collectives::evaluate(&mut dev, instr, vals, &mut call)
            };
            if had {
                self.device = Some(dev);
            }
            return r;
        }
        if numeric::handles(opcode, instr) {
            let module = self.module;
            let mut calls = KernelCalls { ev: self };
            return numeric::evaluate(module, instr, vals, &mut calls)
                .map_err(|e| kernel_error(e, opcode, what));
        }
        use Opcode as O;
        match opcode {
            O::Constant => match instr.literal() {
                Some(Literal::Elided(_)) | None => Err(EvalError::invalid(
                    what,
                    "the constant's value is elided ({...})",
                )),
                // One value for every element: stored once in the module, every element
                // here (the result's size was checked against the limit before).
                Some(l) => Ok(l.expanded()),
            },
            O::Abs
            | O::Negate
            | O::Exp
            | O::Expm1
            | O::Log
            | O::Log1p
            | O::Sqrt
            | O::Rsqrt
            | O::Cbrt
            | O::Sin
            | O::Cos
            | O::Tan
            | O::Tanh
            | O::Sinh
            | O::Cosh
            | O::Asin
            | O::Acos
            | O::Atan
            | O::Asinh
            | O::Acosh
            | O::Atanh
            | O::Floor
            | O::Ceil
            | O::RoundNearestAfz
            | O::RoundNearestEven
            | O::Sign
            | O::Logistic
            | O::Erf
            | O::IsFinite
            | O::Not
            | O::PopulationCount
            | O::Clz
            | O::Real
            | O::Imag => ew::unary(opcode, arr(0)?, shape, what),
            O::Add
            | O::Subtract
            | O::Multiply
            | O::Divide
            | O::Remainder
            | O::Maximum
            | O::Minimum
            | O::Power
            | O::Atan2
            | O::And
            | O::Or
            | O::Xor
            | O::ShiftLeft
            | O::ShiftRightLogical
            | O::ShiftRightArithmetic
            | O::Complex => ew::binary(opcode, arr(0)?, arr(1)?, shape, what),
            O::Compare => {
                let dir = instr
                    .comparison_direction()
                    .ok_or_else(|| EvalError::invalid(what, "missing direction="))?;
                ew::compare(arr(0)?, arr(1)?, dir, instr.comparison_type(), shape, what)
            }
            O::Select => ew::select(arr(0)?, arr(1)?, arr(2)?, shape, what),
            O::Clamp => ew::clamp(arr(0)?, arr(1)?, arr(2)?, shape, what),
            O::Convert => convert::convert(arr(0)?, shape, what),
            O::BitcastConvert => convert::bitcast_convert(arr(0)?, shape, what),
            O::ReducePrecision => {
                let (e, m) = instr.reduce_precision_bits().ok_or_else(|| {
                    EvalError::invalid(what, "missing exponent_bits/mantissa_bits")
                })?;
                convert::reduce_precision(arr(0)?, e, m, shape, what)
            }
            O::Broadcast => mv::broadcast(arr(0)?, dims_attr()?, shape, what),
            O::Reshape => mv::reshape(arr(0)?, shape, what),
            O::Bitcast => {
                // Layouts come from the instructions: a value's own shape may carry the
                // layout of an earlier instruction (copy, get-tuple-element, parameter).
                let from = instr.operand(0).map(|o| c.instr(o).shape());
                let from = from.ok_or_else(|| EvalError::invalid(what, "missing operand 0"))?;
                mv::bitcast(arr(0)?, from, shape, what)
            }
            O::Transpose => mv::transpose(arr(0)?, dims_attr()?, shape, what),
            O::Reverse => mv::reverse(arr(0)?, dims_attr()?, shape, what),
            O::Slice => {
                let sl = instr
                    .slice()
                    .ok_or_else(|| EvalError::invalid(what, "missing slice="))?;
                mv::slice(arr(0)?, sl, shape, what)
            }
            O::DynamicSlice => {
                let sizes = instr
                    .dynamic_slice_sizes()
                    .ok_or_else(|| EvalError::invalid(what, "missing dynamic_slice_sizes="))?;
                let idx = (1..vals.len()).map(arr).collect::<Result<Vec<_>, _>>()?;
                mv::dynamic_slice(arr(0)?, &idx, sizes, shape, what)
            }
            O::Concatenate => {
                let d = dims_attr()?;
                let all = (0..vals.len()).map(arr).collect::<Result<Vec<_>, _>>()?;
                mv::concatenate(&all, *d.first().unwrap_or(&-1), shape, what)
            }
            O::Pad => {
                let cfg = instr
                    .padding()
                    .ok_or_else(|| EvalError::invalid(what, "missing padding="))?;
                mv::pad(arr(0)?, arr(1)?, cfg, shape, what)
            }
            O::Iota => mv::iota(shape, instr.iota_dimension().unwrap_or(0), what),
            O::Reduce => {
                let comp = instr
                    .to_apply()
                    .ok_or_else(|| EvalError::invalid(what, "missing to_apply="))?;
                let n = vals.len() / 2;
                let inputs = (0..n).map(arr).collect::<Result<Vec<_>, _>>()?;
                let inits = (n..2 * n).map(arr).collect::<Result<Vec<_>, _>>()?;
                let module = self.module;
                let mut call = |c: CompId, a: Vec<Literal>| self.call(c, a);
                reduce::reduce(
                    module,
                    &inputs,
                    &inits,
                    dims_attr()?,
                    comp,
                    shape,
                    &mut call,
                    what,
                )
            }
            O::Map => {
                let comp = instr
                    .to_apply()
                    .ok_or_else(|| EvalError::invalid(what, "missing to_apply="))?;
                let inputs = (0..vals.len()).map(arr).collect::<Result<Vec<_>, _>>()?;
                let mut call = |c: CompId, a: Vec<Literal>| self.call(c, a);
                reduce::map(&inputs, comp, shape, &mut call, what)
            }
            O::Call | O::Fusion => {
                let comp = instr
                    .to_apply()
                    .or_else(|| instr.calls())
                    .ok_or_else(|| EvalError::invalid(what, "missing to_apply=/calls="))?;
                self.call(comp, vals.iter().map(|&v| v.clone()).collect())
            }
            O::Conditional => control::conditional(self, instr, vals),
            O::Scan => control::scan(self, instr, vals),
            O::AsyncStart => async_chain::start(instr, vals),
            O::AsyncDone => async_chain::done(self, instr, vals),
            O::CopyStart => {
                let v = vals
                    .first()
                    .ok_or_else(|| EvalError::invalid(what, "missing operand"))?;
                let ctx = control::zeros(
                    shape.tuple_shapes().get(2).unwrap_or(&Shape::tuple(vec![])),
                    what,
                )?;
                Ok(Literal::Tuple(vec![(*v).clone(), (*v).clone(), ctx]))
            }
            O::CopyDone => control::tuple_part(vals, 0, what),
            O::AfterAll => Ok(Literal::Elided(Shape::token())),
            O::ReplicaId | O::PartitionId => {
                let id = match (&self.device, opcode) {
                    (None, _) => 0,
                    (Some(d), O::ReplicaId) => d.replica,
                    (Some(d), _) => d.partition,
                };
                super::data::make(shape, hlo::literal::ArrayData::U32(vec![id as u32]), what)
            }
            O::GetDimensionSize => {
                let d = dims_attr()?;
                let dim = d.first().and_then(|&d| {
                    vals.first()?
                        .shape()
                        .dims()
                        .get(usize::try_from(d).ok()?)
                        .copied()
                });
                let dim = dim.ok_or_else(|| EvalError::invalid(what, "bad dimension"))?;
                super::data::make(shape, hlo::literal::ArrayData::S32(vec![dim as i32]), what)
            }
            _ => Err(EvalError::Unsupported {
                opcode,
                instr: what.to_string(),
                detail: instr
                    .custom_call_target()
                    .map(|t| format!("custom_call_target=\"{t}\"")),
            }),
        }
    }
}

/// Lets control flow (`while`, `conditional`, `scan`, `async-start`) run its computations.
impl control::Interpreter for Evaluator<'_> {
    fn call(&mut self, comp: CompId, args: Vec<Literal>) -> Result<Literal, EvalError> {
        Evaluator::call(self, comp, args)
    }

    fn while_limit(&self) -> u64 {
        Evaluator::while_limit(self)
    }
}

/// Lets the kernels apply called computations (comparators, reducers, scatter updates).
struct KernelCalls<'a, 'm> {
    ev: &'a mut Evaluator<'m>,
}

impl numeric::CallComputation for KernelCalls<'_, '_> {
    fn call(&mut self, comp: CompId, args: &[Literal]) -> Result<Literal, KernelError> {
        self.ev
            .call(comp, args.to_vec())
            .map_err(|e| KernelError::Call(Box::new(e)))
    }
}

/// A kernel's error as an evaluation error of instruction `what`.
fn kernel_error(e: KernelError, opcode: Opcode, what: &str) -> EvalError {
    match e {
        KernelError::Unsupported(detail) => EvalError::Unsupported {
            opcode,
            instr: what.to_string(),
            detail: Some(detail),
        },
        KernelError::Invalid(message) => EvalError::invalid(what, message),
        KernelError::Call(inner) => match inner.downcast::<EvalError>() {
            Ok(inner) => *inner,
            Err(other) => EvalError::invalid(what, other.to_string()),
        },
    }
}

/// Instructions evaluated even when their value is unused.
fn has_effect(instr: &Instruction) -> bool {
    matches!(instr.opcode(), Opcode::Parameter)
}

fn op(ops: &[InstrId], i: usize, what: &str) -> Result<InstrId, EvalError> {
    ops.get(i)
        .copied()
        .ok_or_else(|| EvalError::invalid(what, format!("missing operand {i}")))
}

/// Checks entry arguments: count, element types and dimensions (layouts are ignored).
fn check_args(entry: &Computation, args: &[Literal]) -> Result<(), EvalError> {
    let params = entry.parameters();
    if params.len() != args.len() {
        return Err(EvalError::ArgumentCount {
            expected: params.len(),
            got: args.len(),
        });
    }
    for &p in params {
        let instr = entry.instr(p);
        let n = instr.parameter_number().unwrap_or(0);
        let Some(arg) = usize::try_from(n).ok().and_then(|n| args.get(n)) else {
            return Err(EvalError::ArgumentCount {
                expected: params.len(),
                got: args.len(),
            });
        };
        if !arg.shape().compatible(instr.shape()) || arg.is_elided() && !instr.shape().is_token() {
            return Err(EvalError::ArgumentMismatch {
                index: n as usize,
                name: instr.name().to_string(),
                expected: instr.shape().to_string_without_layout(),
                got: arg.shape().to_string_without_layout(),
            });
        }
    }
    Ok(())
}
