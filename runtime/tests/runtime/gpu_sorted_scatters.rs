//! Differential test of the sorted form of the GPU scatter (an ordered scatter with many
//! updates: keys by destination, merge passes, a thread per destination applying its run
//! in order) on the CUDA host emulation: random scatters of 256 to 432 scatter positions
//! (one or two position dimensions, row-major order, or a batching dimension pairing an
//! operand dimension, first or last, with one of the indices', first or last before the
//! index vector) into operands of one or two dimensions (inserted indexed dimension, or
//! one spanned by a one-element window; window rows), indices full of duplicates (runs
//! longer than the apply kernel's chunk) and off both edges, in no order, with float add
//! and multiply (`f32`, `f16`, `bf16`), overwrite and a computation that does not commute
//! (also `s32`), against the reference evaluator bit for bit, and each block's threads in
//! reverse order giving the same bits. Each must take the sorted form, and NVRTC must
//! compile every kernel without register spills (where it is present). Several scatters
//! share a module, so that one host C++ compile and one NVRTC compile serve them all.
//! Deterministic: a failure prints the module.

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen::{self, list, Rng};
use crate::random_sorts::bits;

/// Scatters per module.
const PER_MODULE: usize = 4;

/// One random scatter `sc{k}` over parameters `3k..3k+3` (operand, indices, updates) with
/// update computation `comb{k}`: its computation, its entry instructions and root shape,
/// and its indices' shape and values (the other inputs are random).
struct Case {
    comb: String,
    entry: String,
    shape: String,
    idims: Vec<i64>,
    values: Vec<i32>,
}

fn case(rng: &mut Rng, k: usize, batched: bool) -> Case {
    let ty = *rng.pick(&["f32", "f16", "bf16", "s32"]);
    let b = "b = TY[] parameter(1)\n  ";
    let ops = [
        format!("{b}ROOT r = TY[] add(a, b)"),
        format!("{b}ROOT r = TY[] multiply(a, b)"),
        "ROOT b = TY[] parameter(1)".to_string(),
        format!("{b}m = TY[] multiply(a, b)\n  ROOT r = TY[] subtract(b, m)"),
    ];
    // s32 add and multiply are order-free (atomics): not this form's.
    let op = if ty == "s32" {
        &ops[2 + rng.below(2)]
    } else {
        rng.pick(&ops)
    };
    let comb = format!(
        "comb{k} {{\n  a = {ty}[] parameter(0)\n  {}\n}}\n",
        op.replace("TY", ty)
    );
    // A few rows: long runs of one destination, across several chunks.
    let rows = if rng.below(4) == 0 {
        rng.range(1, 3)
    } else {
        rng.range(4, 40)
    };
    let cols = rng.range(1, 5);
    let width = rng.range(1, cols);
    let two_d = rng.below(3) > 0;
    let spanned = two_d && rng.below(3) == 0;
    let batch = if batched { rng.range(2, 4) } else { 1 };
    let positions: Vec<i64> = if rng.below(3) == 0 {
        let side = (256.0 / batch as f64).sqrt().ceil() as i64;
        vec![rng.range(side, side + 2), rng.range(side, side + 2)]
    } else {
        let n = (256 + batch - 1) / batch;
        vec![rng.range(n, n + 68 / batch)]
    };
    let p = positions.len();
    // The indices: the positions, the batch dimension (first or last before the index
    // vector) where batched, the index vector.
    let mut scatter_dims = positions.clone();
    let ibatch = if batched && rng.below(2) == 0 { 0 } else { p };
    if batched {
        scatter_dims.insert(ibatch, batch);
    }
    let mut idims = scatter_dims.clone();
    idims.push(1);
    let ivd = scatter_dims.len() as i64;
    let mut operand = if two_d { vec![rows, cols] } else { vec![rows] };
    // The indexed operand dimension (rows) and the batching one, first or last.
    let (mut row, mut obatch) = (0, operand.len());
    if batched && rng.below(2) == 0 {
        (row, obatch) = (1, 0);
    }
    if batched {
        operand.insert(obatch, batch);
    }
    let window: Vec<i64> = match (two_d, spanned) {
        (false, _) => vec![],
        (true, false) => vec![width],
        (true, true) => vec![1, width],
    };
    let mut updates = scatter_dims.clone();
    updates.extend(&window);
    let uwd: Vec<i64> = (0..window.len() as i64).map(|w| ivd + w).collect();
    let inserted = if spanned { vec![] } else { vec![row] };
    let batching = if batched {
        format!(", input_batching_dims={{{obatch}}}, scatter_indices_batching_dims={{{ibatch}}}")
    } else {
        String::new()
    };
    let count: i64 = scatter_dims.iter().product();
    // Rows -2..rows+1: duplicates, windows off both edges, no order.
    let values: Vec<i32> = (0..count).map(|_| rng.range(-2, rows + 1) as i32).collect();
    let shape = format!("{ty}[{}]", list(&operand));
    let entry = format!(
        "  op{k} = {shape} parameter({})\n  ix{k} = s32[{}] parameter({})\n  \
         up{k} = {ty}[{}] parameter({})\n  sc{k} = {shape} scatter(op{k}, ix{k}, up{k}), \
         update_window_dims={{{}}}, inserted_window_dims={{{}}}, \
         scatter_dims_to_operand_dims={{{row}}}, index_vector_dim={ivd}{batching}, \
         to_apply=comb{k}\n",
        3 * k,
        list(&idims),
        3 * k + 1,
        list(&updates),
        3 * k + 2,
        list(&uwd),
        list(&inserted),
    );
    Case {
        comb,
        entry,
        shape,
        idims,
        values,
    }
}

