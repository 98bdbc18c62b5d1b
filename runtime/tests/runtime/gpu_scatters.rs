//! Differential test of the GPU scatter emitter on the CUDA host emulation: random
//! scatters (operands of one to three dimensions, windows, indices that collide and leave
//! the operand, `unique_indices` with distinct indices) of `f32`, `s32`, `f16` and `bf16`
//! with add, maximum, minimum, multiply, overwrite and a general update computation,
//! against the reference evaluator, and each block's threads in reverse order bit for bit
//! the same (every strategy is independent of the threads' order: atomics only for
//! exactly order-free combiners, the others in update order). Each kernel must be the
//! scatter emitter's where a strategy applies (no sequential fallback). Deterministic: a
//! failure prints the module.

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen::{self, list, Rng};

/// A random scatter, whether the GPU emitter must take it, and its index values (the
/// other inputs are random).
struct Case {
    text: String,
    emitted: bool,
    idims: Vec<i64>,
    values: Vec<i32>,
}

fn case(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let ty = ["f32", "s32", "f16", "bf16"][rng.below(4)];
    let b = "b = TY[] parameter(1)\n  ";
    let (op, order_free) = match rng.below(6) {
        0 => (format!("{b}ROOT r = TY[] add(a, b)"), ty == "s32"),
        1 => (format!("{b}ROOT r = TY[] maximum(a, b)"), true),
        2 => (format!("{b}ROOT r = TY[] minimum(b, a)"), true),
        3 => (format!("{b}ROOT r = TY[] multiply(a, b)"), ty == "s32"),
        4 => ("ROOT b = TY[] parameter(1)".to_string(), false),
        _ => (
            format!("{b}m = TY[] multiply(a, b)\n  ROOT r = TY[] subtract(b, m)"),
            false,
        ),
    };
    let combiner = op.replace("TY", ty);
    let rank = 1 + rng.below(3);
    let operand: Vec<i64> = (0..rank).map(|_| 1 + rng.below(6) as i64).collect();
    let unique = rng.below(4) == 0;
    // Dimensions the indices address; under `unique`, one, with a one-element window.
    let n_idx = if unique { 1 } else { 1 + rng.below(rank) };
    let to_operand = rng.distinct(rank, n_idx);
    let mut inserted: Vec<usize> = to_operand
        .iter()
        .copied()
        .filter(|_| unique || rng.below(2) == 0)
        .collect();
    inserted.sort_unstable();
    let window: Vec<(usize, i64)> = (0..rank)
        .filter(|d| !inserted.contains(d))
        .map(|d| (d, 1 + rng.below(operand[d] as usize) as i64))
        .collect();
    let (batch, ivd, indices) = if unique {
        // Distinct positions along the one indexed dimension (one past its end too).
        let n = 1 + rng.below(operand[to_operand[0]] as usize + 1) as i64;
        (vec![n], 1, vec![n, 1])
    } else {
        gen::index_dims(&mut rng, n_idx)
    };
    let sizes: Vec<i64> = window.iter().map(|&(_, n)| n).collect();
    let (uwd, updates) = gen::interleave(&mut rng, &batch, &sizes);
    let count: i64 = indices.iter().product();
    let values: Vec<i32> = if unique {
        let mut v: Vec<i32> = (0..=operand[to_operand[0]] as i32).collect();
        rng.shuffle(&mut v);
        v.truncate(count as usize);
        v
    } else {
        // -2..4 on small operands: collisions, and windows off both edges.
        (0..count).map(|_| rng.below(7) as i32 - 2).collect()
    };
    // The ordered strategy needs one-element windows along every indexed dimension.
    let one_wide = to_operand
        .iter()
        .all(|d| inserted.contains(d) || window.iter().any(|&(w, n)| w == *d && n == 1));
    let emitted = unique || order_free || one_wide;
    let attrs = if unique { ", unique_indices=true" } else { "" };
    let text = format!(
        "HloModule s\ncomb {{\n  a = {ty}[] parameter(0)\n  {combiner}\n}}\n\
         ENTRY e {{\n  x = {ty}[{}] parameter(0)\n  i = s32[{}] parameter(1)\n  u = {ty}[{}] parameter(2)\n  \
         ROOT s = {ty}[{}] scatter(x, i, u), update_window_dims={{{}}}, inserted_window_dims={{{}}}, \
         scatter_dims_to_operand_dims={{{}}}, index_vector_dim={ivd}{attrs}, to_apply=comb\n}}\n",
        list(&operand),
        list(&indices),
        list(&updates),
        list(&operand),
        list(&uwd),
        list(&inserted),
        list(&to_operand),
    );
    Case {
        text,
        emitted,
        idims: indices,
        values,
    }
}

/// The first comment line of every kernel of `m`'s GPU plan (h200): the emitter's title.
fn kernel_titles(m: &hlo::Module) -> Vec<String> {
    let options = CompileOptions {
        gpu: Some("h200".into()),
        ..CompileOptions::default()
    };
    let plan = runtime::plan(m, &options).unwrap();
    plan.program
        .kernels
        .iter()
        .filter_map(|k| match k.body.first() {
            Some(codegen::kir::Stmt::Comment(c)) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn random_scatters_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-scatters")
    };
    let mut failures = Vec::new();
    let (mut emitted, mut atomic) = (0, 0);
    for seed in gen::seeds(0..64) {
        let c = case(seed);
        let m = gen::parse(seed, &c.text);
        let titles = kernel_titles(&m).join("\n");
        let by_emitter = titles.contains("scatter (");
        if c.emitted != by_emitter {
            failures.push(format!(
                "seed {seed}: expected the GPU scatter emitter: {}\n{titles}\n{}",
                c.emitted, c.text
            ));
            continue;
        }
        emitted += usize::from(by_emitter);
        atomic += usize::from(titles.contains("scatter (atomic)"));
        let mut args = gen::random_args(&m, seed);
        args[1] = Literal::Array(
            hlo::literal::ArrayLiteral::new(
                hlo::Shape::array(hlo::ElementType::S32, c.idims.clone()),
                hlo::literal::ArrayData::S32(c.values.clone()),
            )
            .expect("indices"),
        );
        let result = runtime::compile(&m, &options)
            .map_err(|e| e.to_string())
            .and_then(|exe| {
                std::env::set_var("HLOC_CUDA_HOST_ORDER", "forward");
                let forward = exe.run(&args).map_err(|e| e.to_string())?;
                runtime::check_reference(&m, &args, &forward)?;
                std::env::set_var("HLOC_CUDA_HOST_ORDER", "reverse");
                let reverse = exe.run(&args).map_err(|e| format!("reverse run: {e}"));
                std::env::remove_var("HLOC_CUDA_HOST_ORDER");
                if format!("{:?}", reverse?) != format!("{forward:?}") {
                    return Err("the threads' order changes the outputs".into());
                }
                Ok(())
            });
        if let Err(e) = result {
            failures.push(format!("seed {seed}: {e}\n{}", c.text));
        }
    }
    gen::assert_none(&failures);
    // The seeds reach every strategy often enough to mean something.
    assert!(
        emitted >= 32 && atomic >= 8,
        "{emitted} emitted, {atomic} atomic"
    );
}
