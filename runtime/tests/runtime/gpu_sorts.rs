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
//! The cases share modules (one host C++ compile and one NVRTC compile serve many), and
//! most rows are short: the compilers' time grows with a row's network (a long row's
//! costs as much as ten short ones'), so the long rows are few, chosen to cross each
//! threshold: several rows a block (up to 128 slots), one row of up to 1,024 slots (at
//! most 512 threads), longer rows whose threads loop over their pairs, and top-k rows
//! over the shared memory (the library routine).
//!
//! Left out: comparators that are no strict weak order on their arguments (`LE`/`GE`, or
//! an IEEE compare of floats where a NaN is present: a NaN is then unordered against
//! everything, and two correct sorts may order it differently), whose result the
//! evaluator defines only through its merge sort.

use hlo::literal::ArrayData;
use hlo::{ElementType, Literal};
use runtime::CompileOptions;

use crate::gen;
use crate::random_sorts::{bits, key_sort_of, key_topk_of};

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
    let kernels = gpu_kernels(m)?;
    Ok(kernels
        .iter()
        .filter_map(|(_, t)| t.as_deref())
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The name and first comment line of every kernel of `m`'s GPU plan (h200), after NVRTC
/// compiled the plan's CUDA module for sm_90 without spills (where NVRTC is present).
fn gpu_kernels(m: &hlo::Module) -> Result<Vec<(String, Option<String>)>, String> {
    let (plan, options) = gpu_plan(m)?;
    let kernels = plan
        .program
        .kernels
        .iter()
        .map(|k| {
            let title = match k.body.first() {
                Some(codegen::kir::Stmt::Comment(c)) => Some(c.clone()),
                _ => None,
            };
            (k.name.clone(), title)
        })
        .collect();
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
    Ok(kernels)
}

/// The first comment line of every kernel of `m`'s GPU plan (h200), not compiled.
pub(crate) fn gpu_plan_titles(m: &hlo::Module) -> Result<String, String> {
    let (plan, _) = gpu_plan(m)?;
    Ok(plan
        .program
        .kernels
        .iter()
        .filter_map(|k| match k.body.first() {
            Some(codegen::kir::Stmt::Comment(c)) => Some(c.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `m`'s GPU plan (h200) and the options it took.
fn gpu_plan(m: &hlo::Module) -> Result<(runtime::Plan, CompileOptions), String> {
    let options = CompileOptions {
        gpu: Some("h200".into()),
        ..CompileOptions::default()
    };
    let plan = runtime::plan(m, &options).map_err(|e| e.to_string())?;
    Ok((plan, options))
}

/// One random sort or top-k: its module's text (computation `cmp`, where it has one; the
/// entry's root the sort or top-k), its arguments, and what it is called in failures.
struct Case {
    what: String,
    text: String,
    args: Vec<Literal>,
}

/// `text` with every identifier token (a maximal run of letters, digits and `_`) that
/// `rename` maps replaced.
fn rename_tokens(text: &str, rename: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        match rename(token) {
            Some(r) => out.push_str(&r),
            None => out.push_str(token),
        }
        token.clear();
    };
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            token.push(ch);
        } else {
            flush(&mut token, &mut out);
            out.push(ch);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// One module holding every case of `cases`: case `k`'s computation and entry
/// instructions prefixed `c{k}_`, its parameters after the earlier cases', its root
/// `c{k}_root` an element of the entry's root tuple; and the arguments in order.
fn merged(cases: &[Case]) -> (String, Vec<Literal>) {
    let mut comps = String::new();
    let mut entry = String::new();
    let (mut roots, mut shapes) = (Vec::new(), Vec::new());
    let mut args = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let (head, body) = c.text.split_once("ENTRY e {\n").expect("an entry");
        let body = body.trim_end().trim_end_matches('}');
        // Names defined in the entry, and the comparator.
        let mut names: Vec<String> = vec!["cmp".into()];
        for line in body.lines() {
            let l = line.trim_start().trim_start_matches("ROOT ");
            if let Some((n, _)) = l.split_once(" = ") {
                names.push(n.to_string());
            }
        }
        let rename = |t: &str| names.iter().any(|n| n == t).then(|| format!("c{k}_{t}"));
        let head = head.split_once('\n').map_or("", |(_, rest)| rest);
        comps.push_str(&rename_tokens(head, &rename));
        let base = args.len();
        for line in rename_tokens(body, &rename).lines() {
            let mut line = line.to_string();
            if let Some(root) = line.trim_start().strip_prefix("ROOT ") {
                let (name, rest) = root.split_once(" = ").expect("a root definition");
                let shape = if rest.starts_with('(') {
                    let close = rest.find(") ").expect("a tuple shape");
                    &rest[..=close]
                } else {
                    rest.split(' ').next().unwrap_or_default()
                };
                roots.push(name.to_string());
                shapes.push(shape.to_string());
                line = format!("  {root}");
            }
            if let Some((pre, post)) = line.split_once("parameter(") {
                let (i, post) = post.split_once(')').expect("a parameter number");
                let i: usize = i.parse().expect("a parameter number");
                line = format!("{pre}parameter({}){post}", base + i);
            }
            entry.push_str(&line);
            entry.push('\n');
        }
        args.extend(c.args.iter().cloned());
    }
    let text = format!(
        "HloModule g\n{comps}ENTRY e {{\n{entry}  ROOT g = ({}) tuple({})\n}}\n",
        shapes.join(", "),
        roots.join(", ")
    );
    (text, args)
}

/// Runs the module of `cases` on the CUDA host in both thread orders against the
/// evaluator (bit for bit, each case's outputs its own), checking that each sort took the
/// bitonic emitter where its rows fit, a longer sort the merge passes, and that NVRTC
/// compiles the GPU plan's kernels without spills; pushes each failure onto `failures`
/// with its case's module and returns how many cases an emitter took.
fn check_all(
    seed: u64,
    cases: &[Case],
    options: &CompileOptions,
    failures: &mut Vec<String>,
) -> usize {
    let (text, args) = merged(cases);
    let m = gen::parse(seed, &text);
    let fail = |e: String| format!("module of seed {seed}: {e}\n{text}");
    let kernels = match gpu_kernels(&m) {
        Ok(k) => k,
        Err(e) => {
            failures.push(fail(e));
            return 0;
        }
    };
    let mut emitted = 0;
    let mut bad = vec![None; cases.len()];
    for (k, c) in cases.iter().enumerate() {
        let (fit, n) = fits(&c.text, &c.args);
        // Kernel `hloc_k{N}_{instr}` of the case's root.
        let root = c
            .text
            .split("ENTRY")
            .last()
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("ROOT "))
            .and_then(|r| r.split_once(" = "))
            .map_or(String::new(), |(n, _)| format!("_c{k}_{n}"));
        let title_has = |what: &str| {
            kernels.iter().any(|(name, title)| {
                name.ends_with(&root) && title.as_deref().is_some_and(|t| t.contains(what))
            })
        };
        let (bitonic, merge) = (title_has("sort (bitonic"), title_has("sort (merge pass"));
        emitted += usize::from(bitonic || merge);
        let sort = c.text.contains(" sort(");
        // A row of one element may be simplified away.
        if n > 1 && bitonic != fit {
            bad[k] = Some(format!("bitonic emitter taken: {bitonic}, rows fit: {fit}"));
        } else if n > 1 && merge != (sort && !fit) {
            bad[k] = Some(format!(
                "merge passes taken: {merge}, a sort whose rows do not fit: {}",
                sort && !fit
            ));
        }
    }
    let outputs = runtime::compile(&m, options)
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            let want = hlo_eval::evaluate(&m, &args).map_err(|e| format!("evaluator: {e}"))?;
            let Literal::Tuple(want) = want else {
                return Err("the evaluator's result is no tuple".into());
            };
            let mut runs = Vec::new();
            for order in ["forward", "reverse"] {
                std::env::set_var("HLOC_CUDA_HOST_ORDER", order);
                let outs = exe.run(&args).map_err(|e| format!("{order} run: {e}"));
                std::env::remove_var("HLOC_CUDA_HOST_ORDER");
                runs.push((order, outs?.iter().flat_map(bits).collect::<Vec<_>>()));
            }
            Ok((want, runs))
        });
    let (want, runs) = match outputs {
        Ok(o) => o,
        Err(e) => {
            failures.push(fail(e));
            return emitted;
        }
    };
    for (order, got) in runs {
        let mut at = 0;
        for (k, w) in want.iter().enumerate() {
            let w = bits(w);
            let g = got.get(at..at + w.len()).unwrap_or_default();
            if let Some(o) = (0..w.len()).find(|&o| g.get(o) != w.get(o)) {
                bad[k].get_or_insert(format!(
                    "{order}: out{o} differs: {:x?} vs the evaluator's {:x?}",
                    g.get(o),
                    w.get(o)
                ));
            }
            at += w.len();
        }
        if at != got.len() {
            failures.push(fail(format!(
                "{order}: {} output leaves, the evaluator's {at}",
                got.len()
            )));
        }
    }
    for (c, b) in cases.iter().zip(bad) {
        if let Some(e) = b {
            failures.push(format!("{}: {e}\n{}", c.what, c.text));
        }
    }
    emitted
}

/// Cases per module: one host C++ compile and one NVRTC compile serve them all.
const PER_MODULE: usize = 16;

/// The sorted dimension's length of most sorts: one element (simplified away), rows of 2
/// to 64 elements (several rows a block).
const SORTS: &[i64] = &[1, 2, 5, 17, 64];

/// ... of every [`LONG_EVERY`]th sort: 700 (one row of 1,024 slots a block, the most
/// threads a sort block has: 512) and 2,100 (4,096 slots: where a row's operands take at
/// most 8 bytes an element it fits, and 512 threads loop over its 2,048 pairs; the merge
/// passes, 12 of them, otherwise).
const LONG_SORTS: &[i64] = &[700, 2100];

/// The row length of most top-ks: one element, rows of 3 to 40 elements.
const TOP_KS: &[i64] = &[1, 3, 16, 40];

/// ... of every [`LONG_EVERY`]th top-k: 1,500 (2,048 slots: 512 threads loop over its
/// pairs) and 9,000 (16,384 slots: over the shared memory, the library routine).
const LONG_TOP_KS: &[i64] = &[1500, 9000];

/// One seed in this many draws its length from the long ones: a long row's network costs
/// the compilers several times a short one's.
const LONG_EVERY: u64 = 16;

#[test]
fn random_sorts_and_top_ks_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-sorts")
    };
    let mut failures = Vec::new();
    let (mut sorts, mut top_ks) = (Vec::new(), Vec::new());
    for seed in gen::seeds(0..32) {
        // The long seeds take each long length in turn.
        let long = seed % LONG_EVERY == LONG_EVERY - 1;
        let turn = |lengths: &'static [i64]| {
            let i = (seed / LONG_EVERY) as usize % lengths.len();
            &lengths[i..=i]
        };
        let (text, args, keys) =
            key_sort_of(seed, if long { turn(LONG_SORTS) } else { SORTS }, false);
        if strict_weak(&text, &args, keys == Some(false)) {
            let what = format!("sort seed {seed}");
            sorts.push(Case { what, text, args });
        }
        let (text, args, keys) = key_topk_of(seed, if long { turn(LONG_TOP_KS) } else { TOP_KS });
        if strict_weak(&text, &args, !keys) {
            let what = format!("top-k seed {seed}");
            top_ks.push(Case { what, text, args });
        }
    }
    let (mut sorted, mut top_ked) = (0, 0);
    for (i, chunk) in sorts.chunks(PER_MODULE).enumerate() {
        sorted += check_all(i as u64, chunk, &options, &mut failures);
    }
    for (i, chunk) in top_ks.chunks(PER_MODULE).enumerate() {
        top_ked += check_all(100 + i as u64, chunk, &options, &mut failures);
    }
    gen::assert_none(&failures);
    // The seeds reach the emitter often enough to mean something.
    assert!(
        sorted >= 16 && top_ked >= 12,
        "{sorted} sorts, {top_ked} top-ks"
    );
}

#[test]
fn long_random_sorts_take_merge_passes_and_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-long-sorts")
    };
    let mut failures = Vec::new();
    let mut cases = Vec::new();
    for seed in gen::seeds(0..12) {
        let (text, args, keys) = key_sort_of(seed, &[4097, 6000, 9000, 20_000], false);
        if strict_weak(&text, &args, keys == Some(false)) {
            let what = format!("long sort seed {seed}");
            cases.push(Case { what, text, args });
        }
    }
    let mut merge_taken = 0;
    for (i, chunk) in cases.chunks(PER_MODULE).enumerate() {
        merge_taken += check_all(i as u64, chunk, &options, &mut failures);
    }
    gen::assert_none(&failures);
    assert!(
        merge_taken >= 6,
        "{merge_taken} long sorts took the merge passes"
    );
}
