//! The output-to-input maps of one instruction, kept across kernel emissions.
//!
//! Priority fusion confirms a candidate by emitting its body (`crate::candidate::check`),
//! so a kernel that grows one producer at a time is emitted once per step, and each
//! emission asked `indexing::output_to_input` for the maps of every member again: about
//! a quarter of hloc's time on issue 36's 10,000-instruction chain, a third of that spent
//! printing maps as the text that orders their sets. The maps of the ops listed in
//! [`by_signature`] are a function of the op alone (opcode, attributes, result and operand
//! shapes: the per-op tables read nothing else, create no runtime variables, so nothing is
//! folded from the module), not of the module or position it sits at. Those are kept here
//! for the process, keyed by that signature, and shared by the candidates' scratch modules,
//! the final emission and every instruction of the same signature. Everything else (calls,
//! scans, dynamic and gather-like ops, sorts) is computed per use as before.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use hlo::attrs::{AttrName, AttrValue, Attribute};
use hlo::{Instruction, Opcode, Shape};
use indexing::GroupedIndexing;

/// Signatures kept before the table starts over (a bound on memory in a long process such
/// as a test binary; the chain's whole module has a few dozen).
const MAX_ENTRIES: usize = 1 << 14;

/// The maps of every output of an instruction (one per tuple element), never empty.
pub(crate) type AllMaps = Arc<[GroupedIndexing]>;

/// What an op's maps depend on: its opcode, result shape, operand shapes and attributes
/// (less those no per-op table reads: metadata and other annotations, and the called
/// computation, whose id differs from module to module while the maps do not).
struct Signature {
    opcode: Opcode,
    shape: Arc<Shape>,
    operands: Vec<Arc<Shape>>,
    attrs: Vec<Attribute>,
}

/// Whether the per-op table of `op` depends on nothing but the signature. Checked against
/// `indexing::ops::op_out_to_in`: these families read the instruction's attributes and the
/// operands' shapes only, and none of them makes a runtime variable.
fn by_signature(op: Opcode) -> bool {
    use Opcode::*;
    (op.is_elementwise() && op != Map)
        || matches!(
            op,
            Broadcast
                | Transpose
                | Reverse
                | Slice
                | Reshape
                | Bitcast
                | BitcastConvert
                | Concatenate
                | Pad
                | Reduce
                | ReduceWindow
                | Dot
                | Convolution
        )
}

/// Whether attribute `a` takes part in the signature.
fn counts(a: &Attribute) -> bool {
    !matches!(
        a.name,
        AttrName::Metadata
            | AttrName::BackendConfig
            | AttrName::FrontendAttributes
            | AttrName::Sharding
            | AttrName::ControlPredecessors
    ) && !matches!(
        a.value,
        AttrValue::Computation(_) | AttrValue::Computations(_)
    )
}

