//! `hloc.compile` and `hloc.Executable`: a module compiled for this CPU, called on numpy
//! arrays, or compiled for a GPU (`target="h100"|"h200"`: CUDA through NVRTC, inspected but
//! not run here); and the reference evaluator on the same arguments.

use hlo::Literal;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{bytes_to_numpy, hold, leaves, to_literal, to_numpy, Held, Spec};
use crate::dtypes::{self, Dtypes};
use crate::errors;
use crate::module::parse_verified;
use crate::output_memory::{hand_over_min_bytes, numpy_over};

/// The memory limit of a compilation or evaluation and how to raise it.
struct Limit {
    bytes: u64,
    hint: String,
}

/// Environment variable with the default limit (as `hloc run` reads it).
const MAX_MEMORY_ENV: &str = hlo_eval::memory::MAX_MEMORY_ENV;

impl Limit {
    /// `memory_limit` (bytes, or a size like "8G"), else `HLOC_MAX_MEMORY`, else half
    /// the available memory.
    fn resolve(memory_limit: Option<&Bound<'_, PyAny>>) -> PyResult<Limit> {
        let how = format!(
            "raise it with memory_limit=SIZE or {MAX_MEMORY_ENV}=SIZE (bytes, or K/M/G/T \
             as in \"8G\")"
        );
        let parse = |text: &str, source: &str| {
            hlo_eval::memory::parse_size(text)
                .map_err(|e| PyValueError::new_err(format!("{source}: {e}")))
        };
        let (bytes, source) = match memory_limit {
            Some(v) if v.extract::<u64>().is_ok() => (v.extract::<u64>()?, "memory_limit"),
            Some(v) => match v.extract::<String>() {
                Ok(text) => (parse(&text, "memory_limit")?, "memory_limit"),
                Err(_) => {
                    return Err(PyTypeError::new_err(
                        "memory_limit must be a number of bytes or a size such as \"8G\"",
                    ))
                }
            },
            None => match std::env::var(MAX_MEMORY_ENV) {
                Ok(text) => (parse(&text, MAX_MEMORY_ENV)?, MAX_MEMORY_ENV),
                Err(_) => (
                    hlo_eval::memory::default_size_limit(),
                    hlo_eval::memory::default_size_limit_source(),
                ),
            },
        };
        let shown = hlo_eval::memory::describe_bytes(bytes);
        Ok(Limit {
            bytes,
            hint: format!("the limit is {shown} ({source}); {how}"),
        })
    }
}

/// The entry computation's parameters and output leaves, and whether the root is a tuple.
fn signature(py: Python<'_>, module: &hlo::Module) -> PyResult<(Vec<Spec>, Vec<Spec>, bool)> {
    let d = dtypes::get(py)?;
    let entry = module.entry();
    let mut params = Vec::new();
    for n in 0..entry.parameters().len() {
        let id = entry.parameter(n).ok_or_else(|| {
            errors::hlo_error(
                format!("the entry computation has no parameter {n}"),
                None,
                None,
            )
        })?;
        let instr = entry.instr(id);
        let what = format!("parameter {n} (`{}`)", instr.name());
        params.push(Spec::new(py, instr.shape(), d, &what)?);
    }
    let root = entry.instr(entry.root()).shape();
    let mut shapes = Vec::new();
    leaves(root, &mut shapes);
    let outputs = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| Spec::new(py, s, d, &format!("output {k}")))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((params, outputs, root.is_tuple()))
}

/// Converts the call's arguments, checking their count.
/// `specs` as the list of `(shape, dtype)` tuples that `parameters` and `outputs` give.
fn spec_list<'py>(py: Python<'py>, specs: &[Spec]) -> PyResult<Bound<'py, PyList>> {
    let items = specs
        .iter()
        .map(|s| s.to_py(py))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn arguments(args: &Bound<'_, PyTuple>, params: &[Spec], d: &Dtypes) -> PyResult<Vec<Literal>> {
    if args.len() != params.len() {
        return Err(PyTypeError::new_err(format!(
            "the module takes {} argument(s), got {}",
            params.len(),
            args.len()
        )));
    }
    args.iter()
        .zip(params)
        .enumerate()
        .map(|(i, (a, spec))| to_literal(i, &a, spec, d))
        .collect()
}

