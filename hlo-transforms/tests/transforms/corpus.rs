//! The JAX corpus as tests read it: program names from MANIFEST.tsv, recorded inputs
//! adapted to a module's parameters, and tuple outputs flattened in XLA's order. Included
//! by path from the tests that evaluate corpus programs.

use std::path::{Path, PathBuf};

use hlo::{Literal, Module};
use hlo_eval::npy::{adapt_to, read_npz};

/// The corpus directory of the repository.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

/// Program names in MANIFEST.tsv order.
pub fn program_names() -> Vec<String> {
    let manifest =
        std::fs::read_to_string(corpus_dir().join("MANIFEST.tsv")).expect("MANIFEST.tsv");
    manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// Leaves of a (nested) tuple literal in flattened order.
pub fn flatten(l: Literal, out: &mut Vec<Literal>) {
    match l {
        Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}

/// Inputs `in0..` of `dir/inputs.npz` adapted to the entry parameters' types (by
/// parameter number).
pub fn inputs(module: &Module, dir: &Path) -> Result<Vec<Literal>, String> {
    let bytes = std::fs::read(dir.join("inputs.npz")).map_err(|e| e.to_string())?;
    let mut arrays = read_npz(&bytes).map_err(|e| e.to_string())?;
    let entry = module.entry();
    let mut args = Vec::new();
    for n in 0..entry.parameters().len() {
        let key = format!("in{n}");
        let pos = arrays
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or(format!("inputs.npz lacks {key}"))?;
        let (_, a) = arrays.swap_remove(pos);
        let p = entry.parameter(n).ok_or(format!("no parameter {n}"))?;
        args.push(Literal::Array(
            adapt_to(a, entry.instr(p).shape(), &key).map_err(|e| e.to_string())?,
        ));
    }
    Ok(args)
}
