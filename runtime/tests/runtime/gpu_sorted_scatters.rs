//! Differential test of the sorted form of the GPU scatter (an ordered scatter with many
//! updates: keys by destination, merge passes, a thread per destination applying its run
//! in order) on the CUDA host emulation: random scatters of 256 to 400 scatter positions
//! (one or two position dimensions, row-major order) into operands of one or two
//! dimensions (inserted indexed dimension, or one spanned by a one-element window; window
//! rows), indices full of duplicates and off both edges, in no order, with float add and
//! multiply (`f32`, `f16`, `bf16`), overwrite and a computation that does not commute
//! (also `s32`), against the reference evaluator bit for bit, and each block's threads in
//! reverse order giving the same bits. Each must take the sorted form. Deterministic: a
//! failure prints the module.

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen::{self, list, Rng};

/// A random scatter and its index values (the other inputs are random).
fn case(seed: u64) -> (String, Vec<i64>, Vec<i32>) {
    let mut rng = Rng::new(seed);
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
    let combiner = op.replace("TY", ty);
    let rows = rng.range(4, 40);
    let cols = rng.range(1, 5);
    let width = rng.range(1, cols);
    let two_d = rng.below(3) > 0;
    let spanned = two_d && rng.below(3) == 0;
    let positions: Vec<i64> = if rng.below(3) == 0 {
        vec![rng.range(16, 20), rng.range(16, 20)]
    } else {
        vec![rng.range(256, 400)]
    };
    let count: i64 = positions.iter().product();
    let mut idims = positions.clone();
    idims.push(1);
    let p = positions.len() as i64;
    let (operand, updates, uwd, inserted) = if !two_d {
        (vec![rows], positions.clone(), vec![], "0".to_string())
    } else if spanned {
        let mut u = positions.clone();
        u.extend([1, width]);
        (vec![rows, cols], u, vec![p, p + 1], String::new())
    } else {
        let mut u = positions.clone();
        u.push(width);
        (vec![rows, cols], u, vec![p], "0".to_string())
    };
    // Rows -2..rows+1: duplicates, windows off both edges, no order.
    let values: Vec<i32> = (0..count).map(|_| rng.range(-2, rows + 1) as i32).collect();
    let text = format!(
        "HloModule s\ncomb {{\n  a = {ty}[] parameter(0)\n  {combiner}\n}}\n\
         ENTRY e {{\n  x = {ty}[{}] parameter(0)\n  i = s32[{}] parameter(1)\n  u = {ty}[{}] parameter(2)\n  \
         ROOT s = {ty}[{}] scatter(x, i, u), update_window_dims={{{}}}, inserted_window_dims={{{inserted}}}, \
         scatter_dims_to_operand_dims={{0}}, index_vector_dim={p}, to_apply=comb\n}}\n",
        list(&operand),
        list(&idims),
        list(&updates),
        list(&operand),
        list(&uwd),
    );
    (text, idims, values)
}

#[test]
fn random_sorted_scatters_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-sorted-scatters")
    };
    let mut failures = Vec::new();
    let mut sorted = 0;
    for seed in gen::seeds(0..12) {
        let (text, idims, values) = case(seed);
        let m = gen::parse(seed, &text);
        // NVRTC 13.0 compiles the apply kernel with 8-24 bytes of register spills on some
        // of these shapes (its binary search and chunked run loop over 64-bit keys): a
        // known weakness of the sorted form (issue 33), not of its results; it must still
        // compile.
        let titles = match crate::gpu_sorts::gpu_kernel_titles_spilling(&m, true) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("seed {seed}: {e}\n{text}"));
                continue;
            }
        };
        if !titles.contains("scatter (sorted by destination") {
            failures.push(format!(
                "seed {seed}: not the sorted form\n{titles}\n{text}"
            ));
            continue;
        }
        sorted += 1;
        let mut args = gen::random_args(&m, seed);
        args[1] = Literal::Array(
            hlo::literal::ArrayLiteral::new(
                hlo::Shape::array(hlo::ElementType::S32, idims),
                hlo::literal::ArrayData::S32(values),
            )
            .expect("indices"),
        );
        let result = runtime::compile(&m, &options)
            .map_err(|e| e.to_string())
            .and_then(|exe| {
                if exe.stats().library_calls != 0 {
                    return Err("ran as a library call".to_string());
                }
                let mut runs = Vec::new();
                for order in ["forward", "reverse"] {
                    std::env::set_var("HLOC_CUDA_HOST_ORDER", order);
                    let outs = exe.run(&args).map_err(|e| format!("{order} run: {e}"));
                    std::env::remove_var("HLOC_CUDA_HOST_ORDER");
                    let outs = outs?;
                    runtime::check_reference(&m, &args, &outs)
                        .map_err(|e| format!("{order}: {e}"))?;
                    runs.push(format!("{outs:?}"));
                }
                if runs[0] != runs[1] {
                    return Err("the threads' order changes the outputs".into());
                }
                Ok(())
            });
        if let Err(e) = result {
            failures.push(format!("seed {seed}: {e}\n{text}"));
        }
    }
    gen::assert_none(&failures);
    assert!(sorted >= 10, "{sorted} sorted scatters");
}
