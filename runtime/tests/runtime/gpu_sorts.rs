//! Differential test of the GPU sort emitter on the CUDA host emulation: the random sorts
//! and top-ks of `random_sorts` (typed keys of every element type in every comparator
//! form, one or two keys, payloads, random sort dimensions and layouts, stable or not;
//! the `topk` op and XLA's `TopK` custom call with two- and four-parameter comparators;
//! NaNs of both signs, both zeros, infinities, many ties) compiled for the GPU emitters
//! and run on `--backend cuda-host`, compared with the reference evaluator bit for bit
//! and each block's threads in reverse order giving the same bits. Every sort whose rows
//! fit a block's static shared memory (the row length rounded up to a power of two, times
//! the operands' bytes and a 4-byte position, within 48 KiB) must take the bitonic
//! emitter, and a longer sort's the merge passes in global memory (a top-k's longer rows
//! stay on the library routine); NVRTC compiles the GPU plan's kernels for sm_90 without
//! spills. A second test draws only long rows (4,097 to 20,000 elements: 13 to 15 merge
//! passes).
//!
//! Left out: comparators that are no strict weak order on their arguments (`LE`/`GE`, or
//! an IEEE compare of floats where a NaN is present: a NaN is then unordered against
//! everything, and two correct sorts may order it differently), whose result the
//! evaluator defines only through its merge sort.

use hlo::literal::ArrayData;
use hlo::{ElementType, Literal};
use runtime::CompileOptions;

use crate::gen;
use crate::random_sorts::{bits, key_sort, key_topk};

/// Whether a float literal holds a NaN.
fn has_nan(l: &Literal) -> bool {
    let Literal::Array(a) = l else { return false };
    let ty = a.shape().element_type();
    match a.data() {
        ArrayData::F32(v) => v.iter().any(|x| x.is_nan()),
        ArrayData::F64(v) => v.iter().any(|x| x.is_nan()),
        ArrayData::Bits16(v) => v.iter().any(|&x| match ty {
            Some(ElementType::BF16) => x & 0x7f80 == 0x7f80 && x & 0x7f != 0,
            _ => x & 0x7c00 == 0x7c00 && x & 0x3ff != 0,
        }),
        _ => false,
    }
}

/// Whether the comparator of `text` is a strict weak order on `args`: not `LE`/`GE` of
/// a key (`opaque`), and no IEEE compare of an operand's raw elements holding a NaN.
fn strict_weak(text: &str, args: &[Literal], opaque: bool) -> bool {
    let ieee_nan = args.iter().enumerate().any(|(i, a)| {
        has_nan(a)
            && text.lines().any(|l| {
                (l.contains(&format!("compare(a{i}, b{i})"))
                    || l.contains(&format!("compare(b{i}, a{i})")))
                    && !l.contains("TOTALORDER")
            })
    });
    !opaque && !ieee_nan
}

/// Whether a row of the sort in `text` on `args` fits the emitter's shared memory, by
/// the rule the module comment states, and the row length.
fn fits(text: &str, args: &[Literal]) -> (bool, i64) {
    let Some(Literal::Array(first)) = args.first() else {
        return (false, 0);
    };
    let dims = first.shape().dims().to_vec();
    let d = text
        .split("dimensions={")
        .nth(1)
        .and_then(|r| r.split('}').next())
        .and_then(|d| d.parse::<usize>().ok())
        .unwrap_or(dims.len() - 1);
    let n = dims[d];
    let bytes: i64 = args
        .iter()
        .map(|a| match a {
            Literal::Array(a) => a
                .shape()
                .element_type()
                .and_then(ElementType::byte_width)
                .map_or(0, i64::from),
            _ => 0,
        })
        .sum();
    let padded = (n as u64).next_power_of_two() as i64;
    (padded * (bytes + 4) <= 48 * 1024, n)
}

/// The first comment line of every kernel of `m`'s GPU plan (h200), after NVRTC compiled
/// the plan's CUDA module for sm_90 without spills (where NVRTC is present).
pub(crate) fn gpu_kernel_titles(m: &hlo::Module) -> Result<String, String> {
    let (plan, titles, options) = gpu_plan(m)?;
    if runtime::nvrtc_present() {
        let build = runtime::compile_gpu_plan(plan, &options, std::time::Instant::now())
            .map_err(|e| format!("NVRTC: {e}"))?;
        let spills = runtime::spilling_kernels(&build);
        if !spills.is_empty() {
            return Err(format!("kernels spill: {spills:?}"));
        }
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "NVRTC is required in CI (tools/setup.sh)"
        );
    }
    Ok(titles)
}

