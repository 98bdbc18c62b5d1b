//! Mutation testing of the parser: corpus files and the golden inputs, damaged by random
//! deletions, duplications, byte flips, truncations and token insertions, must give a
//! module or an error, never a panic. When a mutant parses, printing it must give text
//! that parses again and prints back identically.
//!
//! `HLO_MUTATIONS=N` sets the number of mutants (default 30000).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};

static RUNS: AtomicUsize = AtomicUsize::new(0);
static PARSED: AtomicUsize = AtomicUsize::new(0);

fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<PathBuf> = Vec::new();
        for dir in [root.join("tests/text"), root.join("tests/text/errors")] {
            if let Ok(rd) = fs::read_dir(dir) {
                files.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
            }
        }
        if let Ok(rd) = fs::read_dir(root.join("../corpus")) {
            for d in rd.filter_map(|e| e.ok().map(|e| e.path())) {
                files.push(d.join("before_optimizations.hlo"));
                files.push(d.join("after_optimizations.hlo"));
            }
        }
        files.retain(|f| f.extension().is_some_and(|e| e == "hlo") && f.is_file());
        files.sort();
        files
            .iter()
            .filter_map(|f| fs::read(f).ok())
            .filter(|b| b.len() < 200_000)
            .collect()
    })
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    "%x",
    "f32[",
    "s32[]",
    "-",
    "...",
    "\"",
    "/*",
    "*/",
    "nan(0x",
    "<=",
    "->",
    "?",
    "ROOT ",
    "ENTRY ",
    "{...}",
    "99999999999999999999",
    "1e999",
    "-inf",
    "(f32[], ",
    "async-start",
    "-start",
    "calls=",
    "/*index=5*/",
    "\\",
    "\n",
    "T(8,128)",
];

/// One edit of the text.
#[derive(Clone, Debug)]
enum Edit {
    Delete(u32, u16),
    Duplicate(u32, u16, u32),
    Flip(u32, u8),
    Truncate(u32),
    Insert(u32, u8),
}

#[derive(Clone, Debug)]
struct Mutant {
    seed: u32,
    edits: Vec<Edit>,
}

impl Arbitrary for Mutant {
    fn arbitrary(g: &mut Gen) -> Mutant {
        let n = 1 + usize::arbitrary(g) % 3;
        let edits = (0..n)
            .map(|_| match u8::arbitrary(g) % 5 {
                0 => Edit::Delete(u32::arbitrary(g), u16::arbitrary(g) % 64),
                1 => Edit::Duplicate(
                    u32::arbitrary(g),
                    u16::arbitrary(g) % 256,
                    u32::arbitrary(g),
                ),
                2 => Edit::Flip(u32::arbitrary(g), u8::arbitrary(g)),
                3 => Edit::Truncate(u32::arbitrary(g)),
                _ => Edit::Insert(u32::arbitrary(g), u8::arbitrary(g)),
            })
            .collect();
        Mutant {
            seed: u32::arbitrary(g),
            edits,
        }
    }
}

fn apply(mut text: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = text.len().max(1);
        let at = |p: u32| p as usize % len;
        match *e {
            Edit::Delete(p, n) => {
                let s = at(p).min(text.len());
                let end = (s + n as usize).min(text.len());
                text.drain(s..end);
            }
            Edit::Duplicate(p, n, to) => {
                let s = at(p).min(text.len());
                let end = (s + n as usize).min(text.len());
                let piece = text[s..end].to_vec();
                let t = at(to).min(text.len());
                text.splice(t..t, piece);
            }
            Edit::Flip(p, b) => {
                if !text.is_empty() {
                    let i = at(p);
                    text[i] = b;
                }
            }
            Edit::Truncate(p) => text.truncate(at(p)),
            Edit::Insert(p, k) => {
                let t = at(p).min(text.len());
                let tok = TOKENS[k as usize % TOKENS.len()].as_bytes();
                text.splice(t..t, tok.iter().copied());
            }
        }
    }
    text
}

fn property(m: Mutant) -> TestResult {
    let seeds = seeds();
    if seeds.is_empty() {
        return TestResult::discard();
    }
    let bytes = apply(seeds[m.seed as usize % seeds.len()].clone(), &m.edits);
    let text = String::from_utf8_lossy(&bytes);
    RUNS.fetch_add(1, Ordering::Relaxed);
    match hlo::parse_module(&text) {
        Err(e) => {
            // Rendering the error must not panic either.
            let _ = e.to_string();
            TestResult::passed()
        }
        Ok(module) => {
            PARSED.fetch_add(1, Ordering::Relaxed);
            // The verifier and the graph export take any parsed module without panicking.
            if let Err(errors) = hlo::verifier::verify(&module) {
                let _ = errors.iter().map(ToString::to_string).count();
            }
            let _ = hlo::graph::to_dot(&hlo::graph::Graph::of_module(&module));
            let printed = hlo::print_module(&module);
            match hlo::parse_module(&printed) {
                Ok(again) => TestResult::from_bool(hlo::print_module(&again) == printed),
                Err(e) => {
                    TestResult::error(format!("printed mutant does not parse: {e}\n{printed}"))
                }
            }
        }
    }
}

#[test]
fn mutants_never_panic() {
    let n: u64 = std::env::var("HLO_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30_000);
    QuickCheck::new()
        .tests(n)
        .max_tests(n * 2)
        .quickcheck(property as fn(Mutant) -> TestResult);
    println!(
        "mutation test: {} mutants parsed or rejected without panicking ({} parsed, {} seeds)",
        RUNS.load(Ordering::Relaxed),
        PARSED.load(Ordering::Relaxed),
        seeds().len()
    );
}
