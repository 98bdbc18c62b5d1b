//! The dataflow graph of a module: nodes are instructions (name, opcode, shape,
//! metadata `op_name` and source location), edges are operand uses (with the operand
//! index), and computations are clusters, nested under the computation of their first
//! caller. Two writers: [`to_json`] and [`to_dot`]; both are deterministic (module order
//! of computations, text order of instructions, edges by user then operand index).
//!
//! ## JSON schema (`"schema": "hloc-graph-1"`)
//!
//! ```text
//! {
//!   "schema": "hloc-graph-1",
//!   "module": "<module name>",
//!   "entry": <index of the entry computation>,
//!   "computations": [            // module order; index = position
//!     {"index": 0, "name": "...", "parent": <index or null>,
//!      "callers": [<node ids>], "root": <node id or null>, "nodes": [<node ids>]}
//!   ],
//!   "nodes": [                   // computation by computation, text order; id = position
//!     {"id": 0, "computation": <index>, "name": "...", "opcode": "...",
//!      "shape": "<shape with layout>", "op_name": "..." | null,
//!      "source": "file:line" | null, "calls": [<computation indices>]}
//!   ],
//!   "edges": [                   // operand uses, by user then operand index
//!     {"from": <operand node id>, "to": <user node id>, "operand": <index>}
//!   ]
//! }
//! ```
//!
//! `parent` is the computation of the first instruction (in module order) that calls this
//! one, so clusters nest the way the program calls; computations nobody calls (the entry)
//! have `null`. `source` comes from `source_file`/`source_line` metadata or, for new JAX
//! dumps, from the stack frame tables via `stack_frame_id`.

mod dot;
mod json;

pub use dot::to_dot;
pub use json::to_json;

use crate::ir::{CompId, Module};

/// One instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Index of the computation holding it.
    pub computation: usize,
    /// Instruction name.
    pub name: String,
    /// Opcode as spelled in HLO text.
    pub opcode: &'static str,
    /// Result shape in HLO text (with layout, when it has one).
    pub shape: String,
    /// `metadata={op_name=...}`.
    pub op_name: Option<String>,
    /// `file:line` of the instruction's source, when recorded.
    pub source: Option<String>,
    /// Computations it calls (indices).
    pub calls: Vec<usize>,
}

/// An operand use: node `from` is operand `operand` of node `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The operand's node.
    pub from: usize,
    /// The user's node.
    pub to: usize,
    /// Operand index in the user.
    pub operand: usize,
}

/// One computation, a cluster of nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Computation name.
    pub name: String,
    /// The cluster it nests in (the computation of its first caller).
    pub parent: Option<usize>,
    /// Nodes that call it.
    pub callers: Vec<usize>,
    /// Its root node (`usize::MAX`, JSON `null`, when the root is not a live instruction).
    pub root: usize,
    /// Its nodes, in text order.
    pub nodes: Vec<usize>,
}

/// The dataflow graph of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// Module name.
    pub module: String,
    /// Index of the entry computation.
    pub entry: usize,
    /// Computations, in module order.
    pub clusters: Vec<Cluster>,
    /// Instructions, computation by computation.
    pub nodes: Vec<Node>,
    /// Operand uses.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// Builds the graph of `module`. Works on any module, verified or not: operands that
    /// are not live instructions of their computation are left out.
    pub fn of_module(module: &Module) -> Graph {
        let mut clusters = Vec::with_capacity(module.computation_count());
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        // Node id of each (computation, instruction id).
        let mut ids: Vec<Vec<usize>> = Vec::with_capacity(module.computation_count());
        for (_, comp) in module.computations() {
            let mut map = vec![usize::MAX; comp.instrs.len()];
            let mut members = Vec::with_capacity(comp.instruction_count());
            for &id in comp.instruction_ids() {
                if let Some(slot) = map.get_mut(id.index()) {
                    *slot = nodes.len() + members.len();
                    members.push(nodes.len() + members.len());
                }
            }
            let root = map.get(comp.root().index()).copied().unwrap_or(usize::MAX);
            clusters.push(Cluster {
                name: comp.name().to_string(),
                parent: None,
                callers: Vec::new(),
                root,
                nodes: members.clone(),
            });
            for (_, instr) in comp.instructions() {
                nodes.push(Node {
                    computation: clusters.len() - 1,
                    name: instr.name().to_string(),
                    opcode: instr.opcode().as_str(),
                    shape: instr.shape().to_string(),
                    op_name: instr
                        .metadata()
                        .and_then(|m| m.op_name())
                        .map(str::to_string),
                    source: source_of(module, instr),
                    calls: instr
                        .called_computations_iter()
                        .map(CompId::index)
                        .filter(|&c| c < module.computation_count())
                        .collect(),
                });
            }
            ids.push(map);
        }
        for (ci, (_, comp)) in module.computations().enumerate() {
            for (id, instr) in comp.instructions() {
                let to = ids[ci][id.index()];
                for (k, op) in instr.operands().iter().enumerate() {
                    if let Some(&from) = ids[ci].get(op.index()).filter(|&&f| f != usize::MAX) {
                        edges.push(Edge {
                            from,
                            to,
                            operand: k,
                        });
                    }
                }
            }
        }
        for (n, node) in nodes.iter().enumerate() {
            for &c in &node.calls {
                clusters[c].callers.push(n);
                if clusters[c].parent.is_none() && c != node.computation {
                    clusters[c].parent = Some(node.computation);
                }
            }
        }
        let entry = module.entry_id().index();
        clusters[entry].parent = None;
        break_parent_cycles(&mut clusters);
        Graph {
            module: module.name().to_string(),
            entry,
            clusters,
            nodes,
            edges,
        }
    }
}

/// A computation whose parent chain loops (recursive calls, which verified modules do not
/// have) becomes top level, so the nesting is a forest.
fn break_parent_cycles(clusters: &mut [Cluster]) {
    let n = clusters.len();
    for c in 0..n {
        let mut cur = clusters[c].parent;
        let mut steps = 0;
        while let Some(p) = cur {
            if p == c || steps > n {
                clusters[c].parent = None;
                break;
            }
            cur = clusters[p].parent;
            steps += 1;
        }
    }
}

fn source_of(module: &Module, instr: &crate::ir::Instruction) -> Option<String> {
    let m = instr.metadata()?;
    if let Some(file) = m.source_file() {
        return Some(match m.source_line() {
            Some(l) => format!("{file}:{l}"),
            None => file.to_string(),
        });
    }
    let frames = module.stack_frames()?;
    let loc = frames.location(m.stack_frame_id()?)?;
    Some(match loc.line {
        Some(l) => format!("{}:{l}", loc.file),
        None => loc.file.to_string(),
    })
}