/// The table: signatures by hash (collisions kept side by side).
type Table = HashMap<u64, Vec<(Signature, AllMaps)>>;

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The table, locked. A poisoned lock only means another thread panicked holding it; the
/// table is consistent between its statements (an entry is pushed whole), so keep using it.
fn lock() -> std::sync::MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hash of a signature: opcode, shapes and attribute names (the values are compared,
/// not hashed: some hold floats).
fn hash_of(opcode: Opcode, shape: &Shape, operands: &[&Arc<Shape>], attrs: &[&Attribute]) -> u64 {
    let mut h = DefaultHasher::new();
    opcode.hash(&mut h);
    shape.hash(&mut h);
    for s in operands {
        s.hash(&mut h);
    }
    for a in attrs {
        a.name.hash(&mut h);
    }
    h.finish()
}

impl Signature {
    /// Whether this is the signature of `instr`, whose operands' shapes are `operands` and
    /// whose counted attributes are `attrs` (compared in place, nothing cloned).
    fn is_of(&self, instr: &Instruction, operands: &[&Arc<Shape>], attrs: &[&Attribute]) -> bool {
        // `Arc`s of an `Eq` type compare by address first: a candidate's scratch module
        // shares its instructions' shapes with the module they were copied from.
        self.opcode == instr.opcode()
            && self.shape == instr.shape
            && self.operands.len() == operands.len()
            && self.operands.iter().zip(operands).all(|(a, b)| a == *b)
            && self.attrs.len() == attrs.len()
            && self.attrs.iter().zip(attrs).all(|(a, b)| a == *b)
    }
}

/// The maps of `instr` (in `comp` of `module`): from the table where its op depends on
/// its signature alone, else from `compute` (whose result is kept when the op qualifies).
pub(crate) fn get_or_compute<E>(
    comp: &hlo::Computation,
    instr: &Instruction,
    compute: impl FnOnce() -> Result<Vec<GroupedIndexing>, E>,
) -> Result<AllMaps, E> {
    if !by_signature(instr.opcode()) {
        return compute().map(Arc::from);
    }
    let operands: Vec<&Arc<Shape>> = instr
        .operands()
        .iter()
        .map(|&o| &comp.instr(o).shape)
        .collect();
    let attrs: Vec<&Attribute> = instr.attrs.iter().filter(|a| counts(a)).collect();
    let hash = hash_of(instr.opcode(), instr.shape(), &operands, &attrs);
    {
        let table = lock();
        let hit = table
            .as_ref()
            .and_then(|t| t.get(&hash))
            .and_then(|b| b.iter().find(|(s, _)| s.is_of(instr, &operands, &attrs)));
        if let Some((_, maps)) = hit {
            return Ok(maps.clone());
        }
    }
    let maps: AllMaps = Arc::from(compute()?);
    // Runtime variables name their producer by id: never shared between modules (the ops
    // above make none; this keeps the table sound should one ever do).
    let runtime_free = maps.iter().all(|g| {
        g.operands
            .iter()
            .all(|s| s.maps().all(|m| m.runtime.is_empty()))
    });
    if runtime_free {
        let mut guard = lock();
        let table = guard.get_or_insert_with(HashMap::new);
        if table.len() >= MAX_ENTRIES {
            table.clear();
        }
        let sig = Signature {
            opcode: instr.opcode(),
            shape: instr.shape.clone(),
            operands: operands.into_iter().cloned().collect(),
            attrs: attrs.into_iter().cloned().collect(),
        };
        table.entry(hash).or_default().push((sig, maps.clone()));
    }
    Ok(maps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module whose ops read `p` in every way the table keeps and one it does not: a
    /// dynamic slice at a constant start, which folding turns into plain maps that depend
    /// on the constant's value.
    fn module(start: i64, name: &str) -> hlo::Module {
        let text = format!(
            r#"HloModule m_{name}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}

ENTRY main {{
  p = f32[8,16] parameter(0)
  t_{name} = f32[16,8] transpose(p), dimensions={{1,0}}
  e = f32[16,8] exponential(t_{name}), metadata={{op_name="{name}"}}
  z = f32[] constant(0)
  r = f32[16] reduce(e, z), dimensions={{1}}, to_apply=add
  b = f32[8,16] broadcast(r), dimensions={{1}}
  s = f32[4,16] slice(b), slice={{[2:6], [0:16]}}
  q = f32[6,16] pad(s, z), padding=1_1x0_0
  c = f32[14,16] concatenate(q, p), dimensions={{0}}
  i = s32[] constant({start})
  j = s32[] constant(0)
  ROOT d = f32[4,16] dynamic-slice(c, i, j), dynamic_slice_sizes={{4,16}}
}}
"#
        );
        hlo::parse_module(&text).unwrap()
    }

    /// Every instruction's maps through the table, each checked against a fresh analysis.
    fn all_through_table(m: &hlo::Module) -> Vec<(String, AllMaps)> {
        let cid = m.entry_id();
        let comp = m.computation(cid);
        let mut out = Vec::new();
        for (id, instr) in comp.instructions() {
            if matches!(instr.opcode(), Opcode::Parameter | Opcode::Constant) {
                continue;
            }
            let handle = hlo::InstrRef::new(m, cid, id).unwrap();
            let fresh = indexing::output_to_input(&handle).unwrap();
            let got = get_or_compute(comp, instr, || {
                indexing::output_to_input(&handle).map_err(|e| e.to_string())
            })
            .unwrap();
            assert_eq!(&*got, fresh.as_slice(), "maps of `{}`", instr.name());
            out.push((instr.name().to_string(), got));
        }
        out
    }

    #[test]
    fn ops_of_one_signature_share_their_maps_across_modules() {
        // Different names, metadata and computation ids; the same signatures.
        let first = all_through_table(&module(3, "one"));
        let second = all_through_table(&module(3, "two"));
        for ((name, a), (_, b)) in first.iter().zip(&second) {
            let shared = Arc::ptr_eq(a, b);
            // The dynamic slice is analysed per module; everything else comes from the table.
            assert_eq!(shared, name != "d", "`{name}` shared: {shared}");
        }
    }

    #[test]
    fn maps_folded_from_the_module_are_not_shared() {
        // Same signature, another constant start: the folded maps differ, and each module
        // gets its own (all_through_table checks each against a fresh analysis).
        let at3 = all_through_table(&module(3, "three"));
        let at7 = all_through_table(&module(7, "seven"));
        let d = |v: &[(String, AllMaps)]| v.iter().find(|(n, _)| n == "d").unwrap().1.clone();
        assert_ne!(*d(&at3), *d(&at7));
    }
}
