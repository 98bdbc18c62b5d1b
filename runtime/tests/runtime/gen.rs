//! What the randomized differential tests share: a deterministic generator, the
//! seeds to run, HLO dimension-list text, and the check of one module against the
//! reference evaluator.

use hlo::Literal;
use runtime::CompileOptions;

/// The draws the generators need, over affine's deterministic generator (SplitMix64 from
/// `rand_xoshiro`): the whole output is a function of the seed.
pub struct Rng(affine::gen::Rng);

impl Rng {
    /// A generator whose draws are determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(affine::gen::Rng::new(seed))
    }

    /// A value of `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }

    /// A value of `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.range_i64(lo, hi)
    }

    /// An element of `v` (not empty).
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }

    /// `v` in a random order.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        self.0.shuffle(v)
    }

    /// `k` distinct values of `0..n`, in random order.
    pub fn distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        self.shuffle(&mut v);
        v.truncate(k);
        v
    }
}

/// The seeds a randomized test runs: `default`, or `HLOC_RANDOM_SEEDS=A..B` (a longer
/// search, by hand).
pub fn seeds(default: std::ops::Range<u64>) -> std::ops::Range<u64> {
    std::env::var("HLOC_RANDOM_SEEDS")
        .ok()
        .and_then(|s| {
            let (a, b) = s.split_once("..")?;
            Some(a.trim().parse::<u64>().ok()?..b.trim().parse::<u64>().ok()?)
        })
        .unwrap_or(default)
}

/// An array shape's text with a random layout.
pub fn shape(rng: &mut Rng, ty: &str, dims: &[i64]) -> String {
    let mut perm: Vec<usize> = (0..dims.len()).collect();
    rng.shuffle(&mut perm);
    format!("{ty}[{}]{{{}}}", list(dims), list(&perm))
}

/// Compile options whose object cache is the test's own directory `cache`. The modules
/// keep the random layouts they were written with, so the code generator meets them
/// (`chosen_layouts.rs` tests the layouts a module before layout assignment gets).
pub fn options(cache: &str) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(cache)),
        keep_layouts: true,
        ..CompileOptions::default()
    }
}

/// Random arguments for every parameter of `m`, drawn from `seed`.
pub fn random_args(m: &hlo::Module, seed: u64) -> Vec<Literal> {
    let entry = m.entry();
    (0..entry.parameters().len())
        .map(|n| {
            let id = entry.parameter(n).expect("parameter");
            hlo_eval::random::random_literal(entry.instr(id).shape(), seed, n as u64, 1 << 26)
                .expect("random input")
        })
        .collect()
}

/// Checks `module(seed)` for every seed on random arguments (a seed that draws nothing
/// gives `None`), objects cached under `cache`, and fails listing every mismatch. Returns
/// how many modules ran.
pub fn check_all(
    cache: &str,
    seeds: std::ops::Range<u64>,
    module: impl Fn(u64) -> Option<String>,
) -> usize {
    let options = options(cache);
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in seeds {
        let Some(text) = module(seed) else { continue };
        let m = parse(seed, &text);
        ran += 1;
        check(
            seed,
            (&m, &text),
            &random_args(&m, seed),
            &options,
            &mut failures,
        );
    }
    assert_none(&failures);
    ran
}

/// Compiles the partitioned module `text`, runs it on its devices (each with its own
/// random arguments) and compares every device's outputs with the N-device evaluator's;
/// an error or mismatch is pushed onto `failures` with the module.
pub fn check_on_devices(
    seed: u64,
    text: &str,
    options: &CompileOptions,
    failures: &mut Vec<String>,
) {
    let m = hlo::parse_module(text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    let grid = plan::Grid::of_module(&m);
    let args: Vec<Vec<Literal>> = (0..grid.count() as u64)
        .map(|k| random_args(&m, seed * 64 + k))
        .collect();
    let result = runtime::compile(&m, options)
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            runtime::run_on_devices(&exe, grid, &args, std::time::Duration::from_secs(60))
                .map_err(|e| e.to_string())
        })
        .and_then(|outs| runtime::reference_reports_on_devices(&m, grid, &args, &outs));
    match result {
        Err(e) => failures.push(format!("seed {seed}: {e}\n{text}")),
        Ok(reports) => {
            for (k, device) in reports.iter().enumerate() {
                for (i, r) in device.iter().enumerate() {
                    if !r.matches {
                        let line = r.line(&format!("out{i}.dev{k}"), "", "reference");
                        failures.push(format!("seed {seed}: {line}\n{text}"));
                    }
                }
            }
        }
    }
}

