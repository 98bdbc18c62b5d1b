//! Differential test of the layouts chosen for a module before XLA's layout assignment
//! (`hlo_transforms::ChooseLayouts`, what `CompileOptions::default()` runs; the other
//! randomized tests keep their random layouts to test the code generator on them). Every
//! declaration draws its own layout, as JAX writes them: a weight gradient's dot read
//! through a transpose, an Adam-like update mixing it with a parameter, a batched dot
//! and one with two lhs free dimensions under a random permutation (laid out for the
//! transpose where that keeps one GEMM, else not), a loop carrying the update with its
//! own layouts on every boundary, a call, a custom call's column-major result, and an
//! `entry_computation_layout` of its own. Compiled for the CPU and compared with the
//! reference evaluator. Deterministic: a failure prints the module.

use hlo::pass::Pass;

use crate::gen::{self, Rng};

/// `f32[dims]` with a random layout.
fn arr(rng: &mut Rng, dims: &[i64]) -> String {
    gen::shape(rng, "f32", dims)
}

/// A random permutation of `0..n`.
fn perm(rng: &mut Rng, n: usize) -> Vec<usize> {
    rng.distinct(n, n)
}

/// `dims` permuted: dimension `k` of the result is `dims[p[k]]`.
fn permuted(dims: &[i64], p: &[usize]) -> Vec<i64> {
    p.iter().map(|&k| dims[k]).collect()
}