/// The first comment line of every kernel of `m`'s GPU plan (h200), not compiled.
pub(crate) fn gpu_plan_titles(m: &hlo::Module) -> Result<String, String> {
    gpu_plan(m).map(|(_, titles, _)| titles)
}

/// `m`'s GPU plan (h200), its kernels' first comment lines and the options it took.
fn gpu_plan(m: &hlo::Module) -> Result<(runtime::Plan, String, CompileOptions), String> {
    let options = CompileOptions {
        gpu: Some("h200".into()),
        ..CompileOptions::default()
    };
    let plan = runtime::plan(m, &options).map_err(|e| e.to_string())?;
    let titles = plan
        .program
        .kernels
        .iter()
        .filter_map(|k| match k.body.first() {
            Some(codegen::kir::Stmt::Comment(c)) => Some(c.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok((plan, titles, options))
}

/// Runs `text` on `args` on the CUDA host in both thread orders against the evaluator
/// (bit for bit), checking that the sort took the bitonic emitter where its rows fit, a
/// longer sort the merge passes, and that NVRTC compiles the GPU plan's kernels; whether
/// an emitter took it.
fn check(
    seed: u64,
    text: &str,
    args: &[Literal],
    options: &CompileOptions,
) -> Result<bool, String> {
    let m = gen::parse(seed, text);
    let (fit, n) = fits(text, args);
    let titles = gpu_kernel_titles(&m)?;
    let bitonic = titles.contains("sort (bitonic");
    let merged = titles.contains("sort (merge pass");
    // A row of one element may be simplified away.
    if n > 1 && bitonic != fit {
        return Err(format!("bitonic emitter taken: {bitonic}, rows fit: {fit}"));
    }
    let sort = text.contains(" sort(");
    if n > 1 && merged != (sort && !fit) {
        return Err(format!(
            "merge passes taken: {merged}, a sort whose rows do not fit: {}\n{titles}",
            sort && !fit
        ));
    }
    let exe = runtime::compile(&m, options).map_err(|e| e.to_string())?;
    let want = hlo_eval::evaluate(&m, args).map_err(|e| format!("evaluator: {e}"))?;
    let want = bits(&want);
    for order in ["forward", "reverse"] {
        std::env::set_var("HLOC_CUDA_HOST_ORDER", order);
        let outs = exe.run(args).map_err(|e| format!("{order} run: {e}"));
        std::env::remove_var("HLOC_CUDA_HOST_ORDER");
        let got: Vec<Vec<u64>> = outs?.iter().flat_map(bits).collect();
        if let Some(o) = (0..want.len().max(got.len())).find(|&o| got.get(o) != want.get(o)) {
            return Err(format!(
                "{order}: out{o} differs: {:x?} vs the evaluator's {:x?}",
                got.get(o),
                want.get(o)
            ));
        }
    }
    Ok(bitonic || merged)
}

#[test]
fn random_sorts_and_top_ks_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-sorts")
    };
    let mut failures = Vec::new();
    let (mut sorts, mut top_ks) = (0, 0);
    for seed in gen::seeds(0..48) {
        let (text, args, keys) = key_sort(seed);
        if strict_weak(&text, &args, keys == Some(false)) {
            match check(seed, &text, &args, &options) {
                Ok(e) => sorts += usize::from(e),
                Err(e) => failures.push(format!("sort seed {seed}: {e}\n{text}")),
            }
        }
        let (text, args, keys) = key_topk(seed);
        if strict_weak(&text, &args, !keys) {
            match check(seed, &text, &args, &options) {
                Ok(e) => top_ks += usize::from(e),
                Err(e) => failures.push(format!("top-k seed {seed}: {e}\n{text}")),
            }
        }
    }
    gen::assert_none(&failures);
    // The seeds reach the emitter often enough to mean something.
    assert!(
        sorts >= 16 && top_ks >= 12,
        "{sorts} sorts, {top_ks} top-ks"
    );
}

#[test]
fn long_random_sorts_take_merge_passes_and_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-long-sorts")
    };
    let mut failures = Vec::new();
    let mut merged = 0;
    for seed in gen::seeds(0..12) {
        let (text, args, keys) =
            crate::random_sorts::key_sort_of(seed, &[4097, 6000, 9000, 20_000], false);
        if !strict_weak(&text, &args, keys == Some(false)) {
            continue;
        }
        match check(seed, &text, &args, &options) {
            Ok(e) => merged += usize::from(e),
            Err(e) => failures.push(format!("long sort seed {seed}: {e}\n{text}")),
        }
    }
    gen::assert_none(&failures);
    assert!(merged >= 6, "{merged} long sorts took the merge passes");
}
