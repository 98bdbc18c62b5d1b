//! The corpus check: every fusion of the optimized corpus programs and every entry
//! instruction of the programs before optimization, each run alone.

use super::*;

/// `instr` of `module` alone: a new entry with one parameter per operand and a copy of the
/// instruction (called computations shared). `None` for tuple-shaped operands.
fn standalone(module: &Module, comp: hlo::CompId, id: hlo::InstrId) -> Option<Module> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = hlo::ir::ComputationBuilder::new("oracle_entry");
    let mut params = Vec::new();
    for (i, &op) in instr.operands().iter().enumerate() {
        let shape = c.instr(op).shape();
        if !shape.is_array() {
            return None;
        }
        params.push(b.add(hlo::Instruction::parameter(
            format!("oracle_p{i}"),
            i as i64,
            shape.clone(),
        )));
    }
    let mut copy =
        hlo::Instruction::new(instr.name(), instr.opcode(), instr.shape().clone(), params);
    for a in instr.attrs() {
        if a.name != hlo::AttrName::ControlPredecessors {
            copy = copy.with_attr(a.name.clone(), a.value.clone());
        }
    }
    b.add(copy);
    let mut m = module.clone();
    let cid = m.add_computation(b.build(None).ok()?);
    m.set_entry(cid).ok()?;
    Some(m)
}

/// Why an operand (or a whole instruction) of the corpus is not checked. Every reason is on
/// `ACCEPTED_SKIPS`, each inherent to the check rather than a gap in it.
const SKIP_TUPLE_OPERAND: &str =
    "tuple operand of opt-barrier, an identity (the standalone module takes array operands)";
const SKIP_UNDEFINED: &str = "map UNDEFINED (listed with its reason in indexing/README.md)";
const SKIP_TOO_LARGE: &str = "map domain above 2^18 points, too large to enumerate";
const SKIP_NO_ELEMENTS: &str = "operand or output has no elements";
const SKIP_NO_OPERANDS: &str = "no operands to perturb (a fusion of constants or iotas)";
const SKIP_COMPUTED_INDEX: &str =
    "a runtime variable reads an index computed inside the fusion, not an argument";

/// The opcodes indexing/README.md documents as UNDEFINED (with the reason); an UNDEFINED
/// map whose reason names another opcode fails the test.
const DOCUMENTED_UNDEFINED: &[&str] = &[
    "while",
    "conditional",
    "custom-call",
    "all-to-all",
    "ragged-all-to-all",
    "ragged-dot",
    "dynamic-reshape",
    "send",
    "recv",
    "infeed",
    "outfeed",
];

/// Fails unless an UNDEFINED operand's reason names an opcode of `DOCUMENTED_UNDEFINED`.
fn assert_documented_undefined(name: &str, set: &OperandIndexing) {
    if let OperandIndexing::Undefined(why) = set {
        let op = why.split(':').next().unwrap_or_default();
        assert!(
            DOCUMENTED_UNDEFINED.contains(&op),
            "{name}: UNDEFINED for an undocumented reason: {why}"
        );
    }
}

/// The skip reasons a reviewer accepted; any other fails the test (`SKIP_COMPUTED_INDEX`
/// is not accepted: every index the corpus computes is evaluated now).
const ACCEPTED_SKIPS: &[&str] = &[
    SKIP_TUPLE_OPERAND,
    SKIP_UNDEFINED,
    SKIP_TOO_LARGE,
    SKIP_NO_ELEMENTS,
    SKIP_NO_OPERANDS,
];

const SUPERSET_DATA: &str =
    "perturbation may not show every dependence of this op (data-dependent \
     selection, comparison, saturation, rounding, or a superset map per indexing/README.md)";
const SUPERSET_INDEX: &str = "index operand: a changed index changes only the outputs whose read \
     moves to a different value (clamping, equal values); the reads themselves are checked \
     through the runtime variables of the other operands";
const SUPERSET_FUSION: &str =
    "fusion or call: composed maps are supersets where a part is, and its ops may hide a perturbation";

