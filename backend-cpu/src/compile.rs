//! The CPU backend as the driver sees it: C for a program's kernels, the compiler and the
//! cache behind [`CpuBackend::compile`], and the loaded result ([`CpuExecutable`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plan::{AllocationKind, ArraySpec, Backend, Program};

use crate::error::BackendError;
use crate::kernel_source::KernelSource;
use crate::run::{CpuExecutable, RunState};
use crate::{cache, cc, data, kernel_calls, memory};

/// Kernel C text per translation unit worth a compiler process of its own (a vectorized
/// loop with inlined transcendentals of this size takes the compiler ~25 ms).
const UNIT_MIN_BYTES: usize = 2 << 10;
/// Most translation units (compiler processes) per module.
const MAX_UNITS: usize = 8;

/// How many translation units to compile a module's kernels in at most: one per core
/// (at most [`MAX_UNITS`]); each also gets at least [`UNIT_MIN_BYTES`] of kernel code.
fn compile_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(MAX_UNITS)
}

/// The CPU target: where compiled objects are cached, which compiler builds them, and how
/// the executables it makes run.
#[derive(Clone, Debug)]
pub struct CpuBackend {
    /// The object cache directory.
    pub cache_dir: PathBuf,
    /// The C compiler command.
    pub compiler: String,
    /// Threads for large kernels.
    pub threads: usize,
    /// Most iterations one `while` loop may run before a run fails.
    pub max_while_iterations: u64,
    /// How the kernels are printed for the compiler ([`KernelSource::c`] unless a target
    /// that runs on this CPU brings its own).
    pub kernel_source: KernelSource,
}

impl CpuBackend {
    /// The backend with `cache_dir` (else [`cache::cache_dir`]'s default), `compiler`
    /// (else `$HLOC_CC`, else `cc`) and `threads` (else rayon's pool size).
    pub fn new(
        cache_dir: Option<&std::path::Path>,
        compiler: Option<String>,
        threads: Option<usize>,
        max_while_iterations: u64,
    ) -> Self {
        CpuBackend {
            cache_dir: cache::cache_dir(cache_dir),
            compiler: compiler.unwrap_or_else(cc::compiler),
            threads: threads.unwrap_or_else(rayon::current_num_threads).max(1),
            max_while_iterations,
            kernel_source: KernelSource::c(),
        }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn source(&self, program: &Program) -> String {
        // A printer's refusal is reported by `compile`, which prints the units again.
        self.kernel_source
            .source_of(&program.kernels, &kernel_calls::calls_per_run(program))
            .unwrap_or_else(|e| format!("/* {e} */"))
    }

    fn compile(
        &self,
        program: Arc<Program>,
        source: &str,
        stages: &mut Vec<(&'static str, Duration)>,
    ) -> Result<Box<dyn plan::Executable>, BackendError> {
        Ok(Box::new(self.compile_cpu(program, source, stages)?))
    }
}

impl CpuBackend {
    /// [`Backend::compile`], keeping the executable's type (for callers that use the CPU
    /// backend directly).
    pub fn compile_cpu(
        &self,
        program: Arc<Program>,
        source: &str,
        stages: &mut Vec<(&'static str, Duration)>,
    ) -> Result<CpuExecutable, BackendError> {
        let entry = self.kernel_source.entry;
        let names: Vec<String> = program.kernels.iter().map(|k| entry(&k.name)).collect();
        let calls = kernel_calls::calls_per_run(&program);
        // Printed only on a cache miss; a printer's refusal wins over what follows it.
        let refusal = std::cell::RefCell::new(None);
        let units = || {
            self.kernel_source
                .units_of(&program.kernels, &calls, compile_jobs(), UNIT_MIN_BYTES)
                .unwrap_or_else(|e| {
                    *refusal.borrow_mut() = Some(e);
                    Vec::new()
                })
        };
        let built = cache::load_or_build(
            source,
            &units,
            &names,
            &self.cache_dir,
            &self.compiler,
            stages,
        );
        if let Some(e) = refusal.into_inner() {
            return Err(e);
        }
        let (loaded, cache_hit) = built?;
        let constants_start = Instant::now();
        let mut constants = Vec::with_capacity(program.allocations.len());
        for a in &program.allocations {
            constants.push(match &a.kind {
                AllocationKind::Constant(lit) => {
                    let spec = constant_spec(lit)?;
                    let bytes = data::to_buffer(lit, &spec).ok_or_else(|| {
                        BackendError::Internal("constant of an unsupported element type".into())
                    })?;
                    Some(memory::words_of(&bytes))
                }
                _ => None,
            });
        }
        stages.push(("constants", constants_start.elapsed()));
        Ok(CpuExecutable {
            program,
            loaded,
            constants,
            run_state: RunState::default(),
            threads: self.threads,
            max_while_iterations: self.max_while_iterations,
            cache_hit,
        })
    }
}

/// The layout of a constant's literal, as the executor binds it.
pub fn constant_spec(lit: &hlo::literal::ArrayLiteral) -> Result<ArraySpec, BackendError> {
    let shape = lit.shape();
    let et = lit.element_type();
    let ty = codegen::kir::ScalarType::from_element(et)
        .ok_or_else(|| BackendError::Internal(format!("constant of type {}", et.as_str())))?;
    let rank = shape.dims().len();
    Ok(ArraySpec {
        buffer: 0,
        ty,
        element_type: et,
        dims: shape.dims().to_vec(),
        minor_to_major: shape
            .layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_else(|| (0..rank as i64).rev().collect()),
    })
}
