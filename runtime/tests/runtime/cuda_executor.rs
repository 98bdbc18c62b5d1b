//! The CUDA executor (`backend_cuda::CudaExecutable`) over the host device, on the random
//! generators' programs: loops and conditionals (predicates read back from the device),
//! GEMMs of every layout and type (the host device's GEMM; cuBLAS's mapping is tested in
//! backend-cuda), general random modules, and library calls run on the host between
//! device steps. Each runs in both thread orders (bit for bit the same outputs) against
//! the reference evaluator. The corpus runs in `cuda_host`. And `--backend cuda` on a
//! machine without a CUDA driver is a clear error, not a panic.

use hlo::Literal;
use plan::Thunk;
use runtime::CompileOptions;

use crate::gen;

/// Counts of the thunk kinds the executor ran: while, conditional, gemm, library.
#[derive(Default, Debug)]
struct Kinds([usize; 4]);

impl Kinds {
    fn add(&mut self, thunks: &[Thunk]) {
        for t in thunks {
            match t {
                Thunk::While { cond, body, .. } => {
                    self.0[0] += 1;
                    self.add(cond);
                    self.add(body);
                }
                Thunk::Conditional { branches, .. } => {
                    self.0[1] += 1;
                    for (b, _) in branches {
                        self.add(b);
                    }
                }
                Thunk::Gemm { .. } | Thunk::StreamedGemm { .. } => self.0[2] += 1,
                Thunk::Library { .. } => self.0[3] += 1,
                _ => {}
            }
        }
    }
}

fn options(cache: &str) -> CompileOptions {
    CompileOptions {
        cuda_host: true,
        ..gen::options(cache)
    }
}

/// Runs `text` on the cuda-host executor in both thread orders against the evaluator;
/// failures go to `failures`, the program's step kinds to `kinds`.
fn check(
    seed: u64,
    text: &str,
    options: &CompileOptions,
    kinds: &mut Kinds,
    failures: &mut Vec<String>,
) {
    let m = gen::parse(seed, text);
    let args = gen::random_args(&m, seed);
    let result = (|| -> Result<(), String> {
        let plan = runtime::plan(&m, options).map_err(|e| e.to_string())?;
        kinds.add(&plan.program.thunks);
        let exe = runtime::compile_plan(plan, options, std::time::Instant::now())
            .map_err(|e| e.to_string())?;
        std::env::set_var("HLOC_CUDA_HOST_ORDER", "forward");
        let forward: Vec<Literal> = exe.run(&args).map_err(|e| e.to_string())?;
        runtime::check_reference(&m, &args, &forward)?;
        std::env::set_var("HLOC_CUDA_HOST_ORDER", "reverse");
        let reverse = exe.run(&args).map_err(|e| e.to_string());
        std::env::remove_var("HLOC_CUDA_HOST_ORDER");
        if format!("{:?}", reverse?) != format!("{forward:?}") {
            return Err("the threads' order changes the outputs".into());
        }
        Ok(())
    })();
    if let Err(e) = result {
        failures.push(format!("seed {seed}: {e}\n{text}"));
    }
}

#[test]
fn random_loops_and_conditionals_on_the_cuda_executor_match_the_reference() {
    let options = options("hloc-cache-cuda-executor-loops");
    let (mut kinds, mut failures) = (Kinds::default(), Vec::new());
    for seed in gen::seeds(0..24) {
        let text = crate::random_loops::module(seed);
        check(seed, &text, &options, &mut kinds, &mut failures);
    }
    gen::assert_none(&failures);
    // Conditionals the simplifier keeps run in the corpus (`cond`, `switch`).
    assert!(kinds.0[0] >= 8, "{kinds:?}");
}

#[test]
fn random_dots_on_the_cuda_executor_match_the_reference() {
    let options = options("hloc-cache-cuda-executor-dots");
    let (mut kinds, mut failures) = (Kinds::default(), Vec::new());
    for seed in gen::seeds(0..24) {
        let (text, _) = crate::random_dots::module(seed);
        check(seed, &text, &options, &mut kinds, &mut failures);
    }
    gen::assert_none(&failures);
    assert!(kinds.0[2] >= 8, "{kinds:?}");
}

#[test]
fn random_modules_on_the_cuda_executor_match_the_reference() {
    let options = options("hloc-cache-cuda-executor-random");
    let (mut kinds, mut failures) = (Kinds::default(), Vec::new());
    for seed in gen::seeds(0..32) {
        let text = crate::random_modules::module(seed, false);
        check(seed, &text, &options, &mut kinds, &mut failures);
    }
    gen::assert_none(&failures);
}

/// Library calls between device steps: a top-k whose rows (8192 `f32`) do not fit a
/// block's shared memory (shorter ones take the GPU sort emitter; a sort's take merge
/// passes, as `sorted` here), fed by a kernel and feeding one, so operands are downloaded
/// after device work and results uploaded before it.
const LIBRARY: &str = r#"
HloModule library_between_kernels

less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[4,8192] parameter(0)
  i = s32[6,1] parameter(1)
  u = f32[6,8192] parameter(2)
  e = f32[4,8192] exponential(p)
  sorted = f32[4,8192] sort(e), dimensions={1}, to_apply=less
  n = f32[4,8192] negate(sorted)
  c = s32[6,1] clamp(s32[] constant(0), i, s32[] constant(3))
  sc = f32[4,8192] scatter(n, c, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  m = f32[4,8192] multiply(sc, sc)
  t = (f32[4,16], s32[4,16]) topk(e), k=16, largest=true
  tv = f32[4,16] get-tuple-element(t), index=0
  ti = s32[4,16] get-tuple-element(t), index=1
  tn = f32[4,16] negate(tv)
  ROOT out = (f32[4,8192], f32[4,8192], f32[4,16], s32[4,16]) tuple(m, sorted, tn, ti)
}
"#;

#[test]
fn library_calls_between_device_steps_match_the_reference() {
    let options = options("hloc-cache-cuda-executor-library");
    let (mut kinds, mut failures) = (Kinds::default(), Vec::new());
    check(0, LIBRARY, &options, &mut kinds, &mut failures);
    gen::assert_none(&failures);
    assert!(kinds.0[3] >= 1, "{kinds:?}");
}

#[test]
fn the_cuda_backend_without_a_driver_is_a_clear_error() {
    let m = gen::parse(0, LIBRARY);
    let options = CompileOptions {
        gpu: Some("h100".into()),
        ..gen::options("hloc-cache-cuda-executor-driver")
    };
    let args = gen::random_args(&m, 0);
    match runtime::compile(&m, &options) {
        Err(e) => {
            assert!(!backend_cuda::driver_present(), "{e}");
            assert!(
                e.to_string().contains(
                    "no CUDA driver (libcuda.so.1) on this machine; use --backend cuda-host"
                ),
                "{e}"
            );
        }
        // With a GPU: the same program on it.
        Ok(exe) => {
            let outs = exe.run(&args).expect("run on the GPU");
            runtime::check_reference(&m, &args, &outs).expect("GPU outputs");
        }
    }
}
