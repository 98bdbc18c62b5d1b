//! Differential test of cache-blocked transposes: shapes whose transposed dimensions span
//! several tiles, every permutation of a rank-3 array, element types of every width,
//! non-default layouts and a fused elementwise consumer, compiled and compared with the
//! reference evaluator.

use std::path::Path;

use hlo::Literal;
use runtime::CompileOptions;

fn check(text: &str, failures: &mut Vec<String>) {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-transposes")),
        ..CompileOptions::default()
    };
    let m = hlo::parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let entry = m.entry();
    let id = entry.parameter(0).expect("parameter");
    let arg = hlo_eval::random::random_literal(entry.instr(id).shape(), 7, 0, 1 << 24)
        .expect("random input");
    let args: Vec<Literal> = vec![arg];
    let result = runtime::compile(&m, &options)
        .map_err(|e| e.to_string())
        .and_then(|exe| exe.run(&args).map_err(|e| e.to_string()))
        .and_then(|outs| runtime::check_reference(&m, &args, &outs));
    if let Err(e) = result {
        failures.push(format!("{e}\n{text}"));
    }
}

#[test]
fn tiled_transposes_match_the_reference_evaluator() {
    let dims = [3i64, 64, 96];
    let perms: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut failures = Vec::new();
    for ty in ["f32", "f16", "s8", "f64"] {
        for (k, perm) in perms.iter().enumerate() {
            let out: Vec<String> = perm.iter().map(|&p| dims[p].to_string()).collect();
            let p: Vec<String> = perm.iter().map(usize::to_string).collect();
            // Alternate the input layout between row-major and column-major.
            let layout = if k % 2 == 0 { "2,1,0" } else { "0,1,2" };
            let text = format!(
                "HloModule m\nENTRY e {{\n  p0 = {ty}[3,64,96]{{{layout}}} parameter(0)\n  t = {ty}[{o}]{{2,1,0}} transpose(p0), dimensions={{{p}}}\n  ROOT n = {ty}[{o}]{{2,1,0}} negate(t)\n}}\n",
                o = out.join(","),
                p = p.join(","),
            );
            check(&text, &mut failures);
        }
    }
    check(
        "HloModule m\nENTRY e {\n  p0 = f32[128,64]{1,0} parameter(0)\n  ROOT t = f32[64,128]{1,0} transpose(p0), dimensions={1,0}\n}\n",
        &mut failures,
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
