//! Text tests of every pass: each `passes/<pass>/*.hlo` file holds cases, an input module
//! and the module expected after running the pass (blank lines of printed modules are
//! dropped, since blank lines separate cases). A `# passes: a,b` header runs those passes
//! instead of the directory's; `# fixed-point` repeats them until nothing changes. An
//! error prints as `error: <message>`. After every pass the module must print and parse
//! back. Bless with `UPDATE_EXPECT=1`.

#[path = "../../affine/tests/support/golden.rs"]
mod golden;

use std::path::Path;

use hlo::pass::{FixedPoint, Pass, PassContext};

fn strip_blank_lines(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_case(dir_pass: &str, case: &golden::Case) -> String {
    let mut module = match hlo::parse_module(&case.input) {
        Ok(m) => m,
        Err(e) => panic!("line {}: input does not parse: {e}", case.line),
    };
    let list = case.header_value("passes").unwrap_or(dir_pass);
    let pipeline = hlo::transforms::pipeline_from_list("test", list)
        .unwrap_or_else(|e| panic!("line {}: {e}", case.line));
    let mut ctx = PassContext::new();
    ctx.set_verifier(Box::new(|m: &hlo::Module| {
        let text = hlo::print_module(m);
        hlo::parse_module(&text)
            .map(|_| ())
            .map_err(|e| format!("printed module does not parse back: {e}\n{text}"))
    }));
    let result = if case.has_header("fixed-point") {
        FixedPoint::new(pipeline).run_in(&mut module, &mut ctx)
    } else {
        let mut p = pipeline;
        p.run_in(&mut module, &mut ctx)
    };
    match result {
        Ok(_) => strip_blank_lines(&hlo::print_module(&module)),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn pass_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/passes exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    for dir in dirs {
        let pass = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 directory name")
            .to_string();
        assert!(
            hlo::transforms::pass_by_name(&pass).is_some(),
            "tests/passes/{pass}: no pass of that name"
        );
        for file in golden::files(&dir, "hlo") {
            golden::check_file(&file, |case| run_case(&pass, case));
        }
    }
}
