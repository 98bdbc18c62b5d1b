//! Pipelines (passes in order, nesting) and the fixed-point wrapper.

use super::context::{Pass, PassContext};
use super::error::PassError;
use crate::ir::Module;

/// Passes run in order. A pipeline is itself a pass, so pipelines nest.
pub struct Pipeline {
    name: String,
    passes: Vec<Box<dyn Pass>>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.passes.iter().map(|p| p.name()).collect();
        f.debug_struct("Pipeline")
            .field("name", &self.name)
            .field("passes", &names)
            .finish()
    }
}

impl Pipeline {
    /// An empty pipeline named `name`.
    pub fn new(name: impl Into<String>) -> Pipeline {
        Pipeline {
            name: name.into(),
            passes: Vec::new(),
        }
    }

    /// Appends a pass (builder style).
    pub fn with(mut self, pass: impl Pass + 'static) -> Pipeline {
        self.passes.push(Box::new(pass));
        self
    }

    /// Appends a boxed pass.
    pub fn add(&mut self, pass: Box<dyn Pass>) {
        self.passes.push(pass);
    }

    /// The passes, in order.
    pub fn passes(&self) -> impl Iterator<Item = &dyn Pass> + '_ {
        self.passes.iter().map(|p| p.as_ref())
    }

    /// Number of passes (not counting those of nested pipelines).
    pub fn len(&self) -> usize {
        self.passes.len()
    }

    /// True when the pipeline holds no pass.
    pub fn is_empty(&self) -> bool {
        self.passes.is_empty()
    }
}

impl Pass for Pipeline {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a sequence of passes"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        self.run_in(module, &mut PassContext::default())
    }

    fn run_in(&mut self, module: &mut Module, ctx: &mut PassContext) -> Result<bool, PassError> {
        let mut changed = false;
        let n = self.passes.len();
        for i in 0..n {
            let next = if i + 1 < n {
                self.passes[i + 1].name().to_string()
            } else {
                "pipeline-end".to_string()
            };
            let pass = self.passes[i].as_mut();
            changed |= ctx.run_pass(pass, module, &self.name, &next)?;
        }
        Ok(changed)
    }

    fn is_composite(&self) -> bool {
        true
    }
}

/// Repeats a pass until it reports no change, at most `max_iterations` times (XLA's
/// `HloPassFix`). Reaching the cap is logged as a warning, not an error: the module is
/// still valid, only not at a fixed point.
pub struct FixedPoint {
    name: String,
    inner: Box<dyn Pass>,
    max_iterations: usize,
}

impl std::fmt::Debug for FixedPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedPoint")
            .field("name", &self.name)
            .field("inner", &self.inner.name())
            .field("max_iterations", &self.max_iterations)
            .finish()
    }
}

impl FixedPoint {
    /// XLA's default cap.
    pub const DEFAULT_MAX_ITERATIONS: usize = 25;

    /// Repeats `inner` (at most [`FixedPoint::DEFAULT_MAX_ITERATIONS`] times); named
    /// `<inner>-fixed-point`.
    pub fn new(inner: impl Pass + 'static) -> FixedPoint {
        let name = format!("{}-fixed-point", inner.name());
        FixedPoint {
            name,
            inner: Box::new(inner),
            max_iterations: Self::DEFAULT_MAX_ITERATIONS,
        }
    }

    /// Sets the iteration cap (at least 1).
    pub fn max_iterations(mut self, n: usize) -> FixedPoint {
        self.max_iterations = n.max(1);
        self
    }
}

impl Pass for FixedPoint {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "repeats a pass until it changes nothing"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        self.run_in(module, &mut PassContext::default())
    }

    fn run_in(&mut self, module: &mut Module, ctx: &mut PassContext) -> Result<bool, PassError> {
        let mut changed = false;
        for iteration in 0..self.max_iterations {
            let next = self.inner.name().to_string();
            if !ctx.run_pass(self.inner.as_mut(), module, &self.name, &next)? {
                return Ok(changed);
            }
            changed = true;
            log::trace!(target: "hlo::pass",
                "{}: iteration {} changed",
                self.name,
                iteration + 1
            );
        }
        log::warn!(target: "hlo::pass",
            "{}: still changing after {} iterations; stopping",
            self.name,
            self.max_iterations
        );
        Ok(changed)
    }

    fn is_composite(&self) -> bool {
        true
    }
}
