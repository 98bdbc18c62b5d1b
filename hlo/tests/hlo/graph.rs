//! Graph export text tests: every case of `tests/graph/graph.test` (testkit's format) is
//! parsed and written as JSON or dot (its `# format:` header); the output must equal the
//! expected part (`UPDATE_EXPECT=1` blesses). The JSON is also checked to be well formed
//! and consistent on a corpus program.

use std::fs;
use std::path::Path;

use hlo::graph::{to_dot, to_json, Graph};
use hlo::parse_module;
use testkit::golden;

#[test]
fn graph_text_files() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graph/graph.test");
    golden::check_file(&path, |case| {
        let module = parse_module(&case.input).unwrap_or_else(|e| panic!("{}: {e}", case.title));
        let g = Graph::of_module(&module);
        match case.header_value("format") {
            Some("json") => to_json(&g),
            Some("dot") => to_dot(&g),
            other => panic!("{}: unknown format {other:?}", case.title),
        }
    });
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
        assert_eq!(
            c.parent.is_none(),
            c.callers.is_empty() || i == g.entry,
            "{}",
            c.name
        );
    }
    check_json(&g, &to_json(&g));
}

/// The JSON parses (with an independent parser) and says what the graph holds.
fn check_json(g: &Graph, json: &str) {
    let v: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
    assert_eq!(v["schema"], "hloc-graph-1");
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(g.nodes.len()));
    assert_eq!(v["edges"].as_array().map(Vec::len), Some(g.edges.len()));
    let comps = v["computations"].as_array().expect("computations");
    assert_eq!(comps.len(), g.clusters.len());
    for (i, n) in g.nodes.iter().enumerate() {
        assert_eq!(v["nodes"][i]["name"], n.name.as_str());
        assert_eq!(v["nodes"][i]["shape"], n.shape.as_str());
    }
}

#[test]
fn json_parses_for_every_corpus_module() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut n = 0;
    for d in fs::read_dir(&dir).expect("corpus").flatten() {
        let p = d.path().join("before_optimizations.hlo");
        if let Ok(text) = fs::read_to_string(&p) {
            let m = parse_module(&text).expect("parse");
            let g = Graph::of_module(&m);
            check_json(&g, &to_json(&g));
            n += 1;
        }
    }
    assert!(n > 30, "only {n} corpus modules");
}

/// When Graphviz is installed, every dot file it is given renders without a warning.
#[test]
fn graphviz_accepts_the_dot_output() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    if Command::new("dot").arg("-V").output().is_err() {
        println!("graphviz `dot` not installed: rendering not checked");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = fs::read_dir(dir.join("tests/graph"))
        .expect("tests/graph")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .collect();
    files.push(dir.join("../corpus/attention/after_optimizations.hlo"));
    files.push(dir.join("../corpus/scan_cumulative/before_optimizations.hlo"));
    for path in &files {
        let text = fs::read_to_string(path).expect("read");
        let dot = to_dot(&Graph::of_module(&parse_module(&text).expect("parse")));
        let mut child = Command::new("dot")
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dot runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(dot.as_bytes())
            .expect("write dot");
        let out = child.wait_with_output().expect("dot finishes");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "{}: dot rejected the graph: {stderr}",
            path.display()
        );
    }
}
