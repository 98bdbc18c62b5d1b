//! Common subexpression elimination: within each computation, an instruction identical to
//! an earlier one (same opcode, shape with layout, operands — in either order for
//! commutative opcodes —, attributes other than metadata, literal bit for bit, and called
//! computations equal in structure) is replaced by the earlier one.
//!
//! Instructions with side effects, control predecessors or `rng` are never merged.
//! Constants compare by bit pattern: `0` and `-0` differ, NaNs with different payloads
//! differ, equal NaNs merge (XLA's `Literal` equality compares bits).

use std::collections::HashMap;
use std::fmt::Write as _;

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, Computation, InstrId, Instruction, Module};
use hlo::literal::{ArrayData, Literal};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The CSE pass (`cse`).
#[derive(Debug, Default)]
pub struct Cse;

impl Pass for Cse {
    fn name(&self) -> &str {
        "cse"
    }

    fn description(&self) -> &str {
        "merges identical instructions (commutative operands, equal constants, structurally equal called computations)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let classes = computation_classes(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let side: Vec<bool> = {
                let comp = &module.computations[ci];
                comp.instrs
                    .iter()
                    .map(|i| edit::has_side_effect(module, i))
                    .collect()
            };
            let comp = &mut module.computations[ci];
            changed |= cse_computation(comp, &classes, &side);
        }
        Ok(changed)
    }
}

fn is_commutative(op: Opcode) -> bool {
    use hlo::Opcode::*;
    matches!(op, Add | Multiply | Maximum | Minimum | And | Or | Xor)
}

fn cse_computation(comp: &mut Computation, classes: &[usize], side: &[bool]) -> bool {
    let order = comp.def_before_use_order().into_owned();
    let mut canon: HashMap<InstrId, InstrId> = HashMap::new();
    let mut seen: HashMap<String, InstrId> = HashMap::new();
    let mut dead = std::collections::HashSet::new();
    for id in order {
        // Operands first resolved to their canonical representative.
        let ops: Vec<InstrId> = comp
            .instr(id)
            .operands
            .iter()
            .map(|o| *canon.get(o).unwrap_or(o))
            .collect();
        if ops != comp.instr(id).operands {
            comp.instr_mut(id).operands = ops;
        }
        let instr = comp.instr(id);
        if side[id.index()]
            || instr.opcode == Opcode::Rng
            || !instr.control_predecessors().is_empty()
            || instr.opcode == Opcode::Parameter
        {
            continue;
        }
        let key = instruction_key(instr, classes, true);
        match seen.get(&key) {
            Some(&first) => {
                canon.insert(id, first);
                if comp.root == id {
                    comp.root = first;
                }
                dead.insert(id);
            }
            None => {
                seen.insert(key, id);
            }
        }
    }
    if dead.is_empty() {
        return false;
    }
    comp.recompute_users();
    // Duplicates now have no users left (every user was redirected above).
    let removable: std::collections::HashSet<InstrId> = dead
        .into_iter()
        .filter(|d| comp.instr(*d).users.is_empty() && *d != comp.root)
        .collect();
    edit::remove_instructions(comp, &removable);
    true
}

/// A string identifying an instruction up to its name and metadata. Operands are ids
/// (`with_operands`) or left out; called computations are their structural classes.
fn instruction_key(instr: &Instruction, classes: &[usize], with_operands: bool) -> String {
    let mut k = String::new();
    let _ = write!(k, "{}|{:?}|", instr.opcode.as_str(), instr.shape);
    if with_operands {
        let mut ops: Vec<usize> = instr.operands.iter().map(|o| o.index()).collect();
        if is_commutative(instr.opcode) {
            ops.sort_unstable();
        }
        let _ = write!(k, "{ops:?}|");
    }
    for a in &instr.attrs {
        match (&a.name, &a.value) {
            (AttrName::Metadata, _) => {}
            (_, AttrValue::Computation(c)) => {
                let _ = write!(k, "{}=c{}|", a.name.as_str(), class_of(classes, *c));
            }
            (_, AttrValue::Computations(cs)) => {
                let v: Vec<usize> = cs.iter().map(|c| class_of(classes, *c)).collect();
                let _ = write!(k, "{}=c{v:?}|", a.name.as_str());
            }
            (_, AttrValue::Float(f)) => {
                let _ = write!(k, "{}={:#x}|", a.name.as_str(), f.to_bits());
            }
            (_, v) => {
                let _ = write!(k, "{}={v:?}|", a.name.as_str());
            }
        }
    }
    match &instr.payload {
        hlo::ir::Payload::None => {}
        hlo::ir::Payload::Parameter(n) => {
            let _ = write!(k, "param {n}");
        }
        hlo::ir::Payload::Constant(l) => literal_key(&mut k, l),
    }
    k
}

fn class_of(classes: &[usize], c: CompId) -> usize {
    classes.get(c.index()).copied().unwrap_or(usize::MAX)
}

