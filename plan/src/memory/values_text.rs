//! The text dump of a module's dataflow values: one line per value (definition, size,
//! whether it is a phi and of what, live-out), its positions and uses, then the pairs that
//! may share a buffer. Compiler tests compare it with blessed text.

use std::fmt::Write;

use hlo::Module;

use super::values::{Dataflow, Position, ShareReason};

fn index_text(index: &[i64]) -> String {
    let parts: Vec<String> = index.iter().map(i64::to_string).collect();
    format!("{{{}}}", parts.join(","))
}

fn position_text(module: &Module, p: &Position) -> String {
    let name = module.computation(p.comp).instr(p.instr).name();
    format!("{name}{}", index_text(&p.index))
}

/// `flow` as text, naming instructions of `module`.
pub fn values_text(module: &Module, flow: &Dataflow) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "values of {}: {}", module.name(), flow.values.len());
    for (id, v) in flow.values.iter().enumerate() {
        let mut head = format!(
            "%{id} = {} {} bytes",
            position_text(module, &v.def),
            v.bytes
        );
        if v.phi {
            let inputs: Vec<String> = flow
                .phi_inputs
                .get(&id)
                .map(|s| s.iter().map(|i| format!("%{i}")).collect())
                .unwrap_or_default();
            let _ = write!(head, " phi({})", inputs.join(", "));
        }
        if v.live_out {
            head.push_str(" live-out");
        }
        let _ = writeln!(out, "{head}");
        let positions: Vec<String> = v
            .positions
            .iter()
            .filter(|p| **p != v.def)
            .map(|p| position_text(module, p))
            .collect();
        if !positions.is_empty() {
            let _ = writeln!(out, "  positions: {}", positions.join(", "));
        }
        let uses: Vec<String> = v
            .uses
            .iter()
            .map(|u| {
                let name = module.computation(u.comp).instr(u.instr).name();
                format!("{name}.{}{}", u.operand, index_text(&u.index))
            })
            .collect();
        if !uses.is_empty() {
            let _ = writeln!(out, "  uses: {}", uses.join(", "));
        }
    }
    if !flow.shares.is_empty() {
        let _ = writeln!(out, "may share:");
        for s in &flow.shares {
            let why = match s.reason {
                ShareReason::InPlace => "in-place",
                ShareReason::OperandAliasing => "output_to_operand_aliasing",
                ShareReason::Donated => "input_output_alias",
            };
            let _ = writeln!(out, "  %{} over %{} ({why})", s.output, s.operand);
        }
    }
    out
}
