//! Launch bounds for the kernels `ptxas` spills (`backend_cuda::compile_without_spills`):
//! an embedding gradient's scatter-add (up1 gpt_train_step's `scatter_add_7`, the sorted
//! scatter's apply kernel: a binary search, then 32 chunks of guarded positions) spills 24
//! bytes at 32 registers under `__launch_bounds__(128)` alone; compiled for h100, the
//! kernel is printed again with a blocks-per-multiprocessor bound and nothing spills. The
//! other kernels keep their plain bound (ptxas's own choice of registers).

use runtime::CompileOptions;

const EMBEDDING_GRADIENT: &str = "\
HloModule embedding_gradient

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  ids = s32[8,127]{1,0} parameter(0)
  upd = f32[8,127,256]{2,1,0} parameter(1)
  zero = f32[] constant(0)
  init = f32[2048,256]{1,0} broadcast(zero), dimensions={}
  ROOT sc = f32[2048,256]{1,0} scatter(init, ids, upd), update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add
}
";

#[test]
fn a_spilling_scatter_kernel_gets_launch_bounds_and_stops_spilling() {
    if !runtime::nvrtc_present() {
        assert!(
            std::env::var_os("CI").is_none(),
            "NVRTC is required in CI (tools/setup.sh)"
        );
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let m = crate::gen::parse(0, EMBEDDING_GRADIENT);
    let options = CompileOptions {
        gpu: Some("h100".into()),
        ..CompileOptions::default()
    };
    let plan = runtime::plan(&m, &options).expect("plans for h100");
    let printed = plan.source.clone();
    assert!(
        !printed.contains("__launch_bounds__(128, "),
        "the first print bounds no kernel"
    );
    let build = runtime::compile_gpu_plan(plan, &options, std::time::Instant::now())
        .expect("NVRTC compiles");
    assert_eq!(runtime::spilling_kernels(&build), Vec::<String>::new());
    let source = &build.plan.source;
    let bounded: Vec<&str> = source
        .lines()
        .filter(|l| l.contains("__launch_bounds__(128, "))
        .collect();
    // Only the apply kernel (the last, 2,032 blocks) spilled, so only it is bounded.
    assert_eq!(bounded.len(), 1, "{bounded:?}");
    let apply = build.plan.program.kernels.last().expect("kernels");
    assert!(bounded[0].contains(&apply.name), "{bounded:?}");
    assert_eq!(
        build.cubin.kernels.len(),
        build.plan.program.kernels.len(),
        "every kernel compiled"
    );
}
