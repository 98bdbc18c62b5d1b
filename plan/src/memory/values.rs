//! Dataflow values of a module (XLA's `HloDataflowAnalysis` in SSA form): every array
//! leaf an instruction defines is a value; tuples, get-tuple-element, bitcasts,
//! optimization barriers and calls only forward the values of their operands; a `while`
//! defines a phi per leaf (its init, the body's result, and the body's and condition's
//! parameter are positions of it or inputs to it), a `conditional` a phi over its
//! branches' results. In-place updates (dynamic-update-slice, scatter, in-place fusions,
//! `output_to_operand_aliasing`) and donated parameters (`input_output_alias`) are
//! recorded as pairs that may share a buffer. The memory planner costs schedules with
//! these values and the dumps name them.

use std::collections::HashMap;

use hlo::{CompId, InstrId, Module, Opcode, Shape};

/// A value's index in [`Dataflow::values`].
pub type ValueId = usize;

/// Where a value appears: an instruction's output at a shape index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// The computation.
    pub comp: CompId,
    /// The instruction.
    pub instr: InstrId,
    /// The tuple index of the leaf (empty for an array result).
    pub index: Vec<i64>,
}

/// An instruction reading a value as (part of) one of its operands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Use {
    /// The computation.
    pub comp: CompId,
    /// The reading instruction.
    pub instr: InstrId,
    /// Which operand.
    pub operand: usize,
    /// The leaf of that operand.
    pub index: Vec<i64>,
}

/// One value: defined once, found at its positions, read by its uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// Where it is defined.
    pub def: Position,
    /// Its size in bytes (unpacked elements).
    pub bytes: u64,
    /// A phi of a `while` or `conditional` (its inputs in [`Dataflow::phi_inputs`]).
    pub phi: bool,
    /// Every position holding it, the definition first.
    pub positions: Vec<Position>,
    /// Every instruction reading it (forwarding instructions excluded).
    pub uses: Vec<Use>,
    /// Whether the entry computation's root holds it (it lives to the end).
    pub live_out: bool,
}

/// Why two values may share one buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShareReason {
    /// An in-place instruction (dynamic-update-slice, scatter, an in-place fusion) writes
    /// its output over this operand.
    InPlace,
    /// The instruction's `output_to_operand_aliasing` says so.
    OperandAliasing,
    /// The module's `input_output_alias` donates the parameter to the output.
    Donated,
}

/// Two values that may share a buffer: `output` may be written over `operand` where
/// `operand` dies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    /// The value written.
    pub output: ValueId,
    /// The value it may overwrite.
    pub operand: ValueId,
    /// Why.
    pub reason: ShareReason,
}

/// The dataflow values of a module.
#[derive(Clone, Debug, Default)]
pub struct Dataflow {
    /// Every value, in definition order.
    pub values: Vec<Value>,
    /// The values a position may hold (one, or several where a computation has several
    /// callers), keyed by position.
    pub at: HashMap<Position, Vec<ValueId>>,
    /// For each phi: the values flowing into it (a while's init and body result, a
    /// conditional's branch results).
    pub phi_inputs: HashMap<ValueId, Vec<ValueId>>,
    /// Pairs that may share a buffer.
    pub shares: Vec<Share>,
}

/// The leaves of an instruction's result: (shape index, the values there).
type Leaves = Vec<(Vec<i64>, Vec<ValueId>)>;

/// The byte size of an array shape (0 for tokens and other non-arrays).
pub fn shape_bytes(shape: &Shape) -> u64 {
    let Some(a) = shape.as_array() else {
        return 0;
    };
    let width = a.element_type().byte_width().unwrap_or(0);
    let n: i64 = a.dims().iter().product();
    n.max(0) as u64 * u64::from(width)
}

/// The byte size of every array leaf of a shape together.
pub fn shape_bytes_all(shape: &Shape) -> u64 {
    leaf_indices(shape)
        .iter()
        .map(|(_, s)| shape_bytes(s))
        .sum()
}

