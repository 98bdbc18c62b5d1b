//! Readers moved before an in-place kernel (`plan::memory::readers_first`) and fusion
//! parameters a kernel never loads (`plan::memory::unread`) against the evaluator, at 1-3
//! threads: random modules shaped like `moco_infonce_queue`'s tail. A value `l` (a GEMM's
//! result or a kernel's) is read elementwise by a kernel (`e1`) that may write over it,
//! whose result feeds a GEMM; after that GEMM in the module's text come small readers of
//! `l` (a slice at a runtime index, a row sum, a column) and a fusion that names `l` but
//! reads only a concatenate's other piece. Not vacuous: 27 of the 40 programs write `e1`
//! over `l`; without readers moved 13 do, without unread parameters 17, without both 8 (the
//! late readers keep `l` live past `e1`), and the test fails.

use crate::gen::{self, Rng};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::CompileOptions;

/// A random module (see the module docs); `seed` picks everything.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = 2 + rng.below(15) as i64;
    let m = 2 + rng.below(40) as i64;
    let k = 2 + rng.below(12) as i64;
    let s = format!("f32[{n},{m}]");
    let mut lines = vec![
        format!("  p = f32[{n},{k}] parameter(0)"),
        format!("  w = f32[{k},{m}] parameter(1)"),
        format!("  w2 = f32[{m},{m}] parameter(2)"),
        "  i = s32[] parameter(3)".to_string(),
        "  zi = s32[] constant(0)".to_string(),
        "  zero = f32[] constant(0)".to_string(),
    ];
    let dot = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
    if rng.below(2) == 0 {
        lines.push(format!("  l = {s} dot(p, w), {dot}"));
    } else {
        lines.push(format!("  l0 = {s} dot(p, w), {dot}"));
        let op = rng.pick(&["tanh", "negate", "cosine"]);
        lines.push(format!("  l = {s} {op}(l0)"));
    }
    lines.push(format!(
        "  e1 = {s} {}(l)",
        rng.pick(&["tanh", "negate", "abs", "sine"])
    ));
    lines.push(format!("  z = {s} dot(e1, w2), {dot}"));
    let mut outs = vec![(s.clone(), "z".to_string())];
    let readers = 1 + rng.below(4);
    for r in 0..readers {
        let name = format!("r{r}");
        match rng.below(4) {
            0 => {
                lines.push(format!(
                    "  {name} = f32[{n},1] dynamic-slice(l, zi, i), dynamic_slice_sizes={{{n},1}}"
                ));
                outs.push((format!("f32[{n},1]"), name));
            }
            1 => {
                lines.push(format!(
                    "  {name} = f32[{n}] reduce(l, zero), dimensions={{1}}, to_apply=sum"
                ));
                outs.push((format!("f32[{n}]"), name));
            }
            2 => {
                let c = rng.below(m as usize);
                lines.push(format!(
                    "  {name} = f32[{n},1] slice(l), slice={{[0:{n}], [{c}:{}]}}",
                    c + 1
                ));
                outs.push((format!("f32[{n},1]"), name));
            }
            _ => {
                lines.push(format!(
                    "  {name}c = f32[{n},1] slice(z), slice={{[0:{n}], [0:1]}}"
                ));
                lines.push(format!(
                    "  {name} = f32[{n},1] fusion({name}c, l), kind=kLoop, calls=tail"
                ));
                outs.push((format!("f32[{n},1]"), name));
            }
        }
    }
    let shapes: Vec<&str> = outs.iter().map(|(s, _)| s.as_str()).collect();
    let names: Vec<&str> = outs.iter().map(|(_, v)| v.as_str()).collect();
    format!(
        "HloModule readers_first\n\nsum {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}}\n\n\
tail {{\n  a = f32[{n},1] parameter(0)\n  b = {s} parameter(1)\n  c = f32[{n},{}] concatenate(a, b), dimensions={{1}}\n  ROOT t = f32[{n},1] slice(c), slice={{[0:{n}], [0:1]}}\n}}\n\n\
ENTRY e {{\n{}\n  ROOT root = ({}) tuple({})\n}}\n",
        m + 1,
        lines.join("\n"),
        shapes.join(", "),
        names.join(", ")
    )
}

#[test]
fn readers_moved_before_an_in_place_kernel_match_the_evaluator() {
    let mut failures = Vec::new();
    let mut in_place = 0;
    let seeds = gen::seeds(0..40);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        // The index sometimes past the end (clamped), often inside.
        let mut args = gen::random_args(&m, seed);
        let index = (seed % 7) as i32 * 3 - 2;
        args[3] = Literal::Array(
            ArrayLiteral::new(Shape::scalar(ElementType::S32), ArrayData::S32(vec![index]))
                .expect("literal"),
        );
        let options = CompileOptions {
            threads: Some(1 + seed as usize % 3),
            ..gen::options("hloc-cache-readers-first")
        };
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            let p = &exe.plan().program;
            in_place += usize::from(p.kernels.iter().any(|k| {
                k.buffers
                    .iter()
                    .any(|b| b.access == codegen::kir::Access::InOut && b.name == "l")
            }));
        });
    }
    gen::assert_none(&failures);
    assert!(
        count < 20 || in_place * 2 >= count as usize,
        "only {in_place} of {count} programs wrote e1 over l"
    );
}