/// Runs the test `name` of this test binary again in a child process with the
/// environment variable `var` set to `value` (a switch the library reads once per
/// process), and fails with the child's output unless that one test passed.
pub fn rerun_with_env(name: &str, var: &str, value: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([name, "--exact", "--test-threads=1"])
        .env(var, value)
        .output()
        .expect("run the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "with {var}={value}:\n{text}"
    );
}

/// One dot operand's dimensions: batch, contracting and free dimensions in a random
/// order (the generators of random dots share it).
pub struct DotOperand {
    /// The operand's dimensions.
    pub dims: Vec<i64>,
    /// Where each batch dimension stands.
    pub batch_at: Vec<usize>,
    /// Where each contracting dimension stands.
    pub contract_at: Vec<usize>,
    /// The free extents in the operand's order (the order the result takes them in).
    pub free: Vec<i64>,
}

/// A dot operand of these batch, contracting and free extents, its dimensions shuffled.
pub fn dot_operand(rng: &mut Rng, batch: &[i64], contract: &[i64], free: &[i64]) -> DotOperand {
    let mut tags: Vec<(char, usize)> = (0..batch.len())
        .map(|i| ('b', i))
        .chain((0..contract.len()).map(|i| ('c', i)))
        .chain((0..free.len()).map(|i| ('f', i)))
        .collect();
    rng.shuffle(&mut tags);
    let extent = |&(t, i): &(char, usize)| match t {
        'b' => batch[i],
        'c' => contract[i],
        _ => free[i],
    };
    let at = |want: char, count: usize| -> Vec<usize> {
        (0..count)
            .map(|i| tags.iter().position(|&t| t == (want, i)).expect("placed"))
            .collect()
    };
    DotOperand {
        dims: tags.iter().map(extent).collect(),
        batch_at: at('b', batch.len()),
        contract_at: at('c', contract.len()),
        free: tags.iter().filter(|t| t.0 == 'f').map(extent).collect(),
    }
}

/// The start indices of a gather or scatter with index vectors of `n_idx` elements: zero
/// to two batch dimensions, the index vector dimension anywhere among them or implicit
/// (trailing, for one-element vectors). Returns the batch sizes, the index vector
/// dimension and the indices' dims.
pub fn index_dims(rng: &mut Rng, n_idx: usize) -> (Vec<i64>, usize, Vec<i64>) {
    let n_batch = rng.below(3);
    let batch: Vec<i64> = (0..n_batch).map(|_| 1 + rng.below(4) as i64).collect();
    let implicit = n_idx == 1 && rng.below(3) == 0;
    let ivd = if implicit {
        n_batch
    } else {
        rng.below(n_batch + 1)
    };
    let mut indices = batch.clone();
    if !implicit {
        indices.insert(ivd, n_idx as i64);
    }
    (batch, ivd, indices)
}

/// The dims of a gather's result or a scatter's updates: `window` dims at random
/// positions (returned, sorted), the `batch` dims in order elsewhere.
pub fn interleave(rng: &mut Rng, batch: &[i64], window: &[i64]) -> (Vec<usize>, Vec<i64>) {
    let rank = batch.len() + window.len();
    let mut at = rng.distinct(rank, window.len());
    at.sort_unstable();
    let (mut b, mut w) = (batch.iter(), window.iter());
    let dims = (0..rank)
        .map(|p| *if at.contains(&p) { w.next() } else { b.next() }.expect("sized"))
        .collect();
    (at, dims)
}