/// A module of [`PER_MODULE`] random scatters (every other one batched), its root the
/// tuple of their results, and its cases.
fn module(seed: u64) -> (String, Vec<Case>) {
    let mut rng = Rng::new(seed);
    let cases: Vec<Case> = (0..PER_MODULE)
        .map(|k| case(&mut rng, k, k % 2 == 1))
        .collect();
    let mut text = String::from("HloModule s\n");
    for c in &cases {
        text.push_str(&c.comb);
    }
    text.push_str("ENTRY e {\n");
    for c in &cases {
        text.push_str(&c.entry);
    }
    let names: Vec<String> = (0..PER_MODULE).map(|k| format!("sc{k}")).collect();
    let shapes: Vec<&str> = cases.iter().map(|c| c.shape.as_str()).collect();
    text.push_str(&format!(
        "  ROOT t = ({}) tuple({})\n}}\n",
        shapes.join(", "),
        names.join(", ")
    ));
    (text, cases)
}

/// Compiles module `seed` for the CUDA host, checks every scatter took the sorted form
/// and NVRTC's kernels do not spill, and runs it in both thread orders against the
/// evaluator.
fn check(seed: u64, options: &CompileOptions) -> Result<(), String> {
    let (text, cases) = module(seed);
    let m = gen::parse(seed, &text);
    let titles = crate::gpu_sorts::gpu_kernel_titles(&m)?;
    let sorted = titles
        .matches("apply: a thread per sorted position")
        .count();
    if sorted != cases.len() {
        return Err(format!(
            "{sorted} of {} scatters took the sorted form\n{titles}",
            cases.len()
        ));
    }
    let mut args = gen::random_args(&m, seed);
    for (k, c) in cases.iter().enumerate() {
        args[3 * k + 1] = Literal::Array(
            hlo::literal::ArrayLiteral::new(
                hlo::Shape::array(hlo::ElementType::S32, c.idims.clone()),
                hlo::literal::ArrayData::S32(c.values.clone()),
            )
            .expect("indices"),
        );
    }
    let exe = runtime::compile(&m, options).map_err(|e| e.to_string())?;
    if exe.stats().library_calls != 0 {
        return Err("ran as a library call".to_string());
    }
    let mut runs = Vec::new();
    for order in ["forward", "reverse"] {
        std::env::set_var("HLOC_CUDA_HOST_ORDER", order);
        let outs = exe.run(&args).map_err(|e| format!("{order} run: {e}"));
        std::env::remove_var("HLOC_CUDA_HOST_ORDER");
        let outs = outs?;
        runtime::check_reference(&m, &args, &outs).map_err(|e| format!("{order}: {e}"))?;
        runs.push(outs.iter().flat_map(bits).collect::<Vec<_>>());
    }
    if runs[0] != runs[1] {
        return Err("the threads' order changes the outputs' bits".into());
    }
    Ok(())
}

#[test]
fn random_sorted_scatters_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-sorted-scatters")
    };
    let mut failures = Vec::new();
    for seed in gen::seeds(0..3) {
        if let Err(e) = check(seed, &options) {
            failures.push(format!("seed {seed}: {e}\n{}", module(seed).0));
        }
    }
    gen::assert_none(&failures);
}
