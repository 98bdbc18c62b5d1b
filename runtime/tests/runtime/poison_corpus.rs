//! The corpus in the poison mode (issue 32, "Done when": the corpus passes in poison
//! mode): every corpus file that compiles runs with `backend_cpu::check_buffers` on (its
//! temporaries and outputs start as NaN, a thunk that changes a live value it does not
//! write fails the run, dead values' bytes are poisoned again after their last reader),
//! and its outputs must still match the reference evaluator.

use std::path::Path;

use runtime::{CompileOptions, RuntimeError};

use crate::corpus::{inputs, program_dirs};

#[test]
fn corpus_programs_pass_in_poison_mode() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache")),
        ..CompileOptions::default()
    };
    let only = std::env::var("HLOC_CORPUS_ONLY").ok();
    let (mut checked, mut failures) = (0, Vec::new());
    for dir in program_dirs() {
        for file in ["before_optimizations.hlo", "after_optimizations.hlo"] {
            let name = format!(
                "{}/{file}",
                dir.file_name().unwrap_or_default().to_string_lossy()
            );
            if only.as_deref().is_some_and(|o| !name.contains(o)) {
                continue;
            }
            let text = std::fs::read_to_string(dir.join(file)).expect("read");
            let module = hlo::parse_module(&text).expect("parse");
            let args = inputs(&module, &dir);
            let exe = match runtime::compile(&module, &options) {
                Ok(e) => e,
                // The plain corpus test lists and counts these.
                Err(RuntimeError::Codegen(e)) if e.unsupported_op().is_some() => continue,
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            match backend_cpu::check_buffers::with_checks(|| exe.run(&args)) {
                Ok(outs) => match runtime::check_reference(&module, &args, &outs) {
                    Ok(()) => checked += 1,
                    Err(e) => failures.push(format!("{name}: {e}")),
                },
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    println!("{checked} corpus files pass in poison mode");
    assert!(
        failures.is_empty(),
        "{} failure(s) in poison mode:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(only.is_some() || checked > 0, "no corpus file ran");
}

/// Two products live together, then a third of them: `a` and `b` share no byte.
const TWO_LIVE: &str = "HloModule two_live

ENTRY e {
  p = f32[32,32] parameter(0)
  q = f32[32,32] parameter(1)
  a = f32[32,32] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[32,32] dot(q, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT c = f32[32,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
";

/// `TWO_LIVE` planned, the program changed by `corrupt`, compiled and run in poison
/// mode on random arguments; also returns what `corrupt` says and the arguments.
fn run_corrupted(
    corrupt: impl FnOnce(&mut plan::Program) -> String,
) -> (
    String,
    Result<Vec<hlo::Literal>, RuntimeError>,
    Vec<hlo::Literal>,
) {
    let module = hlo::parse_module(TWO_LIVE).expect("parse");
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache")),
        ..CompileOptions::default()
    };
    let mut planned = runtime::plan(&module, &options).expect("plans");
    let what = corrupt(std::sync::Arc::make_mut(&mut planned.program));
    let exe =
        runtime::compile_plan(planned, &options, std::time::Instant::now()).expect("compiles");
    let args = crate::gen::random_args(&module, 5);
    (
        what,
        backend_cpu::check_buffers::with_checks(|| exe.run(&args)),
        args,
    )
}

/// The temporaries of `p` that hold a value: written by an entry thunk, read later.
fn temps(p: &plan::Program) -> Vec<usize> {
    (0..p.buffers.len())
        .filter(|&b| {
            let buf = &p.buffers[b];
            matches!(
                p.allocations[buf.allocation].kind,
                plan::AllocationKind::Temp
            ) && buf.defined_at.is_some()
                && buf
                    .last_use
                    .is_some_and(|l| l != usize::MAX && Some(l) > buf.defined_at)
        })
        .collect()
}

#[test]
fn a_value_written_over_a_live_one_fails_in_poison_mode() {
    let (victim, ran, _) = run_corrupted(|p| {
        let t = temps(p);
        let (x, y) = t
            .iter()
            .flat_map(|&x| t.iter().map(move |&y| (x, y)))
            .find(|&(x, y)| {
                let (bx, by) = (&p.buffers[x], &p.buffers[y]);
                bx.defined_at < by.defined_at
                    && by.defined_at <= bx.last_use
                    && by.bytes <= bx.bytes
            })
            .expect("two temporaries live together");
        p.buffers[y].allocation = p.buffers[x].allocation;
        p.buffers[x].name.clone()
    });
    let err = ran.expect_err("the overlap is caught").to_string();
    assert!(
        err.contains("HLOC_CHECK_BUFFERS") && err.contains(&format!("%{victim} ")),
        "{err}"
    );
}

#[test]
fn a_value_read_after_its_last_use_reads_poison() {
    let (_, ran, args) = run_corrupted(|p| {
        let x = temps(p)[0];
        p.buffers[x].last_use = p.buffers[x].defined_at;
        p.buffers[x].name.clone()
    });
    let outs = ran.expect("runs");
    let module = hlo::parse_module(TWO_LIVE).expect("parse");
    assert!(
        runtime::check_reference(&module, &args, &outs).is_err(),
        "a product of a poisoned operand matched the evaluator"
    );
}

#[test]
fn the_two_products_pass_in_poison_mode_as_planned() {
    let (_, ran, args) = run_corrupted(|_| String::new());
    let module = hlo::parse_module(TWO_LIVE).expect("parse");
    runtime::check_reference(&module, &args, &ran.expect("runs")).expect("matches");
}