/// Appends the literal's shape and values as bit patterns.
pub(crate) fn literal_key(k: &mut String, l: &Literal) {
    match l {
        Literal::Elided(s) => {
            // Unknown values: never equal to anything but itself.
            let _ = write!(k, "elided {s:?} {:p}", l);
        }
        Literal::Tuple(t) => {
            k.push('(');
            for e in t {
                literal_key(k, e);
                k.push(',');
            }
            k.push(')');
        }
        Literal::Array(a) => {
            let _ = write!(k, "{:?}:", a.shape());
            // A literal of more than one element holding one value (bit for bit) keys by
            // that value, whether it is a splat (never expanded) or lists its elements.
            match a.splat_value() {
                Some(v) if a.element_count() > 1 => {
                    k.push_str("splat ");
                    data_key(k, v);
                }
                None if a.element_count() > 1 && uniform_bits(a.data()) => {
                    k.push_str("splat ");
                    data_key(k, &a.data().repeat_first(1));
                }
                // At most one element, or elements that differ.
                _ => data_key(k, a.data()),
            }
        }
    }
}

/// True when every element has the first one's bit pattern.
fn uniform_bits(data: &ArrayData) -> bool {
    fn all<T, B: PartialEq>(v: &[T], bits: impl Fn(&T) -> B) -> bool {
        v.first()
            .map(&bits)
            .is_none_or(|first| v.iter().all(|x| bits(x) == first))
    }
    match data {
        ArrayData::Pred(v) => all(v, |x| *x),
        ArrayData::S8(v) => all(v, |x| *x),
        ArrayData::S16(v) => all(v, |x| *x),
        ArrayData::S32(v) => all(v, |x| *x),
        ArrayData::S64(v) => all(v, |x| *x),
        ArrayData::U8(v) => all(v, |x| *x),
        ArrayData::U16(v) => all(v, |x| *x),
        ArrayData::U32(v) => all(v, |x| *x),
        ArrayData::U64(v) => all(v, |x| *x),
        ArrayData::Bits16(v) => all(v, |x| *x),
        ArrayData::Bits8(v) => all(v, |x| *x),
        ArrayData::F32(v) => all(v, |x| x.to_bits()),
        ArrayData::F64(v) => all(v, |x| x.to_bits()),
        ArrayData::C64(v) => all(v, |x| [x[0].to_bits(), x[1].to_bits()]),
        ArrayData::C128(v) => all(v, |x| [x[0].to_bits(), x[1].to_bits()]),
    }
}

/// Appends the elements' bit patterns.
fn data_key(k: &mut String, data: &ArrayData) {
    match data {
        ArrayData::F32(v) => {
            let bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
            let _ = write!(k, "{bits:?}");
        }
        ArrayData::F64(v) => {
            let bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
            let _ = write!(k, "{bits:?}");
        }
        ArrayData::C64(v) => {
            let bits: Vec<[u32; 2]> = v.iter().map(|x| [x[0].to_bits(), x[1].to_bits()]).collect();
            let _ = write!(k, "{bits:?}");
        }
        ArrayData::C128(v) => {
            let bits: Vec<[u64; 2]> = v.iter().map(|x| [x[0].to_bits(), x[1].to_bits()]).collect();
            let _ = write!(k, "{bits:?}");
        }
        other => {
            let _ = write!(k, "{other:?}");
        }
    }
}

/// Classes of structurally equal computations: two computations get the same class when
/// their instructions, in order, match up to names and metadata (called computations
/// compared the same way, callees first).
pub(crate) fn computation_classes(module: &Module) -> Vec<usize> {
    let n = module.computations.len();
    let mut classes: Vec<usize> = (0..n).collect();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    // Callees first, so a caller's key uses its callees' classes; unreachable
    // computations follow in module order (parsed modules list callees first).
    let mut order = call_graph::callees_first(module);
    let mut listed = vec![false; n];
    order.iter().for_each(|c| listed[c.index()] = true);
    order.extend((0..n).filter(|&i| !listed[i]).map(CompId::from_index));
    for c in order {
        let comp = module.computation(c);
        let ids = comp.def_before_use_order();
        let pos: HashMap<InstrId, usize> = ids.iter().enumerate().map(|(k, &id)| (id, k)).collect();
        let mut key = String::new();
        for &id in ids.iter() {
            let i = comp.instr(id);
            key.push_str(&instruction_key(i, &classes, false));
            let ops: Vec<usize> = i
                .operands
                .iter()
                .map(|o| pos.get(o).copied().unwrap_or(usize::MAX))
                .collect();
            let _ = write!(key, "{ops:?}");
            if id == comp.root {
                key.push_str(" ROOT");
            }
            key.push('\n');
        }
        let next = by_key.len() + n;
        classes[c.index()] = *by_key.entry(key).or_insert(next);
    }
    classes
}
