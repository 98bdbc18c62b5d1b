//! The JSON writer (schema in the module docs).

use std::fmt::Write as _;

use super::Graph;

/// A JSON string literal.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn opt_string(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => string(out, s),
        None => out.push_str("null"),
    }
}

fn list(out: &mut String, v: &[usize]) {
    out.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{x}");
    }
    out.push(']');
}

/// The graph as JSON: one computation, node or edge per line, in a fixed order.
pub fn to_json(g: &Graph) -> String {
    let mut out = String::with_capacity(128 * (g.nodes.len() + g.edges.len() + 4));
    out.push_str("{\n\"schema\": \"hloc-graph-1\",\n\"module\": ");
    string(&mut out, &g.module);
    let _ = write!(out, ",\n\"entry\": {},\n\"computations\": [", g.entry);
    for (i, c) in g.clusters.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        let _ = write!(out, "  {{\"index\": {i}, \"name\": ");
        string(&mut out, &c.name);
        out.push_str(", \"parent\": ");
        match c.parent {
            Some(p) => {
                let _ = write!(out, "{p}");
            }
            None => out.push_str("null"),
        }
        out.push_str(", \"callers\": ");
        list(&mut out, &c.callers);
        let _ = write!(out, ", \"root\": {}, \"nodes\": ", c.root);
        list(&mut out, &c.nodes);
        out.push('}');
    }
    out.push_str("\n],\n\"nodes\": [");
    for (i, n) in g.nodes.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        let _ = write!(
            out,
            "  {{\"id\": {i}, \"computation\": {}, \"name\": ",
            n.computation
        );
        string(&mut out, &n.name);
        out.push_str(", \"opcode\": ");
        string(&mut out, n.opcode);
        out.push_str(", \"shape\": ");
        string(&mut out, &n.shape);
        out.push_str(", \"op_name\": ");
        opt_string(&mut out, n.op_name.as_deref());
        out.push_str(", \"source\": ");
        opt_string(&mut out, n.source.as_deref());
        out.push_str(", \"calls\": ");
        list(&mut out, &n.calls);
        out.push('}');
    }
    out.push_str("\n],\n\"edges\": [");
    for (i, e) in g.edges.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        let _ = write!(
            out,
            "  {{\"from\": {}, \"to\": {}, \"operand\": {}}}",
            e.from, e.to, e.operand
        );
    }
    out.push_str("\n]\n}\n");
    out
}
