//! End-to-end tests of the `hloc` binary: each case in tests/cli/*.test (testkit's golden
//! format) is a command line (single quotes group words), optional `# stdin: ...` and
//! `# feature: z3` header lines, and the expected stdout, stderr (prefixed `stderr: `) and
//! exit code. Commands run from the repository root with a compile cache of their own
//! (`HLOC_CACHE_DIR` under cargo's target tmp dir). Bless with `UPDATE_EXPECT=1`.

use testkit::golden;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Splits a command line on spaces, keeping single-quoted text together.
fn split_args(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    args.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        args.push(cur);
    }
    args
}

fn run_case(case: &golden::Case) -> String {
    if case.header_value("feature") == Some("z3") && !cfg!(feature = "z3") {
        return case.expected.clone();
    }
    let args = split_args(case.input.trim());
    assert_eq!(
        args.first().map(String::as_str),
        Some("hloc"),
        "line {}: command must start with hloc",
        case.line
    );
    let stdin: Vec<&str> = case
        .header
        .iter()
        .filter_map(|h| h.strip_prefix("stdin: "))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args(&args[1..])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env(
            "HLOC_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hloc runs");
    // A command that stops before reading its stdin (an error found first) closes the pipe:
    // a broken pipe here is that command's answer, which its output and exit code show.
    if let Err(e) = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.join("\n").as_bytes())
    {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    let out = child.wait_with_output().expect("hloc finishes");
    let mut text = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        text.push_str(&format!("\nstderr: {line}").replace("stderr: \n", "stderr:\n"));
    }
    text.push_str(&format!("\nexit: {}", out.status.code().unwrap_or(-1)));
    let text = text.trim_start_matches('\n').to_string();
    if case.has_header("mask") {
        // Only stderr's figures vary (the profile table); stdout and the exit code stay.
        let masked: Vec<String> = text
            .lines()
            .map(|l| match l.starts_with("stderr:") {
                // Column widths follow the numbers: spaces collapse too.
                true => mask_numbers(l)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                false => l.to_string(),
            })
            .collect();
        return masked.join("\n");
    }
    text
}

/// `text` with every free-standing number (after a space or `(`, before a space, `%`,
/// `)` or `,`: a measured time, a rate, a count) replaced by `#`, for the `# mask` cases
/// whose stderr numbers vary from run to run (`--profile`; their runs of spaces are
/// collapsed too); numbers inside names (`blocks=4`, `f32[64,32]`, `fusion.1`) stay.
fn mask_numbers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let starts =
            chars[i].is_ascii_digit() && (i == 0 || matches!(chars[i - 1], ' ' | '(' | '\n'));
        if starts {
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_ascii_digit()
                    || chars[j] == '.'
                    || (chars[j] == 'e' && j + 1 < chars.len() && chars[j + 1] != ' ')
                    || (matches!(chars[j], '+' | '-') && j > i && chars[j - 1] == 'e'))
            {
                j += 1;
            }
            if j == chars.len() || matches!(chars[j], ' ' | '%' | ')' | ',' | '\n') {
                out.push('#');
                i = j;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

#[test]
fn cli_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    for path in golden::files(&dir, "test") {
        golden::check_file(&path, run_case);
    }
}