/// The array leaves of a shape with their indices, in flattened order.
pub fn leaf_indices(shape: &Shape) -> Vec<(Vec<i64>, Shape)> {
    fn walk(s: &Shape, prefix: &mut Vec<i64>, out: &mut Vec<(Vec<i64>, Shape)>) {
        if s.is_tuple() {
            for (k, e) in s.tuple_shapes().iter().enumerate() {
                prefix.push(k as i64);
                walk(e, prefix, out);
                prefix.pop();
            }
        } else {
            out.push((prefix.clone(), s.clone()));
        }
    }
    let mut out = Vec::new();
    walk(shape, &mut Vec::new(), &mut out);
    out
}

struct Builder<'m> {
    module: &'m Module,
    flow: Dataflow,
    /// The leaves of every visited instruction.
    leaves: HashMap<(CompId, InstrId), Leaves>,
    /// Nesting guard against recursive computations.
    depth: usize,
}

/// Computes the dataflow values of `module`, from its entry computation through every
/// computation it calls (fused computations are opaque: a fusion defines its outputs).
pub fn dataflow(module: &Module) -> Dataflow {
    let mut b = Builder {
        module,
        flow: Dataflow::default(),
        leaves: HashMap::new(),
        depth: 0,
    };
    let root = b.visit(module.entry_id(), None);
    for (_, set) in &root {
        for &v in set {
            b.flow.values[v].live_out = true;
        }
    }
    b.donations(&root);
    for v in &mut b.flow.values {
        v.positions.sort();
        v.positions.dedup();
        v.uses.sort();
        v.uses.dedup();
    }
    b.flow
}