/// Whether the perturbation (`values::perturbed`) of operand `j` shows every dependence of
/// `instr`'s exact map: ops that move values unchanged (any type), and float arithmetic
/// where a change of at least 3.25 always changes the result.
///
/// `direct` says the operands are the random arguments themselves (in ±[0.5, 2.5)), so a
/// perturbed element (at least 3.25) becomes the unique maximum.
fn perturbation_shows_all(
    module: &Module,
    instr: &hlo::Instruction,
    j: usize,
    ty: ElementType,
    dims_of_operand: &[i64],
    direct: bool,
) -> bool {
    use hlo::Opcode as O;
    let float = matches!(
        ty,
        ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16
    );
    let wide_float = matches!(ty, ElementType::F32 | ElementType::F64);
    let int = !float && ty != ElementType::Pred && ty.is_integral();
    let complex = matches!(ty, ElementType::C64 | ElementType::C128);
    let float_output = matches!(
        instr.shape().element_type(),
        Some(ElementType::F32 | ElementType::F64)
    );
    match instr.opcode() {
        O::Transpose
        | O::Reshape
        | O::Broadcast
        | O::Slice
        | O::Concatenate
        | O::Reverse
        | O::Copy
        | O::Bitcast
        | O::Tuple => true,
        // A width change splits an element into parts a perturbation may leave unchanged.
        O::BitcastConvert => instr.shape().dims().len() == dims_of_operand.len(),
        O::Pad | O::DynamicSlice | O::Gather => j == 0,
        O::DynamicUpdateSlice => j == 1,
        O::Add | O::Subtract | O::Negate => float || int,
        // Bijective in each operand for integers and predicates.
        O::Xor | O::Not => int || ty == ElementType::Pred,
        // |x| = |x ± 5| has no integer solution.
        O::Abs => float || int,
        O::Real | O::Imag => complex,
        // A flipped predicate picks the other value, different (random reals) everywhere.
        O::Select => j == 0 && direct && float_output,
        // Strictly monotonic (atan2 in each argument with the other nonzero); tanh and erf
        // saturate, but not between |x| < 2.5 and x >= 3.25 of direct arguments.
        O::Cbrt | O::Expm1 | O::Atan2 => float,
        O::Tanh | O::Erf => float && direct,
        O::RoundNearestAfz | O::RoundNearestEven => float,
        // A direct argument moves by at least 3.25 (or 5, or flips), which every
        // conversion shows except to pred (nonzero stays nonzero); inside a fusion a small
        // change survives only a conversion to a wide float.
        O::Convert => {
            instr.shape().element_type() != Some(ElementType::Pred) && (direct || float_output)
        }
        O::Multiply
        | O::Divide
        | O::Exp
        | O::Floor
        | O::Ceil
        | O::Sqrt
        | O::Rsqrt
        | O::Log
        | O::Log1p
        | O::Complex => float,
        O::Dot | O::Convolution => wide_float,
        O::Maximum => float && direct,
        // A sum changes with any of its terms (inputs or init); a maximum of the direct
        // arguments changes when one of them becomes the largest.
        O::Reduce | O::ReduceWindow => match reducer(module, instr) {
            Some(O::Add) => wide_float,
            Some(O::Maximum) => float && direct,
            _ => false,
        },
        _ => false,
    }
}

/// The opcode of a reduction's scalar binary reducer (`None` for variadic or composite
/// reducers).
fn reducer(module: &Module, instr: &hlo::Instruction) -> Option<hlo::Opcode> {
    let comp = module.computation(instr.to_apply()?);
    let root = comp.root_instr();
    let params = root
        .operands()
        .iter()
        .all(|&o| comp.instr(o).parameter_number().is_some());
    (params && root.operands().len() == 2 && root.shape().dims().is_empty()).then(|| root.opcode())
}

/// Whether every instruction of a fusion (other than parameters and constants) shows
/// every dependence on each of its operands under perturbation and cannot make a NaN of
/// finite values, so that the composed exact maps can be checked exactly.
fn fusion_shows_all(module: &Module, fusion: &hlo::Instruction) -> bool {
    let Some(callee) = fusion.calls().or(fusion.to_apply()) else {
        return false;
    };
    let comp = module.computation(callee);
    comp.instructions().all(|(_, i)| {
        // A NaN from an intermediate value (square root or logarithm of a negative one)
        // hides every other input of what follows.
        let nan_from_intermediate = matches!(
            i.opcode(),
            hlo::Opcode::Sqrt | hlo::Opcode::Rsqrt | hlo::Opcode::Log | hlo::Opcode::Log1p
        );
        let leaf = matches!(
            i.opcode(),
            hlo::Opcode::Parameter | hlo::Opcode::Constant | hlo::Opcode::Iota
        );
        let shows = i.operands().iter().enumerate().all(|(j, &o)| {
            let s = comp.instr(o).shape();
            s.element_type()
                .is_some_and(|ty| perturbation_shows_all(module, i, j, ty, s.dims(), false))
        });
        leaf || (!nan_from_intermediate && shows)
    })
}

