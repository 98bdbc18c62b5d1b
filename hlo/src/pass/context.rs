//! A [`Pass`] and the context it runs in: what a pass run is instrumented with (disabled
//! passes, the verifier hook, timing and change counts, dumps). One file because each
//! names the other: a pass runs under a context, a context runs passes.

use std::collections::BTreeSet;
use std::time::Instant;

use super::dump::DumpConfig;
use super::error::PassError;
use super::stats::PassStats;
use crate::ir::Module;

/// A module-level transformation.
///
/// `run` returns whether the module changed; a pass that reports `false` must leave the
/// module exactly as it was (the fixed-point wrapper and the dumps rely on it).
pub trait Pass {
    /// The pass name (`dce`, `algsimp`, ...), used to disable it and in dumps and timing.
    fn name(&self) -> &str;

    /// One line saying what the pass does (for `hloc opt --list-passes`).
    fn description(&self) -> &str;

    /// Runs the pass on `module`, returning whether it changed anything.
    fn run(&mut self, module: &mut Module) -> Result<bool, PassError>;

    /// Runs the pass under `ctx`. Leaf passes keep this default; pipelines override it to
    /// instrument each of their passes.
    fn run_in(&mut self, module: &mut Module, ctx: &mut PassContext) -> Result<bool, PassError> {
        let _ = ctx;
        self.run(module)
    }

    /// True for passes made of other passes (pipelines, fixed points): they are not timed
    /// or dumped as one pass, their passes are.
    fn is_composite(&self) -> bool {
        false
    }
}

/// A check run on the module after every pass (the verifier); `Err` holds its report.
pub type VerifyHook = Box<dyn FnMut(&Module) -> Result<(), String>>;

/// The instrumentation of one run of a pass pipeline.
#[derive(Default)]
pub struct PassContext {
    disabled: BTreeSet<String>,
    verify: Option<VerifyHook>,
    dump: Option<DumpConfig>,
    dump_step: u32,
    stats: PassStats,
}

impl std::fmt::Debug for PassContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassContext")
            .field("disabled", &self.disabled)
            .field("verify", &self.verify.is_some())
            .field("dump", &self.dump)
            .field("stats", &self.stats)
            .finish()
    }
}

impl PassContext {
    /// A context with nothing disabled, no verifier, no dumps.
    pub fn new() -> PassContext {
        PassContext::default()
    }

    /// Disables the pass (or pipeline) named `name`: pipelines skip it.
    pub fn disable(&mut self, name: impl Into<String>) {
        self.disabled.insert(name.into());
    }

    /// True when `name` is disabled.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled.contains(name)
    }

    /// Runs `hook` after every pass; a failure stops the run with [`PassError::Verify`].
    pub fn set_verifier(&mut self, hook: VerifyHook) {
        self.verify = Some(hook);
    }

    /// Writes per-pass dumps as `config` says.
    pub fn set_dump(&mut self, config: DumpConfig) {
        self.dump = Some(config);
    }

    /// Timing and change counts collected so far.
    pub fn stats(&self) -> &PassStats {
        &self.stats
    }

    /// Runs `pass` under this context, inside pipeline `pipeline`, with `next` the name of
    /// the pass that follows (for dump names). Composite passes run their own passes
    /// through this method; leaf passes are timed, verified and dumped here.
    pub fn run_pass(
        &mut self,
        pass: &mut dyn Pass,
        module: &mut Module,
        pipeline: &str,
        next: &str,
    ) -> Result<bool, PassError> {
        let name = pass.name().to_string();
        if self.is_disabled(&name) {
            log::debug!(target: "hlo::pass", "skipping disabled pass `{name}`");
            return Ok(false);
        }
        if pass.is_composite() {
            return pass.run_in(module, self);
        }
        let start = Instant::now();
        let changed = pass.run_in(module, self)?;
        let elapsed = start.elapsed();
        self.stats.record(&name, elapsed, changed);
        log::debug!(target: "hlo::pass",
            "{pipeline}: pass `{name}` {} in {:.3} ms",
            if changed {
                "changed the module"
            } else {
                "made no change"
            },
            elapsed.as_secs_f64() * 1e3
        );
        if let Some(verify) = self.verify.as_mut() {
            verify(module).map_err(|message| PassError::Verify {
                pass: name.clone(),
                message,
            })?;
        }
        if changed {
            if let Some(dump) = &self.dump {
                if dump.wants_pass(&name) {
                    self.dump_step += 1;
                    dump.write_between_passes(module, self.dump_step, pipeline, &name, next)?;
                }
            }
        }
        Ok(changed)
    }
}
