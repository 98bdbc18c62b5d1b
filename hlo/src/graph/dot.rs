//! The Graphviz writer: `digraph` with `compound=true`, one `subgraph cluster_N` per
//! computation nested like the calls, instructions as boxes labelled name / opcode /
//! shape, operand edges labelled with the operand index, dashed call edges into the
//! callee's cluster.

use std::fmt::Write as _;

use super::Graph;

/// A dot double-quoted string: `"` and `\` escaped, newlines as `\n`.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The graph in Graphviz dot.
pub fn to_dot(g: &Graph) -> String {
    let mut out = String::with_capacity(96 * (g.nodes.len() + g.edges.len() + 4));
    let _ = writeln!(out, "digraph {} {{", quoted(&g.module));
    out.push_str("  compound=true;\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontsize=8];\n");
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); g.clusters.len()];
    for (i, c) in g.clusters.iter().enumerate() {
        if let Some(p) = c.parent {
            children[p].push(i);
        }
    }
    for (i, c) in g.clusters.iter().enumerate() {
        if c.parent.is_none() {
            cluster(g, &children, i, 1, &mut out);
        }
    }
    for e in &g.edges {
        let _ = writeln!(out, "  n{} -> n{} [label=\"{}\"];", e.from, e.to, e.operand);
    }
    for (n, node) in g.nodes.iter().enumerate() {
        for &c in &node.calls {
            let root = g.clusters[c].root;
            if root < g.nodes.len() {
                let _ = writeln!(
                    out,
                    "  n{n} -> n{root} [style=dashed, lhead=cluster_{c}, label=\"calls\"];"
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

fn cluster(g: &Graph, children: &[Vec<usize>], i: usize, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let c = &g.clusters[i];
    let _ = writeln!(out, "{pad}subgraph cluster_{i} {{");
    let label = if i == g.entry {
        format!("ENTRY {}", c.name)
    } else {
        c.name.clone()
    };
    let _ = writeln!(out, "{pad}  label={};", quoted(&label));
    for &n in &c.nodes {
        let node = &g.nodes[n];
        let mut label = format!("{}\n{}\n{}", node.name, node.opcode, node.shape);
        if let Some(op) = &node.op_name {
            label.push('\n');
            label.push_str(op);
        }
        let mut attrs = format!("label={}", quoted(&label));
        if let Some(s) = &node.source {
            let _ = write!(attrs, ", tooltip={}", quoted(s));
        }
        if n == c.root {
            attrs.push_str(", style=bold");
        }
        let _ = writeln!(out, "{pad}  n{n} [{attrs}];");
    }
    for &k in &children[i] {
        cluster(g, children, k, depth + 1, out);
    }
    let _ = writeln!(out, "{pad}}}");
}