/// The parameters a runtime variable of any operand's maps reads.
fn index_params(module: &Module, grouped: &[indexing::GroupedIndexing]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for g in grouped {
        for set in &g.operands {
            for m in set.maps() {
                for rv in &m.runtime {
                    out.extend(runtime_params(module, rv));
                }
            }
        }
    }
    out
}

/// Whether the image of every map of an operand can be enumerated.
fn enumerable(set: &OperandIndexing) -> bool {
    set.maps().all(|m| {
        let bounds: Vec<Interval> = m.map.dims().iter().chain(m.map.ranges()).copied().collect();
        affine::enumerate::box_size(&bounds) <= 1 << 18
    })
}

/// Counts of checks and skips, per reason and per opcode.
#[derive(Default)]
struct Tally {
    checked: usize,
    skipped: usize,
    operands_exact: usize,
    operands_superset: usize,
    operand_skips: BTreeMap<&'static str, usize>,
    instr_skips: BTreeMap<&'static str, usize>,
    per_opcode: BTreeMap<String, [usize; 4]>,
}

impl Tally {
    fn skip_instr(&mut self, op: hlo::Opcode, reason: &'static str) {
        self.skipped += 1;
        *self.instr_skips.entry(reason).or_default() += 1;
        self.per_opcode.entry(op.to_string()).or_default()[1] += 1;
    }
}

