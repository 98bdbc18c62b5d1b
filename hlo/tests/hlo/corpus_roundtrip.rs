//! Round trip of the JAX corpus: every `corpus/*/before_optimizations.hlo` and
//! `corpus/*/after_optimizations.hlo` must parse, and print -> parse -> print must reach a
//! fixpoint, in the file's own conventions and in XLA's default ones. Also reports how many
//! files print back byte for byte.

use std::fs;
use std::path::{Path, PathBuf};

use hlo::{
    parse_module, parse_module_with, print_module, print_module_with, ParseOptions, PrintOptions,
};

fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut dirs: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) => panic!("no corpus at {}: {e}", dir.display()),
    };
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

#[test]
fn corpus_round_trips() {
    let files = corpus_files();
    let (mut identical, mut warnings) = (0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let name = path.display().to_string();
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let options = ParseOptions {
            file_name: Some(name.clone()),
            ..ParseOptions::default()
        };
        let parsed = match parse_module_with(&text, &options) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{e}"));
                continue;
            }
        };
        warnings += parsed.warnings.len();
        let printed = print_module(&parsed.module);
        let reparsed = match parse_module(&printed) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: printed text does not parse: {e}"));
                continue;
            }
        };
        if print_module(&reparsed) != printed {
            failures.push(format!("{name}: print -> parse -> print is not a fixpoint"));
        }
        if printed == text {
            identical += 1;
        }
        // XLA's default conventions (sigils, operand shapes) must round-trip too.
        let canonical = print_module_with(&parsed.module, &PrintOptions::default());
        match parse_module(&canonical) {
            Ok(m) if print_module_with(&m, &PrintOptions::default()) == canonical => {}
            Ok(_) => failures.push(format!("{name}: canonical text is not a fixpoint")),
            Err(e) => failures.push(format!("{name}: canonical text does not parse: {e}")),
        }
    }
    println!(
        "corpus: {} files checked, {identical} printed back byte for byte, {warnings} warnings",
        files.len()
    );
    assert!(
        failures.is_empty(),
        "corpus failures:\n{}",
        failures.join("\n")
    );
    assert!(!files.is_empty(), "the corpus directory has no .hlo files");
}