/// `--time-passes` prints one `TIME ms  STAGE` line per stage on stderr, in the order the
/// stages ran, then the total; only the names are checked (times vary). Stdout (`--stats`)
/// is the same with and without it.
#[test]
fn time_passes_names_every_stage_in_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-time-passes");
    let _ = std::fs::remove_dir_all(&cache);
    let hloc = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
            .args(["compile", "corpus/softmax/before_optimizations.hlo"])
            .args(["--stats", "--no-timing"])
            .args(extra)
            .current_dir(&root)
            .env("HLOC_CACHE_DIR", &cache)
            .output()
            .expect("hloc runs");
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        let stages: Vec<String> = String::from_utf8(out.stderr)
            .expect("utf-8")
            .lines()
            .map(|l| {
                let (time, name) = l
                    .trim_start()
                    .split_once(" ms  ")
                    .unwrap_or_else(|| panic!("not `TIME ms  STAGE`: {l:?}"));
                assert!(time.parse::<f64>().is_ok(), "{l:?}");
                name.to_string()
            })
            .collect();
        (stdout, stages)
    };
    let (cold_out, cold) = hloc(&["--time-passes"]);
    let (warm_out, warm) = hloc(&["--time-passes"]);
    let (plain_out, plain) = hloc(&[]);
    assert!(plain.is_empty(), "{plain:?}");
    assert_eq!(cold_out, plain_out);
    assert_eq!(warm_out, plain_out);
    assert!(plain_out.starts_with("kernels: "), "{plain_out}");
    // parse, verify, the default pipeline's passes, the fusion pipeline's, then the rest.
    let group = |stages: &[String], prefix: &str| {
        stages
            .iter()
            .filter(|n| n.starts_with(prefix))
            .cloned()
            .collect::<Vec<_>>()
    };
    let passes = group(&cold, "pass ");
    let fusion = group(&cold, "fusion ");
    assert!(passes.contains(&"pass algsimp".to_string()), "{cold:?}");
    // The entry boundary's flattening first, then the default pipeline.
    assert_eq!(
        passes
            .iter()
            .take(2)
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["pass flatten-tuple-parameters", "pass sharding-remover"]
    );
    assert_eq!(
        fusion.first().map(String::as_str),
        Some("fusion priority-fusion")
    );
    // hloc's fusion pipeline forms only what the emitters take (they confirm each fusion
    // before it forms): nothing is unfused after it, it ends with its clean-up.
    assert_eq!(fusion.last().map(String::as_str), Some("fusion dce"));
    let mut want: Vec<String> = vec!["parse".into(), "verify".into()];
    want.extend(passes);
    want.extend(fusion);
    let tail = [
        "codegen",
        "print-c",
        "cache-lookup",
        "cc",
        "load",
        "constants",
    ];
    want.extend(tail.iter().map(|s| s.to_string()));
    want.push("total (cache miss)".into());
    assert_eq!(cold, want);
    // The second compile hits the cache: no `cc` line.
    let want_warm: Vec<String> = want
        .iter()
        .filter(|n| *n != "cc")
        .map(|n| n.replace("cache miss", "cache hit"))
        .collect();
    assert_eq!(warm, want_warm);
}

#[test]
fn profile_lists_every_thunk_of_the_timed_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-profile");
    let hloc = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
            .args([
                "run",
                "corpus/softmax/before_optimizations.hlo",
                "--no-timing",
            ])
            .args(extra)
            .current_dir(&root)
            .env("HLOC_CACHE_DIR", &cache)
            .output()
            .expect("hloc runs");
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8(out.stdout).expect("utf-8"),
            String::from_utf8(out.stderr).expect("utf-8"),
        )
    };
    let (plain, none) = hloc(&[]);
    let (profiled, table) = hloc(&["--profile"]);
    assert!(none.is_empty(), "{none}");
    assert_eq!(plain, profiled);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines.first().map(|l| l.trim_start()),
        Some(
            "ms      %   calls   model ms model/measured   GFLOP/s     GB/s  roof %  thunk (per run) [op_name]"
        )
    );
    // The rows, then `total`, then the model's summary line.
    let n = lines.len();
    assert!(n >= 3 && lines[n - 2].ends_with("  total"), "{table}");
    let rows = &lines[1..n - 2];
    // Every kernel of the program appears once per run, and the shares add up.
    let kernels = rows
        .iter()
        .filter(|l| l.contains("  kernel hloc_k"))
        .count();
    assert!(kernels >= 2, "{table}");
    let shares: f64 = rows
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum();
    assert!((shares - 100.0).abs() < 1.0, "{table}");
    for l in rows {
        assert_eq!(l.split_whitespace().nth(2), Some("1"), "{table}");
        // Softmax is all fusions: each has a positive prediction and ratio.
        let model = profile_column(l, 3);
        let ratio = profile_column(l, 4);
        assert!(model > 0.0 && ratio > 0.0, "{table}");
        // Every fusion reads and writes buffers: a positive rate.
        assert!(profile_column(l, 6) > 0.0, "{table}");
    }
    let m = rows.len();
    assert!(
        lines[n - 1].starts_with("model/measured: geomean ")
            && lines[n - 1].contains(&format!(" over {m} of {m} thunks (100.0% of the time)")),
        "{table}"
    );
}