/// Every fusion of XLA:CPU's optimized corpus programs and every entry instruction of the
/// programs before optimization, each run alone on random inputs of its own element types:
/// for a sample of each operand's elements, the outputs that change when it is perturbed
/// must be exactly the outputs whose maps read it (ops where the perturbation shows every
/// dependence), or among them (superset, with the reason). Every skip has a reason from
/// `ACCEPTED_SKIPS`.
#[test]
fn corpus_ops_and_fusions() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut tally = Tally::default();
    for p in paths {
        for file in ["after_optimizations.hlo", "before_optimizations.hlo"] {
            let Ok(text) = std::fs::read_to_string(p.join(file)) else {
                continue;
            };
            let module = hlo::parse_module(&text).unwrap();
            let mut targets = Vec::new();
            for (cid, comp) in module.computations() {
                for (id, instr) in comp.instructions() {
                    let op = instr.opcode();
                    let wanted = if file.starts_with("after") {
                        op == hlo::Opcode::Fusion
                    } else {
                        cid == module.entry_id()
                            && !instr.operands().is_empty()
                            && !matches!(op, hlo::Opcode::Tuple | hlo::Opcode::GetTupleElement)
                    };
                    if wanted {
                        targets.push((cid, id));
                    }
                }
            }
            for (cid, id) in targets {
                let instr = module.computation(cid).instr(id);
                let opcode = instr.opcode();
                let name = format!("{}:{}:{}", p.display(), file, instr.name());
                let handle = module
                    .instr_ref(cid, id)
                    .unwrap_or_else(|| panic!("{name}: no handle"));
                let in_place =
                    indexing::output_to_input(&handle).unwrap_or_else(|e| panic!("{name}: {e}"));
                let undefined = |g: &indexing::GroupedIndexing| {
                    !g.operands.is_empty() && g.operands.iter().all(|o| o.is_undefined())
                };
                if in_place.iter().all(undefined) {
                    for g in &in_place {
                        for o in &g.operands {
                            assert_documented_undefined(&name, o);
                        }
                    }
                    tally.skip_instr(opcode, SKIP_UNDEFINED);
                    continue;
                }
                let Some(m) = standalone(&module, cid, id) else {
                    // Only the tuple identity is accepted here; another op with a tuple
                    // operand needs the harness extended.
                    assert_eq!(
                        opcode,
                        hlo::Opcode::OptimizationBarrier,
                        "{name}: tuple operand not checked"
                    );
                    tally.skip_instr(opcode, SKIP_TUPLE_OPERAND);
                    continue;
                };
                let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
                let args = args_for(&m, NO, &mut rng)
                    .unwrap_or_else(|| panic!("{name}: no random arguments"));
                if let Err(e) = try_run(&m, &args) {
                    panic!("{name}: evaluation failed: {e}");
                }
                let root_ref = m
                    .instr_ref(m.entry_id(), m.entry().root())
                    .unwrap_or_else(|| panic!("{name}: no root"));
                let grouped =
                    indexing::output_to_input(&root_ref).unwrap_or_else(|e| panic!("{name}: {e}"));
                let root = m.entry().root_instr();
                let indices = index_params(&m, &grouped);
                let empty_output = root.shape().element_count().unwrap_or(1) == 0;
                let mut modes = Vec::new();
                let mut reasons = Vec::new();
                let calls_computation = matches!(opcode, hlo::Opcode::Fusion | hlo::Opcode::Call);
                for j in 0..root.operands().len() {
                    let shape = m.entry().instr(root.operands()[j]).shape();
                    let skip = if grouped.iter().any(|g| g.operands[j].is_undefined()) {
                        for g in &grouped {
                            assert_documented_undefined(&name, &g.operands[j]);
                        }
                        Some(SKIP_UNDEFINED)
                    } else if grouped.iter().any(|g| {
                        g.operands[j].maps().any(|x| {
                            x.runtime
                                .iter()
                                .any(|rv| runtime_value(&m, rv, &args).is_none())
                        })
                    }) {
                        Some(SKIP_COMPUTED_INDEX)
                    } else if empty_output || shape.element_count() == Ok(0) {
                        Some(SKIP_NO_ELEMENTS)
                    } else if !grouped.iter().all(|g| enumerable(&g.operands[j])) {
                        Some(SKIP_TOO_LARGE)
                    } else {
                        None
                    };
                    let mode = match skip {
                        Some(reason) => {
                            reasons.push(reason);
                            *tally.operand_skips.entry(reason).or_default() += 1;
                            Skip
                        }
                        None if indices.contains(&j) => Superset(SUPERSET_INDEX),
                        None if calls_computation && !fusion_shows_all(&m, root) => {
                            Superset(SUPERSET_FUSION)
                        }
                        None if calls_computation => Exact,
                        None if perturbation_shows_all(
                            &m,
                            root,
                            j,
                            shape.element_type().unwrap(),
                            shape.dims(),
                            true,
                        ) =>
                        {
                            Exact
                        }
                        None => Superset(SUPERSET_DATA),
                    };
                    let per_op = tally.per_opcode.entry(opcode.to_string()).or_default();
                    match mode {
                        Exact => {
                            tally.operands_exact += 1;
                            per_op[2] += 1;
                        }
                        Superset(_) => {
                            tally.operands_superset += 1;
                            per_op[3] += 1;
                        }
                        Skip => {}
                    }
                    modes.push(mode);
                }
                if modes.iter().all(|&x| x == Skip) {
                    tally.skip_instr(opcode, reasons.first().copied().unwrap_or(SKIP_NO_OPERANDS));
                    continue;
                }
                check_module(&name, &m, &args, &modes, 512);
                tally.checked += 1;
                tally.per_opcode.entry(opcode.to_string()).or_default()[0] += 1;
            }
        }
    }
    eprintln!(
        "corpus oracle: {} instructions checked, {} skipped; operands checked exactly {}, as superset {}",
        tally.checked, tally.skipped, tally.operands_exact, tally.operands_superset
    );
    eprintln!("instructions skipped whole, by reason:");
    for (r, n) in &tally.instr_skips {
        eprintln!("  {n:6}  {r}");
    }
    eprintln!("operands skipped, by reason:");
    for (r, n) in &tally.operand_skips {
        eprintln!("  {n:6}  {r}");
    }
    eprintln!("per opcode (instructions checked, skipped; operands exact, superset):");
    for (op, [c, s, e, u]) in &tally.per_opcode {
        eprintln!("  {op:24} {c:5} {s:5} {e:5} {u:5}");
    }
    for r in tally.instr_skips.keys().chain(tally.operand_skips.keys()) {
        assert!(ACCEPTED_SKIPS.contains(r), "unaccepted skip reason: {r}");
    }
    assert!(
        tally.checked >= 100,
        "only {} corpus instructions checked",
        tally.checked
    );
}