/// `a,b,c` for a dimension or index list.
pub fn list<T: ToString>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// A generated module that must parse and verify (a failure is the generator's bug).
pub fn parse(seed: u64, text: &str) -> hlo::Module {
    let m = hlo::parse_module(text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    if let Err(errors) = hlo::verifier::verify(&m) {
        panic!("seed {seed}: generated module does not verify: {errors:?}\n{text}");
    }
    m
}

/// Compiles `m` (its text `text`), runs it on `args` and compares with the evaluator; a
/// mismatch or error is pushed onto `failures` with the module. Returns the executable's
/// library call count (0 when it did not compile).
pub fn check(
    seed: u64,
    (m, text): (&hlo::Module, &str),
    args: &[Literal],
    options: &CompileOptions,
    failures: &mut Vec<String>,
) -> usize {
    let mut library_calls = 0;
    check_inspecting(seed, (m, text), args, options, failures, |exe| {
        library_calls = exe.stats().library_calls;
    });
    library_calls
}

/// Parses the module of `seed`, checks it against the evaluator on random arguments and
/// records a failure unless it ran as exactly one library GEMM (`label` names the seed's
/// variant in that failure, e.g. its thread count). Returns the module for further checks.
/// Shared by the dot tests that require the GEMM path.
pub fn check_one_gemm(
    seed: u64,
    text: &str,
    options: &CompileOptions,
    label: &str,
    failures: &mut Vec<String>,
) -> hlo::Module {
    let m = parse(seed, text);
    let calls = check(seed, (&m, text), &random_args(&m, seed), options, failures);
    if calls != 1 {
        failures.push(format!(
            "seed {seed}{label}: {calls} library calls, not one GEMM\n{text}"
        ));
    }
    m
}

/// [`check`], handing the compiled executable to `inspect` before the run: for tests that
/// also count what the plan did (kernels in place, loop state carried in place).
pub fn check_inspecting(
    seed: u64,
    (m, text): (&hlo::Module, &str),
    args: &[Literal],
    options: &CompileOptions,
    failures: &mut Vec<String>,
    inspect: impl FnOnce(&runtime::Executable),
) {
    let result = runtime::compile(m, options)
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            inspect(&exe);
            exe.run(args).map_err(|e| e.to_string())
        })
        .and_then(|outs| runtime::check_reference(m, args, &outs));
    if let Err(e) = result {
        failures.push(format!("seed {seed}: {e}\n{text}"));
    }
}

/// Checks the dot modules `module(seed)` of `seeds` against the evaluator (as [`check`], caching
/// in `cache`) and requires each to run as exactly one library GEMM, except a dot without batch
/// dimensions (`unbatched(text)`) whose lhs contracts a dimension of size 1: simplification
/// makes that an outer product of broadcasts. Shared by the GEMM-path dot tests.
pub fn check_one_gemm_each(
    cache: &str,
    seeds: std::ops::Range<u64>,
    module: impl Fn(u64) -> String,
    unbatched: impl Fn(&str) -> bool,
) {
    let options = options(cache);
    let mut failures = Vec::new();
    for seed in seeds {
        let text = module(seed);
        let m = parse(seed, &text);
        let calls = check(
            seed,
            (&m, &text),
            &random_args(&m, seed),
            &options,
            &mut failures,
        );
        let outer = unbatched(&text) && lhs_contracts_one(&text);
        if !outer && calls != 1 {
            failures.push(format!(
                "seed {seed}: {calls} library calls, not one GEMM\n{text}"
            ));
        }
    }
    assert_none(&failures);
}

/// Whether the lhs `a` of a dot module's text contracts its last logical dimension of size 1.
fn lhs_contracts_one(text: &str) -> bool {
    let a = text
        .lines()
        .find(|l| l.trim_start().starts_with("a = "))
        .unwrap_or("");
    let dims = a
        .split('[')
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap_or("");
    dims.rsplit(',').next() == Some("1")
}

/// Fails the test listing every failure.
pub fn assert_none(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Whether the program has a loop and every loop returns state element `k` in the state's
/// own buffer with a body that copies nothing (the in-place loop-state tests' check).
pub fn loops_keep_element_in_place(p: &plan::Program, k: usize) -> bool {
    let loops: Vec<_> = p
        .thunks
        .iter()
        .filter_map(|t| match t {
            plan::Thunk::While {
                body,
                body_results,
                state,
                ..
            } => Some((body, body_results, state)),
            _ => None,
        })
        .collect();
    !loops.is_empty()
        && loops.iter().all(|(body, results, state)| {
            results.get(k).is_some()
                && results.get(k) == state.get(k)
                && !body.iter().any(|t| matches!(t, plan::Thunk::Copy { .. }))
        })
}