/// The random module of `seed`.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (b, k, n) = (rng.range(1, 5), rng.range(1, 6), rng.range(1, 6));
    let (g, m, a) = (rng.range(1, 3), rng.range(1, 5), rng.range(1, 4));
    let steps = rng.range(0, 3);
    let kn = [k, n];
    let state = |rng: &mut Rng| format!("(s32[], {}, {})", arr(rng, &kn), arr(rng, &kn));
    let cond = format!(
        "cond {{\n  p = {} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         n = s32[] constant({steps})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n",
        state(&mut rng)
    );
    let body = format!(
        "body {{\n  p = {} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         x = {} get-tuple-element(p), index=1\n  acc = {} get-tuple-element(p), index=2\n  \
         s = {} add(acc, x)\n  h = {} tanh(s)\n  one = s32[] constant(1)\n  \
         i1 = s32[] add(i, one)\n  ROOT r = {} tuple(i1, x, h)\n}}\n",
        state(&mut rng),
        arr(&mut rng, &kn),
        arr(&mut rng, &kn),
        arr(&mut rng, &kn),
        arr(&mut rng, &kn),
        state(&mut rng),
    );
    let callee = format!(
        "callee {{\n  p = {} parameter(0)\n  ROOT e = {} exponential(p)\n}}\n",
        arr(&mut rng, &kn),
        arr(&mut rng, &kn)
    );
    // A batched dot [g,m,k] x [g,k,n] and a dot [a,m,k] x [k,n] with two lhs free
    // dimensions, each read through a transpose of a random permutation.
    let (pb, pf) = (perm(&mut rng, 3), perm(&mut rng, 3));
    let (bd, fd) = ([g, m, n], [a, m, n]);
    let list = |v: &[usize]| gen::list(v);
    let param_dims: [&[i64]; 7] = [
        &[b, k],
        &[b, n],
        &kn,
        &[g, m, k],
        &[g, k, n],
        &[a, m, k],
        &[k, k],
    ];
    let params: Vec<String> = param_dims.iter().map(|d| arr(&mut rng, d)).collect();
    let out_dims = [
        kn.to_vec(),
        kn.to_vec(),
        permuted(&bd, &pb),
        permuted(&fd, &pf),
        vec![k, k],
    ];
    let outs: Vec<String> = out_dims.iter().map(|d| arr(&mut rng, d)).collect();
    // The entry layout draws its own layouts too.
    let declared: Vec<String> = param_dims.iter().map(|d| arr(&mut rng, d)).collect();
    let returned: Vec<String> = out_dims.iter().map(|d| arr(&mut rng, d)).collect();
    let entry_layout = format!("{{({})->({})}}", declared.join(", "), returned.join(", "));
    let mut e = String::from("ENTRY e {\n");
    for (i, p) in params.iter().enumerate() {
        e.push_str(&format!("  p{i} = {p} parameter({i})\n"));
    }
    let lines = [
        format!(
            "d = {} dot(p1, p0), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}",
            arr(&mut rng, &[n, k])
        ),
        format!(
            "t = {} transpose(d), dimensions={{1,0}}",
            arr(&mut rng, &kn)
        ),
        "c = f32[] constant(0.9)".to_string(),
        format!("bc = {} broadcast(c), dimensions={{}}", arr(&mut rng, &kn)),
        format!("m1 = {} multiply(p2, bc)", arr(&mut rng, &kn)),
        format!("m2 = {} add(t, m1)", arr(&mut rng, &kn)),
        format!("u = {} subtract(p2, m2)", arr(&mut rng, &kn)),
        "z = s32[] constant(0)".to_string(),
        format!("init = {} tuple(z, m2, u)", state(&mut rng)),
        format!(
            "w = {} while(init), condition=cond, body=body",
            state(&mut rng)
        ),
        format!("wl = {} get-tuple-element(w), index=2", arr(&mut rng, &kn)),
        format!("cl = {} call(wl), to_apply=callee", arr(&mut rng, &kn)),
        format!(
            "db = {} dot(p3, p4), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, \
             rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}",
            arr(&mut rng, &bd)
        ),
        format!(
            "tb = {} transpose(db), dimensions={{{}}}",
            outs[2],
            list(&pb)
        ),
        format!(
            "df = {} dot(p5, p2), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}",
            arr(&mut rng, &[a, m, n])
        ),
        format!(
            "tf = {} transpose(df), dimensions={{{}}}",
            outs[3],
            list(&pf)
        ),
        // A symmetric positive definite matrix for LAPACK's Cholesky: p6 p6^T + (k+1) I.
        format!(
            "aa = {} dot(p6, p6), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}",
            arr(&mut rng, &[k, k])
        ),
        format!("i0 = s32[{k},{k}] iota(), iota_dimension=0"),
        format!("i1 = s32[{k},{k}] iota(), iota_dimension=1"),
        format!("eq = pred[{k},{k}] compare(i0, i1), direction=EQ"),
        format!("kc = f32[] constant({})", k + 1),
        format!(
            "kb = {} broadcast(kc), dimensions={{}}",
            arr(&mut rng, &[k, k])
        ),
        "zc = f32[] constant(0)".to_string(),
        format!(
            "zb = {} broadcast(zc), dimensions={{}}",
            arr(&mut rng, &[k, k])
        ),
        format!("dg = {} select(eq, kb, zb)", arr(&mut rng, &[k, k])),
        format!("sp = {} add(aa, dg)", arr(&mut rng, &[k, k])),
        format!(
            "ch = (f32[{k},{k}]{{0,1}}, s32[]) custom-call(sp), \
             custom_call_target=\"lapack_spotrf_ffi\", \
             operand_layout_constraints={{f32[{k},{k}]{{0,1}}}}, \
             api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = 76 : ui8}}"
        ),
        format!("cf = f32[{k},{k}]{{0,1}} get-tuple-element(ch), index=0"),
        format!("cn = {} negate(cf)", outs[4]),
        format!("ROOT r = ({}) tuple(m2, cl, tb, tf, cn)", outs.join(", ")),
    ];
    for l in &lines {
        e.push_str(&format!("  {l}\n"));
    }
    e.push_str("}\n");
    format!("HloModule chosen, entry_computation_layout={entry_layout}\n{cond}{body}{callee}{e}")
}

#[test]
fn chosen_layouts_match_the_reference_evaluator() {
    let options = runtime::CompileOptions {
        keep_layouts: false,
        ..gen::options("hloc-cache-chosen-layouts")
    };
    let (mut failures, mut folded) = (Vec::new(), 0);
    let seeds = gen::seeds(0..12);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        // How often a dot took its transpose's layout (the case that saves a transpose).
        let mut chosen = m.clone();
        hlo_transforms::ChooseLayouts
            .run(&mut chosen)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let entry = chosen.entry();
        folded += entry
            .instructions()
            .filter(|(_, i)| i.opcode() == hlo::Opcode::Dot)
            .filter(|(_, i)| i.shape().layout().is_some_and(|l| !l.is_row_major()))
            .count();
        gen::check(
            seed,
            (&m, &text),
            &gen::random_args(&m, seed),
            &options,
            &mut failures,
        );
    }
    gen::assert_none(&failures);
    // The weight gradient's dot always takes it; the others when their groups merge.
    assert!(
        folded as u64 >= count,
        "{folded} dots laid out for their transposes"
    );
}