/// The outputs as one array (a non-tuple root) or a tuple of arrays.
fn results(py: Python<'_>, outs: &[Literal], specs: &[Spec], tuple: bool) -> PyResult<Py<PyAny>> {
    if outs.len() != specs.len() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "internal error: {} outputs for {} output shapes",
            outs.len(),
            specs.len()
        )));
    }
    let arrays = outs
        .iter()
        .zip(specs)
        .map(|(l, s)| to_numpy(py, l, s))
        .collect::<PyResult<Vec<_>>>()?;
    if tuple {
        Ok(PyTuple::new(py, arrays)?.into_any().unbind())
    } else {
        Ok(arrays
            .into_iter()
            .next()
            .map(Bound::unbind)
            .unwrap_or_else(|| py.None()))
    }
}

/// What `hloc.compile` built: an executable for this CPU, or a GPU's cubin.
enum Compiled {
    /// Loaded and ready to run.
    Cpu(Box<runtime::Executable>),
    /// NVRTC's cubin for the GPU description named (`h100`, `h200`); the package has no
    /// GPU executor yet, so it is inspected (source, report, stats), not run.
    Gpu(Box<runtime::GpuBuild>, String),
}

/// A module compiled by `hloc.compile`. For this CPU (`target="cpu"`), call it on numpy
/// arrays (or anything with `__array__`; Python scalars for rank-0 parameters): it returns
/// one numpy array for a non-tuple root, a tuple of arrays for a tuple root. The GIL is
/// released while it runs, so threads may call it (and other executables) in parallel. For
/// a GPU (`target="h100"|"h200"`) it holds the CUDA module and NVRTC's cubin: `.stats`,
/// `.kernel_source` and `.kernel_report` describe it; calling it raises
/// `hloc.UnsupportedError`.
#[pyclass(frozen, module = "hloc")]
pub struct Executable {
    compiled: Compiled,
    params: Vec<Spec>,
    outputs: Vec<Spec>,
    tuple_root: bool,
    name: String,
    limit_hint: String,
}

