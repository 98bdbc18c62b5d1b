//! The JAX corpus of the repository, as tests read it: `corpus/NAME/` holds
//! `before_optimizations.hlo`, `after_optimizations.hlo`, `inputs.npz` (`in0`, `in1`, ...
//! by parameter number) and `outputs.npz` (XLA:CPU's results, `out0`, ... in flattened
//! result order); `corpus/MANIFEST.tsv` lists the programs.

use std::path::{Path, PathBuf};

/// The corpus directory of the repository.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

/// One corpus program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The program's name (its directory).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
}

/// The two HLO files every program has.
pub const HLO_FILES: [&str; 2] = ["before_optimizations.hlo", "after_optimizations.hlo"];

impl Program {
    /// `before_optimizations.hlo`: the module as JAX lowered it.
    pub fn before(&self) -> PathBuf {
        self.dir.join(HLO_FILES[0])
    }

    /// `after_optimizations.hlo`: XLA:CPU's optimized module.
    pub fn after(&self) -> PathBuf {
        self.dir.join(HLO_FILES[1])
    }

    /// Both HLO files, before then after.
    pub fn hlo_files(&self) -> [PathBuf; 2] {
        [self.before(), self.after()]
    }
}

/// Every program of MANIFEST.tsv, in its order. Panics (a test setup error) when the
/// manifest is missing.
pub fn programs() -> Vec<Program> {
    let root = dir();
    let manifest = std::fs::read_to_string(root.join("MANIFEST.tsv"))
        .unwrap_or_else(|e| panic!("{}: {e}", root.join("MANIFEST.tsv").display()));
    manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|n| !n.is_empty())
        .map(|n| Program {
            name: n.to_string(),
            dir: root.join(n),
        })
        .collect()
}

#[cfg(feature = "eval")]
pub use values::{flatten, inputs, outputs};

#[cfg(feature = "eval")]
mod values {
    use std::path::Path;

    use hlo::{Literal, Module};
    use hlo_eval::npy::{adapt_to, read_npz};

    /// Leaves of a (nested) tuple literal in flattened order.
    pub fn flatten(l: Literal, out: &mut Vec<Literal>) {
        match l {
            Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
            other => out.push(other),
        }
    }

    /// The recorded inputs of program directory `dir` (`in0`, ... of `inputs.npz`), adapted
    /// to `module`'s entry parameters by parameter number.
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

    /// XLA's recorded outputs of program directory `dir` (`out0`, ... of `outputs.npz`),
    /// in flattened result order, adapted to the leaves of `module`'s result shape.
    pub fn outputs(module: &Module, dir: &Path) -> Result<Vec<Literal>, String> {
        let bytes = std::fs::read(dir.join("outputs.npz")).map_err(|e| e.to_string())?;
        let mut arrays = read_npz(&bytes).map_err(|e| e.to_string())?;
        let mut leaves = Vec::new();
        leaf_shapes(module.entry().root_instr().shape(), &mut leaves);
        let mut out = Vec::new();
        for (k, shape) in leaves.iter().enumerate() {
            let key = format!("out{k}");
            let pos = arrays
                .iter()
                .position(|(n, _)| *n == key)
                .ok_or(format!("outputs.npz lacks {key}"))?;
            let (_, a) = arrays.swap_remove(pos);
            out.push(Literal::Array(
                adapt_to(a, shape, &key).map_err(|e| e.to_string())?,
            ));
        }
        Ok(out)
    }

    fn leaf_shapes<'a>(s: &'a hlo::Shape, out: &mut Vec<&'a hlo::Shape>) {
        match s {
            hlo::Shape::Tuple(elems) => elems.iter().for_each(|e| leaf_shapes(e, out)),
            other => out.push(other),
        }
    }
}