/// `--profile-json PATH` holds the table's rows: the same labels, shares summing to 100,
/// a model figure for every fusion of the softmax; the table is printed only with
/// `--profile`.
#[test]
fn profile_json_holds_the_tables_rows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let json_path = tmp.join("profile-softmax.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args([
            "run",
            "corpus/softmax/before_optimizations.hlo",
            "--no-timing",
        ])
        .arg("--profile-json")
        .arg(&json_path)
        .current_dir(&root)
        .env("HLOC_CACHE_DIR", tmp.join("hloc-cache-profile"))
        .output()
        .expect("hloc runs");
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let text = std::fs::read_to_string(&json_path).expect("the JSON is written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let thunks = v["thunks"].as_array().expect("thunks");
    assert!(thunks.len() >= 2, "{text}");
    let shares: f64 = thunks.iter().map(|t| t["share"].as_f64().unwrap()).sum();
    assert!((shares - 100.0).abs() < 1.0, "{text}");
    for t in thunks {
        assert!(
            t["label"].as_str().unwrap().starts_with("kernel hloc_k"),
            "{text}"
        );
        assert_eq!(t["calls"].as_f64(), Some(1.0), "{text}");
        assert!(t["model_ms"].as_f64().unwrap() > 0.0, "{text}");
    }
    let ms: Vec<f64> = thunks.iter().map(|t| t["ms"].as_f64().unwrap()).collect();
    assert!(ms.windows(2).all(|w| w[0] >= w[1]), "slowest first: {text}");
}

/// Column `k` of a `--profile` row as a number (NaN for `-`).
fn profile_column(row: &str, k: usize) -> f64 {
    row.split_whitespace()
        .nth(k)
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

#[test]
fn profile_predicts_kernels_and_not_the_runtime_copies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-profile-model");
    let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args([
            "run",
            "cli/tests/cli/run/dus_copy.hlo",
            "--no-timing",
            "--repeat",
            "3",
            "--profile",
        ])
        .current_dir(&root)
        .env("HLOC_CACHE_DIR", &cache)
        .output()
        .expect("hloc runs");
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8(out.stderr).expect("utf-8");
    let row = |what: &str| {
        table
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no `{what}` row in\n{table}"))
    };
    // exp and tanh fused: the model's time of the fused computation, at least one launch.
    let fusion = row("  kernel hloc_k0_fusion ");
    assert!(profile_column(fusion, 3) >= 0.0015, "{table}");
    let ratio = profile_column(fusion, 4);
    assert!(ratio.is_finite() && ratio > 0.0, "{table}");
    // The dynamic-update-slice alone, in place after a copy of its live base: the copy is
    // the runtime's, not an instruction the model costs.
    assert!(
        profile_column(row("  kernel hloc_k1_d "), 3) > 0.0,
        "{table}"
    );
    let copy: Vec<&str> = row("  copy 16384 bytes -> %d").split_whitespace().collect();
    assert_eq!(copy[3..5], ["-", "-"], "{table}");
    // The summary: the geometric mean of the two kernels' ratios, the copy left out.
    let summary = table.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("model/measured: geomean ")
            && summary.contains(" over 2 of 3 thunks (")
            && summary.contains("; kernels "),
        "{table}"
    );
    let geomean = profile_column(summary, 2);
    let want = (ratio * profile_column(row("  kernel hloc_k1_d "), 4)).sqrt();
    assert!((geomean / want - 1.0).abs() < 0.02, "{table}");
}

