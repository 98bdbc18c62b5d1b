//! Graph export text tests: every `tests/graph/*.hlo` is parsed and written as JSON and as
//! dot; the outputs must equal the `.json` and `.dot` files beside it (`UPDATE_EXPECT=1`
//! rewrites them). The JSON is also checked to be well formed and consistent.

use std::fs;
use std::path::Path;

use hlo::graph::{to_dot, to_json, Graph};
use hlo::parse_module;

#[test]
fn graph_text_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graph");
    let mut files: Vec<_> = fs::read_dir(&root)
        .expect("tests/graph")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let bless = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for path in &files {
        let text = fs::read_to_string(path).expect("read");
        let module = parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let g = Graph::of_module(&module);
        for (ext, actual) in [("json", to_json(&g)), ("dot", to_dot(&g))] {
            let expected_path = path.with_extension(ext);
            if bless {
                fs::write(&expected_path, &actual).expect("write");
                continue;
            }
            match fs::read_to_string(&expected_path) {
                Ok(e) if e == actual => {}
                Ok(e) => failures.push(format!(
                    "{}:\n--- expected\n{e}--- actual\n{actual}",
                    expected_path.display()
                )),
                Err(_) => failures.push(format!("{}: missing", expected_path.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn edges_and_clusters_are_consistent_on_the_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/mlp_train_step");
    let Ok(text) = fs::read_to_string(dir.join("after_optimizations.hlo")) else {
        panic!("corpus/mlp_train_step is missing");
    };
    let m = parse_module(&text).expect("parse");
    let g = Graph::of_module(&m);
    let instrs: usize = m.computations().map(|(_, c)| c.instruction_count()).sum();
    let operands: usize = m
        .computations()
        .flat_map(|(_, c)| c.instructions().map(|(_, i)| i.operands().len()))
        .sum();
    assert_eq!(g.nodes.len(), instrs);
    assert_eq!(g.edges.len(), operands);
    for e in &g.edges {
        assert_eq!(g.nodes[e.from].computation, g.nodes[e.to].computation);
    }
    for (i, c) in g.clusters.iter().enumerate() {
        assert_eq!(c.parent.is_none(), c.callers.is_empty() || i == g.entry, "{}", c.name);
    }
    let json = to_json(&g);
    assert_eq!(json.matches('{').count(), json.matches('}').count());
}