impl Builder<'_> {
    fn define(&mut self, pos: Position, bytes: u64, phi: bool) -> ValueId {
        self.flow.values.push(Value {
            def: pos.clone(),
            bytes,
            phi,
            positions: Vec::new(),
            uses: Vec::new(),
            live_out: false,
        });
        self.flow.values.len() - 1
    }

    /// Fresh values for every leaf of `id`'s result.
    fn define_all(&mut self, comp: CompId, id: InstrId, phi: bool) -> Leaves {
        let shape = self.module.computation(comp).instr(id).shape().clone();
        leaf_indices(&shape)
            .into_iter()
            .filter(|(_, s)| !s.is_token())
            .map(|(index, s)| {
                let pos = Position {
                    comp,
                    instr: id,
                    index: index.clone(),
                };
                (index, vec![self.define(pos, shape_bytes(&s), phi)])
            })
            .collect()
    }

    /// Records `leaves` at `id`'s positions.
    fn place(&mut self, comp: CompId, id: InstrId, leaves: Leaves) {
        for (index, set) in &leaves {
            let pos = Position {
                comp,
                instr: id,
                index: index.clone(),
            };
            for &v in set {
                self.flow.values[v].positions.push(pos.clone());
            }
            let at = self.flow.at.entry(pos).or_default();
            at.extend(set);
            at.sort_unstable();
            at.dedup();
        }
        let slot = self.leaves.entry((comp, id)).or_default();
        if slot.is_empty() {
            *slot = leaves;
        } else {
            for ((_, have), (_, new)) in slot.iter_mut().zip(leaves) {
                have.extend(new);
                have.sort_unstable();
                have.dedup();
            }
        }
    }

    fn get(&self, comp: CompId, id: InstrId) -> Leaves {
        self.leaves.get(&(comp, id)).cloned().unwrap_or_default()
    }

    fn read(&mut self, comp: CompId, id: InstrId, operand: usize, leaves: &Leaves) {
        for (index, set) in leaves {
            for &v in set {
                self.flow.values[v].uses.push(Use {
                    comp,
                    instr: id,
                    operand,
                    index: index.clone(),
                });
            }
        }
    }

    /// Visits `comp` with its parameters' leaves (`None`: the entry); returns its root's.
    fn visit(&mut self, comp: CompId, params: Option<&[Leaves]>) -> Leaves {
        if self.depth > 64 {
            return Vec::new();
        }
        self.depth += 1;
        let c = self.module.computation(comp);
        for &id in c.def_before_use_order().iter() {
            self.instruction(comp, id, params);
        }
        self.depth -= 1;
        self.get(comp, c.root())
    }

    fn instruction(&mut self, comp: CompId, id: InstrId, params: Option<&[Leaves]>) {
        let c = self.module.computation(comp);
        let instr = c.instr(id);
        let ops: Vec<Leaves> = instr
            .operands()
            .iter()
            .map(|&o| self.get(comp, o))
            .collect();
        let forwarding = matches!(
            instr.opcode(),
            Opcode::Tuple
                | Opcode::GetTupleElement
                | Opcode::Bitcast
                | Opcode::OptimizationBarrier
                | Opcode::Parameter
        );
        if !forwarding {
            for (k, l) in ops.iter().enumerate() {
                self.read(comp, id, k, l);
            }
        }
        let leaves = match instr.opcode() {
            Opcode::Parameter => {
                let n = instr.parameter_number().unwrap_or(0).max(0) as usize;
                match params {
                    Some(p) => p.get(n).cloned().unwrap_or_default(),
                    None => self.define_all(comp, id, false),
                }
            }
            Opcode::Tuple => ops
                .iter()
                .enumerate()
                .flat_map(|(k, l)| {
                    l.iter().map(move |(idx, set)| {
                        let mut i = vec![k as i64];
                        i.extend(idx);
                        (i, set.clone())
                    })
                })
                .collect(),
            Opcode::GetTupleElement => {
                let k = instr.tuple_index().unwrap_or(0);
                ops.first()
                    .into_iter()
                    .flatten()
                    .filter(|(idx, _)| idx.first() == Some(&k))
                    .map(|(idx, set)| (idx[1..].to_vec(), set.clone()))
                    .collect()
            }
            Opcode::Bitcast | Opcode::OptimizationBarrier => {
                ops.first().cloned().unwrap_or_default()
            }
            Opcode::Call => match instr.to_apply() {
                Some(callee) => self.visit(callee, Some(&ops)),
                None => self.define_all(comp, id, false),
            },
            Opcode::While => self.while_loop(comp, id, &ops),
            Opcode::Conditional => self.conditional(comp, id, &ops),
            _ => {
                let out = self.define_all(comp, id, false);
                self.in_place(comp, id, &ops, &out);
                out
            }
        };
        self.place(comp, id, leaves);
    }

    fn while_loop(&mut self, comp: CompId, id: InstrId, ops: &[Leaves]) -> Leaves {
        let instr = self.module.computation(comp).instr(id);
        let (cond, body) = (instr.while_condition(), instr.while_body());
        let phis = self.define_all(comp, id, true);
        let params = [phis.clone()];
        if let Some(cc) = cond {
            self.visit(cc, Some(&params));
        }
        let result = body.map(|bc| self.visit(bc, Some(&params)));
        for (k, (_, set)) in phis.iter().enumerate() {
            let mut inputs: Vec<ValueId> = ops
                .first()
                .and_then(|l| l.get(k))
                .map(|(_, s)| s.clone())
                .unwrap_or_default();
            if let Some((_, s)) = result.as_ref().and_then(|r| r.get(k)) {
                inputs.extend(s);
            }
            for &p in set {
                self.flow.phi_inputs.insert(p, inputs.clone());
            }
        }
        phis
    }

    fn conditional(&mut self, comp: CompId, id: InstrId, ops: &[Leaves]) -> Leaves {
        let instr = self.module.computation(comp).instr(id);
        let branches = instr.branch_computations().unwrap_or_default();
        let phis = self.define_all(comp, id, true);
        let mut results = Vec::new();
        for (k, bc) in branches.iter().enumerate() {
            let arg = ops.get(k + 1).cloned().unwrap_or_default();
            results.push(self.visit(*bc, Some(std::slice::from_ref(&arg))));
        }
        for (k, (_, set)) in phis.iter().enumerate() {
            let inputs: Vec<ValueId> = results
                .iter()
                .filter_map(|r| r.get(k))
                .flat_map(|(_, s)| s.iter().copied())
                .collect();
            for &p in set {
                self.flow.phi_inputs.insert(p, inputs.clone());
            }
        }
        phis
    }

    /// Records the operands an instruction may write its output over.
    fn in_place(&mut self, comp: CompId, id: InstrId, ops: &[Leaves], out: &Leaves) {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let mut pairs: Vec<(Vec<i64>, usize, Vec<i64>, ShareReason)> = instr
            .output_to_operand_aliasing()
            .iter()
            .map(|a| {
                (
                    a.output_index.clone(),
                    a.operand.max(0) as usize,
                    a.operand_index.clone(),
                    ShareReason::OperandAliasing,
                )
            })
            .collect();
        let root_op = match instr.opcode() {
            Opcode::Fusion => instr.calls().map(|fc| {
                let f = module.computation(fc);
                let root = f.root_instr();
                // Operand 0 of the fused root, when it is a fused parameter.
                let base = root
                    .operands()
                    .first()
                    .map(|&o| f.instr(o))
                    .filter(|b| b.opcode() == Opcode::Parameter)
                    .and_then(|b| b.parameter_number());
                (root.opcode(), base)
            }),
            op => Some((op, Some(0))),
        };
        match root_op {
            Some((Opcode::DynamicUpdateSlice, Some(base))) => {
                pairs.push((vec![], base.max(0) as usize, vec![], ShareReason::InPlace));
            }
            Some((Opcode::Scatter, Some(_))) if instr.opcode() == Opcode::Scatter => {
                let n = instr.operands().len() / 2;
                let single = out.len() == 1;
                for k in 0..n {
                    let idx = if single { vec![] } else { vec![k as i64] };
                    pairs.push((idx, k, vec![], ShareReason::InPlace));
                }
            }
            Some((Opcode::Scatter, Some(base))) if out.len() == 1 => {
                pairs.push((vec![], base.max(0) as usize, vec![], ShareReason::InPlace));
            }
            _ => {}
        }
        for (oi, k, ki, reason) in pairs {
            let outs = out.iter().find(|(i, _)| *i == oi).map(|(_, s)| s.clone());
            let inputs = ops
                .get(k)
                .and_then(|l| l.iter().find(|(i, _)| *i == ki))
                .map(|(_, s)| s.clone());
            if let (Some(outs), Some(inputs)) = (outs, inputs) {
                for &o in &outs {
                    for &i in &inputs {
                        self.flow.shares.push(Share {
                            output: o,
                            operand: i,
                            reason: reason.clone(),
                        });
                    }
                }
            }
        }
    }

    /// The module's `input_output_alias`: `{ {0}: (0, {}, may-alias), ... }`.
    fn donations(&mut self, root: &Leaves) {
        let Some(hlo::ir::ModuleAttrValue::Raw(text)) = self.module.attr("input_output_alias")
        else {
            return;
        };
        let entry = self.module.entry();
        for (out_index, param, param_index) in parse_input_output_alias(text) {
            let outs = root.iter().find(|(i, _)| *i == out_index);
            let Some(pid) = entry.parameter(param) else {
                continue;
            };
            let ins = self
                .leaves
                .get(&(self.module.entry_id(), pid))
                .and_then(|l| l.iter().find(|(i, _)| *i == param_index))
                .cloned();
            if let (Some((_, outs)), Some((_, ins))) = (outs, ins) {
                for &o in outs {
                    for &i in &ins {
                        self.flow.shares.push(Share {
                            output: o,
                            operand: i,
                            reason: ShareReason::Donated,
                        });
                    }
                }
            }
        }
    }
}

/// The entries of an `input_output_alias` attribute: (output index, parameter number,
/// parameter index). Entries that do not parse are skipped.
pub fn parse_input_output_alias(text: &str) -> Vec<(Vec<i64>, usize, Vec<i64>)> {
    let ints = |s: &str| -> Option<Vec<i64>> {
        let s = s.trim().strip_prefix('{')?.strip_suffix('}')?;
        s.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().ok())
            .collect()
    };
    let body = text.trim();
    let body = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .unwrap_or(body);
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(colon) = rest.find(':') {
        let (key, after) = rest.split_at(colon);
        let Some(open) = after.find('(') else { break };
        let Some(close) = after.find(')') else { break };
        let inner = &after[open + 1..close];
        let mut parts = inner.splitn(2, ',');
        let param = parts.next().and_then(|p| p.trim().parse::<usize>().ok());
        let pindex = parts
            .next()
            .and_then(|r| r.find('}').map(|e| &r[..=e]))
            .and_then(ints);
        if let (Some(oi), Some(p), Some(pi)) =
            (ints(key.trim().trim_start_matches(',')), param, pindex)
        {
            out.push((oi, p, pi));
        }
        rest = &after[close + 1..];
    }
    out
}
