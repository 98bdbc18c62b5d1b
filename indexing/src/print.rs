//! The text forms `hloc indexing` prints (a contract other tools parse):
//!
//! ```text
//! operand id = 0
//!   (d0, d1) -> (d1, d0), domain: d0 in [0, 9], d1 in [0, 19]
//!   (d0, d1){rt0} -> (d0 + min(max(rt0, 0), 5), d1), domain: ...
//!   runtime variables:
//!     rt0: offset; (d0, d1){rt0} -> (), domain: ...
//! operand id = 1
//!   unknown indexing: <reason>
//! ```
//! An operand section holds its maps (a set, one per line, in text order), nothing when the
//! operand is not read, or `unknown indexing: <reason>`. A map with runtime variables is
//! followed by `runtime variables:` and one `rtK: <producer>; <map>` line per variable (the
//! map goes from the same variables to the producer's element). Several outputs: the
//! sections are grouped under `output id = K` headers, indented by two more spaces.
//!
//! Producer-consumer maps ([`format_values`]) use `instr = NAME` sections instead of
//! `operand id = N`.

use std::fmt::Write;

use crate::{GroupedIndexing, OperandIndexing, ValueMaps};

/// The lines of one set of maps, each indented by `indent`.
pub fn format_operand(set: &OperandIndexing, indent: &str) -> String {
    let mut s = String::new();
    match set {
        OperandIndexing::Undefined(r) => {
            let _ = writeln!(s, "{indent}unknown indexing: {r}");
        }
        OperandIndexing::Maps(_) => {
            for m in set.maps() {
                let _ = writeln!(s, "{indent}{}", m.map);
                if !m.runtime.is_empty() {
                    let _ = writeln!(s, "{indent}runtime variables:");
                    for (k, rv) in m.runtime.iter().enumerate() {
                        let _ = writeln!(s, "{indent}  rt{k}: {}; {}", rv.producer_name, rv.map);
                    }
                }
            }
        }
    }
    s
}

/// Output-to-input maps: `operand id = N` sections, under `output id = K` headers when
/// there are several outputs.
pub fn format_grouped(outputs: &[GroupedIndexing]) -> String {
    let mut s = String::new();
    let multi = outputs.len() > 1;
    for (k, g) in outputs.iter().enumerate() {
        let pad = if multi {
            let _ = writeln!(s, "output id = {k}");
            "  "
        } else {
            ""
        };
        for (i, set) in g.operands.iter().enumerate() {
            let _ = writeln!(s, "{pad}operand id = {i}");
            s.push_str(&format_operand(set, &format!("{pad}  ")));
        }
    }
    s
}

/// Input-to-output maps of one operand: `output id = K` sections.
pub fn format_in_to_out(outputs: &[OperandIndexing]) -> String {
    let mut s = String::new();
    for (k, set) in outputs.iter().enumerate() {
        let _ = writeln!(s, "output id = {k}");
        s.push_str(&format_operand(set, "  "));
    }
    s
}

/// Formats the producer-consumer maps: `instr = NAME` sections (`instr = NAME output K` for
/// output K > 0 of a tuple-shaped instruction), each holding its maps as in
/// [`format_grouped`]; several consumer outputs are grouped under `output id = K`.
pub fn format_values(outputs: &[ValueMaps]) -> String {
    let mut s = String::new();
    let multi = outputs.len() > 1;
    for (k, vm) in outputs.iter().enumerate() {
        let pad = if multi {
            let _ = writeln!(s, "output id = {k}");
            "  "
        } else {
            ""
        };
        for (name, kk, set) in &vm.values {
            if *kk > 0 {
                let _ = writeln!(s, "{pad}instr = {name} output {kk}");
            } else {
                let _ = writeln!(s, "{pad}instr = {name}");
            }
            s.push_str(&format_operand(set, &format!("{pad}  ")));
        }
    }
    s
}