#[pymethods]
impl Executable {
    /// Runs the module on `args`, one per entry parameter in parameter order; each must have
    /// the parameter's shape and dtype exactly (`TypeError` for a wrong count or dtype,
    /// `ValueError` for a wrong shape, naming the parameter).
    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let exe = match &self.compiled {
            Compiled::Cpu(exe) => exe,
            Compiled::Gpu(_, target) => {
                return Err(errors::UnsupportedError::new_err(format!(
                    "this executable was compiled for the GPU `{target}`, which the Python \
                     package cannot run yet (no GPU executor): its `.kernel_source`, \
                     `.kernel_report` and `.stats` describe it. Run the module on this CPU with \
                     hloc.compile(source) (target=\"cpu\"), or test its CUDA kernels with \
                     `hloc run FILE --backend cuda-host` (a GPU: `--backend cuda`, once that \
                     executor lands)"
                )))
            }
        };
        let d = dtypes::get(py)?;
        if args.len() != self.params.len() {
            return Err(PyTypeError::new_err(format!(
                "the module takes {} argument(s), got {}",
                self.params.len(),
                args.len()
            )));
        }
        let held = args
            .iter()
            .zip(&self.params)
            .enumerate()
            .map(|(i, (a, spec))| hold(i, &a, spec, d))
            .collect::<PyResult<Vec<_>>>()?;
        let slices = held
            .iter()
            .map(Held::bytes)
            .collect::<Option<Vec<&[u8]>>>()
            .ok_or_else(|| {
                PyRuntimeError::new_err("internal error: an argument is not contiguous")
            })?;
        let mut raw = py
            .detach(|| {
                let prepared = exe.prepare_bytes(&slices)?;
                exe.run_prepared(&prepared)
            })
            .map_err(|e| errors::runtime_error(e, &self.limit_hint))?;
        drop(slices);
        drop(held);
        let arrays = self
            .outputs
            .iter()
            .enumerate()
            .map(|(k, spec)| {
                // A large output's memory becomes the array's (no copy); a small one is
                // copied, which costs less than building an array over foreign memory.
                if spec.bytes() >= hand_over_min_bytes() {
                    if let Some(buffer) = exe.take_output(&mut raw, k) {
                        return numpy_over(py, buffer, spec, d);
                    }
                }
                let bytes = exe.output_bytes(&raw, k).ok_or_else(|| {
                    PyRuntimeError::new_err(format!("internal error: no output {k}"))
                })?;
                bytes_to_numpy(py, &bytes, spec)
            })
            .collect::<PyResult<Vec<_>>>()?;
        drop(raw);
        if self.tuple_root {
            Ok(PyTuple::new(py, arrays)?.into_any().unbind())
        } else {
            Ok(arrays
                .into_iter()
                .next()
                .map(Bound::unbind)
                .unwrap_or_else(|| py.None()))
        }
    }

    /// The entry parameters: a list of `(shape, dtype)`, shape a tuple of ints, dtype a
    /// `numpy.dtype` (ml_dtypes' for bf16 and the f8 kinds).
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        spec_list(py, &self.params)
    }

    /// The outputs (the root's leaves in flattened tuple order): a list of `(shape, dtype)`.
    #[getter]
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        spec_list(py, &self.outputs)
    }

    /// Compilation figures, the keys `hloc compile --stats` prints: `kernels`,
    /// `library_calls`, `compile` (milliseconds), `cache` ("hit" or "miss"),
    /// `buffer_bytes`, `temp_bytes`, `peak_bytes`.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = match &self.compiled {
            Compiled::Cpu(exe) => exe.stats(),
            Compiled::Gpu(build, _) => &build.stats,
        };
        let d = PyDict::new(py);
        d.set_item("kernels", s.kernels)?;
        d.set_item("library_calls", s.library_calls)?;
        d.set_item("compile", s.compile_ms)?;
        d.set_item("cache", s.cache_word())?;
        d.set_item("buffer_bytes", s.buffer_bytes)?;
        d.set_item("temp_bytes", s.temp_bytes)?;
        d.set_item("peak_bytes", s.peak_bytes)?;
        Ok(d)
    }

    /// Whether the root is a tuple (calls return a tuple of arrays).
    #[getter]
    fn returns_tuple(&self) -> bool {
        self.tuple_root
    }

    /// The module after hloc's passes and fusion, as text.
    #[getter]
    fn optimized_hlo(&self) -> String {
        hlo::print_module(&self.plan().module)
    }

    /// What it was compiled for: "cpu", "h100" or "h200".
    #[getter]
    fn target(&self) -> &str {
        match &self.compiled {
            Compiled::Cpu(_) => "cpu",
            Compiled::Gpu(_, target) => target,
        }
    }

    /// The kernels' source as the compiler was given it: the C of every kernel for the CPU,
    /// the CUDA module (what `hloc compile --target GPU --dump-to` writes as `.kernels.cu`)
    /// for a GPU.
    #[getter]
    fn kernel_source(&self) -> &str {
        &self.plan().source
    }

    /// For a GPU: per kernel its launch, emitter and thread map, and what `ptxas` reports
    /// (registers, shared bytes, stack, spills), as `hloc compile --target GPU --dump-to`
    /// writes `.kernels.txt`. `ValueError` for the CPU, which has no such report.
    #[getter]
    fn kernel_report(&self) -> PyResult<String> {
        match &self.compiled {
            Compiled::Gpu(build, _) => Ok(runtime::kernels_text(build)),
            Compiled::Cpu(_) => Err(PyValueError::new_err(
                "the kernel report (launch, registers, spills) is NVRTC's, for a GPU target; \
                 this executable was compiled for the CPU (see .kernel_source and .stats)",
            )),
        }
    }

    /// `Executable(NAME, N parameters -> M outputs)`, with `, target=T` for a GPU.
    fn __repr__(&self) -> String {
        let target = match &self.compiled {
            Compiled::Cpu(_) => String::new(),
            Compiled::Gpu(_, t) => format!(", target={t}"),
        };
        format!(
            "Executable({}, {} parameter(s) -> {} output(s){target})",
            self.name,
            self.params.len(),
            self.outputs.len()
        )
    }
}

