//! Dumps named as XLA names them (`--xla_dump_to`, `--xla_dump_hlo_pass_re`), so that
//! ours can be diffed against XLA's file by file:
//!
//! - `module_NNNN.<name>.before_optimizations.txt` and `..after_optimizations.txt`;
//! - `module_NNNN.<name>.SSSS.<pipeline>.after_<pass>.before_<next>.txt` after every pass
//!   whose name the filter accepts and that changed the module, `SSSS` counting these
//!   dumps from 1 and `<next>` being the following pass of the pipeline (`pipeline-end`
//!   after the last).
//!
//! `NNNN` is the module's id (four digits, zero padded), `<name>` the module name with
//! characters other than letters, digits, `-`, `_` and `.` replaced by `_`.

use std::path::{Path, PathBuf};

use super::error::PassError;
use crate::ir::Module;

/// Accepts the names of the passes to dump after.
pub type PassFilter = Box<dyn Fn(&str) -> bool>;

/// Where and what to dump.
pub struct DumpConfig {
    dir: PathBuf,
    module_id: u32,
    pass_filter: Option<PassFilter>,
}

impl std::fmt::Debug for DumpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpConfig")
            .field("dir", &self.dir)
            .field("module_id", &self.module_id)
            .field("pass_filter", &self.pass_filter.is_some())
            .finish()
    }
}

/// `module_NNNN.<sanitized name>`.
pub fn module_dump_prefix(module_id: u32, module_name: &str) -> String {
    let name: String = module_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("module_{module_id:04}.{name}")
}

/// The file name of the dump taken after `pass` (step `step` of the module) in
/// `pipeline`, before `next`.
pub fn dump_file_name(
    module_id: u32,
    module_name: &str,
    step: u32,
    pipeline: &str,
    pass: &str,
    next: &str,
) -> String {
    format!(
        "{}.{step:04}.{pipeline}.after_{pass}.before_{next}.txt",
        module_dump_prefix(module_id, module_name)
    )
}

impl DumpConfig {
    /// Dumps into `dir` (created when missing) for module id `module_id`; no per-pass
    /// dumps until [`DumpConfig::with_pass_filter`].
    pub fn new(dir: impl Into<PathBuf>, module_id: u32) -> DumpConfig {
        DumpConfig {
            dir: dir.into(),
            module_id,
            pass_filter: None,
        }
    }

    /// Dumps after every pass whose name `filter` accepts (and that changed the module).
    pub fn with_pass_filter(mut self, filter: PassFilter) -> DumpConfig {
        self.pass_filter = Some(filter);
        self
    }

    /// The dump directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when a dump is wanted after pass `name`.
    pub fn wants_pass(&self, name: &str) -> bool {
        self.pass_filter.as_ref().is_some_and(|f| f(name))
    }

    fn write(&self, file: &str, module: &Module) -> Result<PathBuf, PassError> {
        let path = self.dir.join(file);
        let io = |source| PassError::Dump {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        std::fs::write(&path, crate::print_module(module)).map_err(io)?;
        log::debug!(target: "hlo::pass", "dumped {}", path.display());
        Ok(path)
    }

    /// Writes `module_NNNN.<name>.before_optimizations.txt`.
    pub fn write_before_optimizations(&self, module: &Module) -> Result<PathBuf, PassError> {
        let prefix = module_dump_prefix(self.module_id, module.name());
        self.write(&format!("{prefix}.before_optimizations.txt"), module)
    }

    /// Writes `module_NNNN.<name>.after_optimizations.txt`.
    pub fn write_after_optimizations(&self, module: &Module) -> Result<PathBuf, PassError> {
        let prefix = module_dump_prefix(self.module_id, module.name());
        self.write(&format!("{prefix}.after_optimizations.txt"), module)
    }

    /// Writes the dump taken after `pass` (step `step`) in `pipeline`, before `next`.
    pub fn write_between_passes(
        &self,
        module: &Module,
        step: u32,
        pipeline: &str,
        pass: &str,
        next: &str,
    ) -> Result<PathBuf, PassError> {
        let file = dump_file_name(self.module_id, module.name(), step, pipeline, pass, next);
        self.write(&file, module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_xla() {
        assert_eq!(
            dump_file_name(0, "jit_f", 3, "simplification", "dce", "cse"),
            "module_0000.jit_f.0003.simplification.after_dce.before_cse.txt"
        );
        assert_eq!(module_dump_prefix(12, "a/b c"), "module_0012.a_b_c");
    }
}
