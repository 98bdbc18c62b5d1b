//! The GPU plan splits long reductions into few outputs in two (issue 33): the first
//! reduce spreads over many blocks, the second reads only its partials. Checked on the
//! plan (no NVRTC needed: `runtime::plan` prints the CUDA text without compiling it) and
//! on the host emulation against the reference evaluator.

use runtime::CompileOptions;

const MODULE: &str = "HloModule long_reductions
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[1048576] parameter(0)
  e = f32[1048576] exponential(x)
  z = f32[] constant(0)
  total = f32[] reduce(e, z), dimensions={0}, to_apply=add
  c = f32[300000,3] parameter(1)
  columns = f32[3] reduce(c, z), dimensions={0}, to_apply=add
  rows = f32[4096,512] parameter(2)
  row_sums = f32[4096] reduce(rows, z), dimensions={1}, to_apply=add
  ROOT t = (f32[], f32[3], f32[4096]) tuple(total, columns, row_sums)
}
";

fn gpu_options() -> CompileOptions {
    CompileOptions {
        gpu: Some("h200".into()),
        ..CompileOptions::default()
    }
}

#[test]
fn long_reductions_into_few_outputs_split_and_many_rows_do_not() {
    let module = hlo::parse_module(MODULE).unwrap();
    let plan = runtime::plan(&module, &gpu_options()).unwrap();
    let mut blocks: Vec<i64> = plan.program.kernels.iter().map(|k| k.grid.blocks).collect();
    blocks.sort_unstable();
    // The sum of 2^20 and the 3 columns of 300,000: a first reduce of hundreds of blocks
    // and a second of one block each; the 4096 rows of 512 stay one kernel of 1024
    // blocks.
    assert_eq!(plan.program.kernels.len(), 5, "{blocks:?}");
    assert_eq!(&blocks[..2], &[1, 1], "{blocks:?}");
    assert!(blocks[2..].iter().all(|&b| b >= 132), "{blocks:?}");
}

#[test]
fn split_reductions_on_the_cuda_host_match_the_reference() {
    let module = hlo::parse_module(MODULE).unwrap();
    let options = CompileOptions {
        cuda_host: true,
        cache_dir: Some(
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-gpu-split"),
        ),
        ..gpu_options()
    };
    let exe = runtime::compile(&module, &options).unwrap();
    let args: Vec<_> = module
        .entry()
        .parameters()
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let shape = module.entry().instr(p).shape();
            hlo_eval::random::random_literal(shape, k as u64, 0, 1 << 24).unwrap()
        })
        .collect();
    let outputs = exe.run(&args).unwrap();
    runtime::check_reference(&module, &args, &outputs).unwrap();
}