impl Executable {
    /// The optimized module, program and kernel source.
    fn plan(&self) -> &runtime::Plan {
        match &self.compiled {
            Compiled::Cpu(exe) => exe.plan(),
            Compiled::Gpu(build, _) => &build.plan,
        }
    }
}

/// Compiles HLO text (`name` shown in error messages) for `target`: "cpu" (this CPU, with
/// the memory limit `memory_limit`: bytes or a size such as "8G"; default
/// `HLOC_MAX_MEMORY`, else half the available memory), or "h100"/"h200" (the GPU emitters,
/// one CUDA module compiled by NVRTC for sm_90; no GPU needed, but NVRTC must be found).
/// The GIL is released while compiling.
#[pyfunction]
#[pyo3(signature = (text, name = None, memory_limit = None, target = "cpu"))]
pub fn compile(
    py: Python<'_>,
    text: &str,
    name: Option<&str>,
    memory_limit: Option<&Bound<'_, PyAny>>,
    target: &str,
) -> PyResult<Executable> {
    let gpu = match target {
        "cpu" => None,
        "h100" | "h200" => Some(target.to_string()),
        other => {
            return Err(PyValueError::new_err(format!(
                "target must be \"cpu\", \"h100\" or \"h200\", not {other:?}"
            )))
        }
    };
    let limit = Limit::resolve(memory_limit)?;
    let file = name.unwrap_or("<string>");
    let module = py.detach(|| parse_verified(text, file))?;
    let (params, outputs, tuple_root) = signature(py, &module)?;
    let options = runtime::CompileOptions {
        size_limit: Some(limit.bytes),
        gpu: gpu.clone(),
        ..Default::default()
    };
    let compiled = match gpu {
        None => Compiled::Cpu(Box::new(
            py.detach(|| runtime::compile(&module, &options))
                .map_err(|e| errors::runtime_error(e, &limit.hint))?,
        )),
        Some(device) => {
            // Asked before planning: a missing NVRTC is the user's to fix, whatever the
            // module holds.
            if !runtime::nvrtc_present() {
                return Err(errors::no_nvrtc(&device));
            }
            let build = py
                .detach(|| {
                    let start = std::time::Instant::now();
                    let plan = runtime::plan(&module, &options)?;
                    runtime::compile_gpu_plan(plan, &options, start)
                })
                .map_err(|e| errors::runtime_error(e, &limit.hint))?;
            Compiled::Gpu(Box::new(build), device)
        }
    };
    Ok(Executable {
        compiled,
        params,
        outputs,
        tuple_root,
        name: module.name().to_string(),
        limit_hint: limit.hint,
    })
}

/// Runs HLO text on `args` with the reference evaluator (exact semantics, slow), with the
/// memory limit as `compile` takes it; returns what an `Executable` call would.
#[pyfunction]
#[pyo3(signature = (text, args, name = None, memory_limit = None))]
pub fn evaluate(
    py: Python<'_>,
    text: &str,
    args: &Bound<'_, PyTuple>,
    name: Option<&str>,
    memory_limit: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let limit = Limit::resolve(memory_limit)?;
    let file = name.unwrap_or("<string>");
    let module = py.detach(|| parse_verified(text, file))?;
    let (params, outputs, tuple_root) = signature(py, &module)?;
    let lits = arguments(args, &params, dtypes::get(py)?)?;
    let result = py
        .detach(|| {
            hlo_eval::Evaluator::new(&module)
                .with_size_limit(limit.bytes)
                .run(&lits)
        })
        .map_err(|e| errors::eval_error(e, &limit.hint))?;
    let mut outs = Vec::new();
    flatten(result, &mut outs);
    results(py, &outs, &outputs, tuple_root)
}

/// Leaves of a nested tuple literal in flattened order.
fn flatten(l: Literal, out: &mut Vec<Literal>) {
    match l {
        Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}
