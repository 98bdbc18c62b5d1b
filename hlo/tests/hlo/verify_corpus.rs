//! Every corpus module (before and after XLA's optimizations) verifies clean, and the
//! verifier locates its errors: a quickcheck property changes one instruction's shape
//! (dimensions or element type) and expects an error at that instruction, unless the
//! change made no difference.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use hlo::shape::ElementType;
use hlo::verifier::{verify, verify_parsed, verify_with, VerifyOptions};
use hlo::{parse_module, parse_module_with, Module, Opcode, ParseOptions, Shape};
use quickcheck::{QuickCheck, TestResult};

fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no corpus at {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for d in dirs {
        for name in ["before_optimizations.hlo", "after_optimizations.hlo"] {
            let f = d.join(name);
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files
}

fn load(path: &Path) -> Module {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn corpus_verifies_clean() {
    let files = corpus_files();
    assert!(
        files.len() >= 60,
        "expected the whole corpus, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let parsed = parse_module_with(&text, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Err(errors) = verify_parsed(&parsed, &text) {
            for e in errors {
                failures.push(format!("{}: {e}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "verifier errors:\n{}",
        failures.join("\n")
    );
}

/// XLA's optimized modules have every layout assigned, consistently.
#[test]
fn optimized_corpus_verifies_layout_sensitive() {
    let options = VerifyOptions {
        layout_sensitive: true,
    };
    let mut failures = Vec::new();
    for path in corpus_files()
        .iter()
        .filter(|p| p.ends_with("after_optimizations.hlo"))
    {
        if let Err(errors) = verify_with(&load(path), &options) {
            for e in errors {
                failures.push(format!("{}: {e}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "layout errors:\n{}",
        failures.join("\n")
    );
}

/// A different shape for `s`: one dimension changed, or the element type changed.
fn mutate(s: &Shape, pick: usize) -> Option<Shape> {
    let a = s.as_array()?;
    let mut dims = a.dims().to_vec();
    let mut et = a.element_type();
    if pick.is_multiple_of(2) && !dims.is_empty() {
        let i = (pick / 2) % dims.len();
        dims[i] += 1 + (pick % 3) as i64;
    } else {
        const TYPES: [ElementType; 4] = [
            ElementType::F32,
            ElementType::S32,
            ElementType::F16,
            ElementType::Pred,
        ];
        let t = TYPES[pick % TYPES.len()];
        et = if t == et { ElementType::U8 } else { t };
    }
    Some(Shape::array(et, dims))
}

/// Changes reported / accepted because the opcode declares its own shape.
static REPORTED: AtomicUsize = AtomicUsize::new(0);
static ACCEPTED: AtomicUsize = AtomicUsize::new(0);

static MODULES: OnceLock<Vec<(String, Module)>> = OnceLock::new();

fn modules() -> &'static [(String, Module)] {
    MODULES.get_or_init(|| {
        corpus_files()
            .iter()
            .map(|p| (p.display().to_string(), load(p)))
            .collect()
    })
}

/// Opcodes whose result shape is part of their specification (a reshape's target, a
/// convert's type, ...): a changed declaration may be consistent, and only their users
/// can object (or nobody, when the users are of this kind too).
fn declares_its_shape(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Convert
            | Opcode::Bitcast
            | Opcode::BitcastConvert
            | Opcode::Reshape
            | Opcode::Broadcast
            | Opcode::CustomCall
            | Opcode::Iota
            | Opcode::Rng
            | Opcode::RngBitGenerator
            | Opcode::Dot
            | Opcode::Convolution
    )
}

/// Changes one instruction's shape; the verifier must object at that instruction, at one
/// of its users, or (for a root) at the computation or its callers, unless the opcode
/// declares its own shape.
fn shape_change_is_reported(file: usize, comp: usize, instr: usize, pick: usize) -> TestResult {
    let mods = modules();
    let (name, original) = &mods[file % mods.len()];
    let mut m = original.clone();
    let cid = hlo::CompId::from_index(comp % m.computation_count());
    let c = m.computation(cid);
    let ids = c.instruction_ids();
    let id = ids[instr % ids.len()];
    let i = c.instr(id);
    if matches!(i.opcode(), Opcode::Parameter | Opcode::Constant) {
        return TestResult::discard();
    }
    let Some(new) = mutate(i.shape(), pick) else {
        return TestResult::discard();
    };
    if new.compatible(i.shape()) {
        return TestResult::discard();
    }
    let iname = i.name().to_string();
    let users: Vec<String> = i
        .users()
        .iter()
        .map(|&u| c.instr(u).name().to_string())
        .collect();
    let is_root = c.root() == id;
    let op = i.opcode();
    m.computation_mut(cid).instr_mut(id).set_shape(new);
    match verify(&m) {
        Ok(()) if declares_its_shape(op) => {
            ACCEPTED.fetch_add(1, Ordering::Relaxed);
            TestResult::passed()
        }
        Ok(()) => TestResult::error(format!(
            "{name}: changing `{iname}` ({op}) was not reported"
        )),
        Err(errors) => {
            let located = errors.iter().any(|e| {
                let same_comp = e.ids.is_some_and(|(c, _)| c == cid);
                match &e.instruction {
                    Some(n) if same_comp => *n == iname || users.contains(n),
                    _ => is_root,
                }
            });
            if located {
                REPORTED.fetch_add(1, Ordering::Relaxed);
                TestResult::passed()
            } else {
                TestResult::error(format!(
                    "{name}: changing `{iname}` reported elsewhere: {}",
                    errors[0]
                ))
            }
        }
    }
}

#[test]
fn changed_shapes_are_reported_at_their_instruction() {
    let n: u64 = std::env::var("VERIFY_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    QuickCheck::new()
        .tests(n)
        .max_tests(n * 10)
        .quickcheck(shape_change_is_reported as fn(usize, usize, usize, usize) -> TestResult);
    println!(
        "shape changes: {} reported at the instruction or its users, {} accepted (opcode declares its shape)",
        REPORTED.load(Ordering::Relaxed),
        ACCEPTED.load(Ordering::Relaxed)
    );
}
