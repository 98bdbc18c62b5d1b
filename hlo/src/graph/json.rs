//! The JSON writer (schema in the module docs): serde_json writes every value; the layout
//! (one computation, node or edge per line, in a fixed order) is ours, so that a diff of
//! two graphs reads line by line.

use serde::Serialize;
use serde_json::{json, Value};

use super::Graph;

/// serde_json's compact output with a space after `:` and after `,` between object
/// members (`{"id": 0, "name": "x"}`), as the schema's examples read.
struct OneLine;

impl serde_json::ser::Formatter for OneLine {
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// One JSON value on one line. Serializing plain strings, numbers and vectors into memory
/// cannot fail; `null` stands in if it ever did.
fn compact<T: Serialize>(v: &T) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, OneLine);
    match v.serialize(&mut ser) {
        Ok(()) => String::from_utf8(buf).unwrap_or_else(|_| "null".to_string()),
        Err(_) => "null".to_string(),
    }
}

/// A bracketed list of already-serialized items, one per line.
fn lines(out: &mut String, items: impl Iterator<Item = Value>) {
    out.push('[');
    let mut first = true;
    for item in items {
        out.push_str(if first { "\n  " } else { ",\n  " });
        out.push_str(&compact(&item));
        first = false;
    }
    out.push_str("\n]");
}

/// The graph as JSON: one computation, node or edge per line, in a fixed order.
pub fn to_json(g: &Graph) -> String {
    let mut out = String::with_capacity(128 * (g.nodes.len() + g.edges.len() + 4));
    out.push_str("{\n\"schema\": \"hloc-graph-1\",\n\"module\": ");
    out.push_str(&compact(&g.module));
    out.push_str(&format!(",\n\"entry\": {},\n\"computations\": ", g.entry));
    lines(
        &mut out,
        g.clusters.iter().enumerate().map(|(i, c)| {
            json!({
                "index": i,
                "name": c.name,
                "parent": c.parent,
                "callers": c.callers,
                "root": (c.root != usize::MAX).then_some(c.root),
                "nodes": c.nodes,
            })
        }),
    );
    out.push_str(",\n\"nodes\": ");
    lines(
        &mut out,
        g.nodes.iter().enumerate().map(|(i, n)| {
            json!({
                "id": i,
                "computation": n.computation,
                "name": n.name,
                "opcode": n.opcode,
                "shape": n.shape,
                "op_name": n.op_name,
                "source": n.source,
                "calls": n.calls,
            })
        }),
    );
    out.push_str(",\n\"edges\": ");
    lines(
        &mut out,
        g.edges
            .iter()
            .map(|e| json!({"from": e.from, "to": e.to, "operand": e.operand})),
    );
    out.push_str("\n}\n");
    out
}
