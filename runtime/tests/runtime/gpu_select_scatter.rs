//! Differential test of the GPU select-and-scatter emitter on the CUDA host emulation: the
//! random select-and-scatters of `random_select_scatter` (ranks 1 to 4, random layouts,
//! windows that tile the operand (a thread per window), windows that leave gaps (a thread
//! per operand element) and windows that overlap (two launches: the chosen taps, then a
//! thread per operand element over them), paddings, `GE`,
//! `GT`, `LE` and `LT` selects with and without the total order, inputs full of ties, NaNs,
//! infinities and signed zeros, a scatter computation that does not commute, an init that
//! is a constant or a parameter) compiled for the GPU emitters, run on `--backend
//! cuda-host` against the reference evaluator, and each block's threads in reverse order
//! giving the same bits. Each must take the GPU emitter (a thread map, no library call),
//! and NVRTC compiles the GPU plan's kernels for sm_90 without spills where it is present.
//! Eight select-and-scatters share a module (their results a tuple), so that one NVRTC
//! and one host C++ compile serve them. Deterministic: a failure prints the module.

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen;
use crate::random_sorts::bits;

/// Select-and-scatters per module checked: one NVRTC and one host C++ compile serve them.
const PER_MODULE: usize = 8;

/// The launch-line prefixes of the GPU emitter's forms.
const FORMS: [&str; 3] = [
    "select-and-scatter (a thread per window)",
    "select-and-scatter (a thread per operand element)",
    "select-and-scatter (two launches, 1 of 2",
];

/// How many kernels of each of [`FORMS`] `titles` holds.
fn forms(titles: &str) -> [usize; 3] {
    FORMS.map(|f| titles.lines().filter(|l| l.starts_with(f)).count())
}

/// `parts` (modules of `random_select_scatter::module`, one select-and-scatter each) as
/// one module whose root is the tuple of their results: part `k`'s computations and
/// instructions get the suffix `k`, its parameters follow the earlier parts'.
fn combine(parts: &[(String, Vec<Literal>)]) -> (String, Vec<Literal>) {
    let (mut comps, mut entry, mut roots, mut shapes) =
        (String::new(), String::new(), Vec::new(), Vec::new());
    let mut args = Vec::new();
    for (k, (text, part_args)) in parts.iter().enumerate() {
        let (head, body) = text.split_once("ENTRY e {\n").expect("an entry");
        let head = head.strip_prefix("HloModule s\n").expect("the module line");
        comps.push_str(
            &head
                .replace("sel {", &format!("sel{k} {{"))
                .replace("sct {", &format!("sct{k} {{")),
        );
        let mut rename = |line: &str| {
            let line = line.trim();
            let (name, rest) = line.split_once(" = ").expect("an instruction");
            let name = match name {
                "x" => "px",
                "s" => "ps",
                "z" => "pz",
                "ROOT r" => "pr",
                other => panic!("unexpected instruction `{other}`"),
            };
            let mut rest = rest
                .replace("(x, s, z)", &format!("(px{k}, ps{k}, pz{k})"))
                .replace("select=sel,", &format!("select=sel{k},"))
                .replace("scatter=sct", &format!("scatter=sct{k}"));
            if let Some(i) = rest.find("parameter(") {
                let (p, tail) = rest[i + 10..].split_once(')').expect("a parameter number");
                let p: usize = p.parse().expect("a parameter number");
                rest = format!("{}parameter({}){tail}", &rest[..i], args.len() + p);
            }
            if name == "pr" {
                shapes.push(rest.split_once(' ').expect("a shape").0.to_string());
            }
            format!("  {name}{k} = {rest}\n")
        };
        for line in body.lines().filter(|l| l.contains(" = ")) {
            entry.push_str(&rename(line));
        }
        roots.push(format!("pr{k}"));
        args.extend(part_args.iter().cloned());
    }
    let text = format!(
        "HloModule s\n{comps}ENTRY e {{\n{entry}  ROOT t = ({}) tuple({})\n}}\n",
        shapes.join(", "),
        roots.join(", ")
    );
    (text, args)
}

/// Compiles `text` for the CUDA host, checks the GPU plan's kernels (NVRTC, no spills)
/// took the select-and-scatter forms `want` (kernels of each of [`FORMS`]), and runs
/// them in both thread orders against the evaluator.
fn check(
    text: &str,
    args: &[Literal],
    want: [usize; 3],
    options: &CompileOptions,
) -> Result<(), String> {
    let m = gen::parse(0, text);
    let titles = crate::gpu_sorts::gpu_kernel_titles(&m)?;
    if forms(&titles) != want || titles.matches("(two launches, 2 of 2").count() != want[2] {
        return Err(format!(
            "forms {:?}, not {want:?}:\n{titles}",
            forms(&titles)
        ));
    }
    let exe = runtime::compile(&m, options).map_err(|e| e.to_string())?;
    if exe.stats().library_calls != 0 {
        return Err("ran as a library call".into());
    }
    let mut runs = Vec::new();
    for order in ["forward", "reverse"] {
        std::env::set_var("HLOC_CUDA_HOST_ORDER", order);
        let outs = exe.run(args).map_err(|e| format!("{order} run: {e}"));
        std::env::remove_var("HLOC_CUDA_HOST_ORDER");
        let outs = outs?;
        runtime::check_reference(&m, args, &outs).map_err(|e| format!("{order}: {e}"))?;
        runs.push(outs.iter().flat_map(bits).collect::<Vec<_>>());
    }
    if runs[0] != runs[1] {
        return Err("the threads' order changes the outputs' bits".into());
    }
    Ok(())
}

#[test]
fn random_select_and_scatters_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-select-scatter")
    };
    let mut failures = Vec::new();
    let mut counts = [0; 3];
    let mut picked = Vec::new();
    for seed in gen::seeds(0..60) {
        let Some((text, args)) = crate::random_select_scatter::module(seed) else {
            continue;
        };
        let titles = match crate::gpu_sorts::gpu_plan_titles(&gen::parse(seed, &text)) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("seed {seed}: {e}\n{text}"));
                continue;
            }
        };
        let f = forms(&titles);
        if f.iter().sum::<usize>() != 1 {
            failures.push(format!(
                "seed {seed}: not one GPU select-and-scatter kernel:\n{titles}\n{text}"
            ));
            continue;
        }
        // A thread per window is the common form: enough of it once 12 were checked.
        if f[0] == 1 && counts[0] >= 12 {
            continue;
        }
        for (c, n) in counts.iter_mut().zip(f) {
            *c += n;
        }
        picked.push((seed, (text, args), f));
    }
    for group in picked.chunks(PER_MODULE) {
        let parts: Vec<_> = group.iter().map(|(_, p, _)| p.clone()).collect();
        let (text, args) = combine(&parts);
        let want = group.iter().fold([0; 3], |mut w, (_, _, f)| {
            for (a, b) in w.iter_mut().zip(f) {
                *a += b;
            }
            w
        });
        if let Err(e) = check(&text, &args, want, &options) {
            let seeds: Vec<u64> = group.iter().map(|(s, _, _)| *s).collect();
            failures.push(format!("seeds {seeds:?}: {e}\n{text}"));
        }
    }
    gen::assert_none(&failures);
    let [windows, elements, two] = counts;
    assert!(
        windows >= 10 && elements >= 3 && two >= 10,
        "{windows} thread-per-window, {elements} thread-per-element and {two} two-launch \
         select-and-scatters"
    );
}