/// A cached object with flipped bytes is never run: the next compile finds its content
/// hash wrong, warns on stderr, rebuilds it and prints the right answer; the rebuilt
/// entry is sound (no warning after it).
#[test]
fn a_corrupt_cache_entry_is_rebuilt_with_a_warning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-corrupt");
    let _ = std::fs::remove_dir_all(&cache);
    let hloc = || {
        let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
            .args([
                "run",
                "cli/tests/cli/run/dus_copy.hlo",
                "--no-timing",
                "--seed",
                "3",
            ])
            .current_dir(&root)
            .env("HLOC_CACHE_DIR", &cache)
            .env_remove("RUST_LOG")
            .env_remove("HLOC_LOG")
            .output()
            .expect("hloc runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        (
            String::from_utf8(out.stdout).expect("utf-8"),
            String::from_utf8(out.stderr).expect("utf-8"),
        )
    };
    let (want, quiet) = hloc();
    assert!(quiet.is_empty(), "{quiet}");
    let objects: Vec<std::path::PathBuf> = std::fs::read_dir(&cache)
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "so"))
        .collect();
    assert_eq!(objects.len(), 1, "{objects:?}");
    let object = &objects[0];
    let mut bytes = std::fs::read(object).expect("object");
    // Flip every byte of the middle quarter: code and data alike.
    let n = bytes.len();
    for b in &mut bytes[3 * n / 8..5 * n / 8] {
        *b ^= 0x5a;
    }
    std::fs::write(object, &bytes).expect("corrupt the object");
    let (got, warning) = hloc();
    assert_eq!(got, want);
    let lines: Vec<&str> = warning.lines().collect();
    assert_eq!(lines.len(), 1, "{warning}");
    assert!(
        lines[0].contains(&format!(
            "the cached object {} is corrupt (its content hash does not match: flipped or \
             lost bytes); rebuilding it",
            object.display()
        )),
        "{warning}"
    );
    let (again, none) = hloc();
    assert_eq!(again, want);
    assert!(none.is_empty(), "{none}");
}

/// `--outputs` is written whole or not at all: a failed write leaves no file behind and an
/// earlier file as it was.
#[test]
fn a_failed_outputs_write_leaves_nothing_behind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-outputs-partial");
    let _ = std::fs::remove_dir_all(&dir);
    // A directory where the file should go: the rename over it fails.
    let target = dir.join("out.npz");
    std::fs::create_dir_all(target.join("inside")).expect("dirs");
    let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args([
            "run",
            "cli/tests/cli/run/negate.hlo",
            "--no-timing",
            "--outputs",
        ])
        .arg(&target)
        .current_dir(&root)
        .env(
            "HLOC_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache"),
        )
        .output()
        .expect("hloc runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["out.npz"], "only the directory that was there");
    assert!(target.join("inside").is_dir());
}

/// `hloc cache info|prune|clear` on a cache of two objects.
#[test]
fn the_cache_is_listed_pruned_and_cleared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-admin");
    let _ = std::fs::remove_dir_all(&cache);
    let hloc = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
            .args(args)
            .current_dir(&root)
            .env("HLOC_CACHE_DIR", &cache)
            .output()
            .expect("hloc runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let info = |want_objects: usize| {
        let text = hloc(&["cache", "info"]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("dir: {}", cache.display()), "{text}");
        assert_eq!(lines[1], format!("objects: {want_objects}"), "{text}");
        let bytes: u64 = lines[2]
            .strip_prefix("bytes: ")
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(bytes > 0, want_objects > 0, "{text}");
        bytes
    };
    assert_eq!(info(0), 0);
    hloc(&["compile", "cli/tests/cli/run/negate.hlo"]);
    hloc(&["compile", "cli/tests/cli/run/dus_copy.hlo"]);
    let both = info(2);
    // Nothing beyond the default cap.
    assert_eq!(hloc(&["cache", "prune"]), "removed 0 objects, 0 bytes\n");
    // A cap of one byte keeps only the most recent object.
    let pruned = hloc(&["cache", "prune", "--max-size", "1"]);
    assert!(pruned.starts_with("removed 1 objects, "), "{pruned}");
    let one = info(1);
    assert_eq!(pruned, format!("removed 1 objects, {} bytes\n", both - one));
    assert_eq!(
        hloc(&["cache", "clear"]),
        format!("removed 1 objects, {one} bytes\n")
    );
    info(0);
}

/// `hloc compile --target h200 --dump-to` on a machine without a GPU: the CUDA module and
/// the per-kernel report are written, NVRTC compiles every kernel without spills, the loop
/// emitter's kernels record their thread maps, and --stats counts the kernels. Skipped
/// without NVRTC unless CI is set (tools/setup.sh installs it there).
#[test]
fn gpu_compile_writes_the_cuda_module_and_each_kernels_launch() {
    if !runtime::nvrtc_present() {
        assert!(
            std::env::var_os("CI").is_none(),
            "NVRTC is required in CI (tools/setup.sh)"
        );
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-gpu-dump");
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args(["compile", "corpus/layernorm/before_optimizations.hlo"])
        .args(["--target", "h200", "--stats", "--no-timing", "--dump-to"])
        .arg(&dir)
        .current_dir(&root)
        .output()
        .expect("hloc runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("spill"),
        "{out:?}"
    );
    let read = |suffix: &str| {
        let f = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix} in the dump"));
        std::fs::read_to_string(f).unwrap()
    };
    let cu = read(".kernels.cu");
    let report = read(".kernels.txt");
    let kernels = cu.matches("__global__").count();
    assert!(kernels > 0, "{cu}");
    assert!(
        stdout.contains(&format!("kernels: {kernels}\n")),
        "{stdout}"
    );
    assert_eq!(report.matches("\nkernel ").count() + 1, kernels, "{report}");
    assert_eq!(
        report.matches("spill_stores=0 spill_loads=0").count(),
        kernels
    );
    assert!(report.contains("loop emitter: blocks="), "{report}");
    assert!(
        report.contains("thread map: (th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] ->"),
        "{report}"
    );
    assert!(
        cu.contains("thread map: "),
        "the kernels' comments carry their maps"
    );
}

/// `hloc run` prints `time: X ms`, then on the compiled backend `time split: compile X ms
/// (cache miss|hit), run Y ms` (the first cold, the second from the cache); the reference
/// backend prints the `time:` line alone and `--no-timing` neither.
#[test]
fn run_time_is_split_into_compile_and_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-time-split");
    let _ = std::fs::remove_dir_all(&cache);
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
            .args(["run", "cli/tests/cli/run/negate.hlo"])
            .args(extra)
            .current_dir(&root)
            .env("HLOC_CACHE_DIR", &cache)
            .output()
            .expect("hloc runs");
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        stdout
            .lines()
            .filter(|l| l.starts_with("time"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let ms = |s: &str| {
        s.parse::<f64>()
            .unwrap_or_else(|_| panic!("not a number: {s:?}"))
    };
    for want in ["miss", "hit"] {
        let lines = run(&[]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let total = lines[0].strip_prefix("time: ").expect("time line");
        assert!(ms(total.strip_suffix(" ms").expect("ms")) >= 0.0);
        let rest = lines[1]
            .strip_prefix("time split: compile ")
            .expect("split line");
        let (compile, rest) = rest.split_once(" ms (cache ").expect("compile");
        let (cache, run_ms) = rest.split_once("), run ").expect("run");
        assert_eq!(cache, want, "{lines:?}");
        assert!(ms(compile) >= 0.0 && ms(run_ms.strip_suffix(" ms").expect("ms")) >= 0.0);
    }
    let reference = run(&["--backend", "reference"]);
    assert!(
        reference.len() == 1 && reference[0].starts_with("time: "),
        "{reference:?}"
    );
    assert!(run(&["--no-timing"]).is_empty());
}

/// `--trace PATH` holds one complete event per thunk call of the timed runs (here three
/// runs of two thunks), in order, not overlapping, with the call's work and op names;
/// `--profile-json` gives the same work and the rates it implies.
#[test]
fn trace_holds_every_call_with_its_work() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let trace_path = tmp.join("trace-profile-ops.json");
    let json_path = tmp.join("profile-ops.json");
    let _ = std::fs::remove_file(&trace_path);
    let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args(["run", "cli/tests/cli/run/profile_ops.hlo", "--repeat", "3"])
        .arg("--trace")
        .arg(&trace_path)
        .arg("--profile-json")
        .arg(&json_path)
        .current_dir(&root)
        .env("HLOC_CACHE_DIR", tmp.join("hloc-cache-profile"))
        .output()
        .expect("hloc runs");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert!(
        stderr.contains("trace: 6 calls of 2 thunks in "),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&trace_path).expect("the trace is written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(events[0]["ph"], "M", "{text}");
    assert_eq!(events[0]["args"]["name"], "jit_layer", "{text}");
    let calls: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(calls.len(), 6, "{text}");
    let mut end = 0.0;
    for c in &calls {
        let (ts, dur) = (c["ts"].as_f64().unwrap(), c["dur"].as_f64().unwrap());
        assert!(
            ts >= end - 1e-3 && dur >= 0.0,
            "calls in order, apart: {text}"
        );
        end = ts + dur;
    }
    let gemm = calls[0];
    assert_eq!(gemm["cat"], "gemm.f32", "{text}");
    assert_eq!(
        gemm["args"]["flops"].as_f64(),
        Some(2.0 * 64.0 * 32.0 * 128.0)
    );
    let bytes = 4.0 * (64.0 * 128.0 + 128.0 * 32.0 + 64.0 * 32.0);
    assert_eq!(gemm["args"]["bytes"].as_f64(), Some(bytes));
    assert_eq!(
        gemm["args"]["op_names"],
        serde_json::json!(["jit(layer)/jit(main)/dot_general"])
    );
    let fusion = calls[1];
    assert_eq!(fusion["cat"], "kernel", "{text}");
    assert_eq!(fusion["args"]["flops"].as_f64(), Some(2.0 * 64.0 * 32.0));
    assert_eq!(
        fusion["args"]["op_names"],
        serde_json::json!(["jit(layer)/jit(main)/exp", "jit(layer)/jit(main)/tanh"])
    );
    // The profile's rates are its work over its measured time.
    let text = std::fs::read_to_string(&json_path).expect("the JSON is written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    for t in v["thunks"].as_array().expect("thunks") {
        let ms = t["ms"].as_f64().unwrap();
        let flops = t["flops"].as_f64().unwrap();
        let rate = t["gflops_per_s"].as_f64().unwrap();
        assert!(
            (rate - flops / (ms * 1e-3) / 1e9).abs() <= 1e-6 * rate,
            "{text}"
        );
        let gbs = t["gb_per_s"].as_f64().unwrap();
        assert!((gbs - t["bytes"].as_f64().unwrap() / (ms * 1e-3) / 1e9).abs() <= 1e-6 * gbs);
    }
}

/// A reader that stops early (`hloc fuse big.hlo | head`) ends the command quietly: status
/// 0 and no panic message, however much output was still to come.
#[test]
fn a_closed_stdout_pipe_ends_the_command_quietly() {
    use std::io::Read;
    let mut text = String::from("HloModule wide\n\nENTRY main {\n  %a0 = f32[8] parameter(0)\n");
    for i in 1..3000 {
        text.push_str(&format!(
            "  %a{i} = f32[8] add(f32[8] %a{}, f32[8] %a0)\n",
            i - 1
        ));
    }
    text.push_str("  ROOT %out = f32[8] negate(f32[8] %a2999)\n}\n");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("closed_pipe.hlo");
    std::fs::write(&path, text).expect("write module");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .arg("fuse")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hloc runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let out = child.wait_with_output().expect("hloc ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(
        out.status.success(),
        "status {:?}, stderr: {stderr}",
        out.status
    );
}
