//! Which parts of [`super::VECMATH`] a translation unit needs: a unit whose kernels call
//! only `exp` gets the shared helpers and the exp/log part, not `pow`, `atan2`, `erf`,
//! `cbrt` and the trigonometric functions. Parsing the whole text cost gcc 12 about 2.5 ms
//! per unit (a unit of the prelude alone: 14.5 ms without it, 16.7-17.4 ms with it, best
//! of 15), on every compiler process of a module with vector math.
//!
//! A part is needed when a kernel calls a function it defines, when a chosen trigonometric
//! entry line names something it defines, or when a needed later part refers to something
//! it defines (C defines before use, so a part refers only to earlier ones; what a part
//! defines is each `hloc_`/`HLOC_` name whose first appearance, comments aside, is in it).
//! The shared helpers are always there: the printer marks kernels with their
//! `HLOC_VM_WIDE`. A function the units do not call is `static`, so its code was never
//! emitted: the units compile to the same code without it.

use std::collections::HashSet;
use std::sync::OnceLock;

/// The parts of [`super::VECMATH`] before the trigonometric entry lines, in its order.
pub(super) fn parts() -> [&'static str; 7] {
    [
        super::common::common_c!(),
        super::exp_log::exp_log_c!(),
        super::erf::erf_c!(),
        super::trig::trig_c!(),
        super::atan2::atan2_c!(),
        super::cbrt::cbrt_c!(),
        super::pow::pow_c!(),
    ]
}

/// Per part: the names it defines (first appearances) and the earlier parts it refers to.
struct Graph {
    defines: Vec<Vec<&'static str>>,
    refers_to: Vec<Vec<usize>>,
}

/// The `hloc_`/`HLOC_` names of C text `c`, comments left out.
fn names(c: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = c;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |e| &r[e + 2..]);
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |e| &r[e..]);
        } else if rest.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_') {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            if word.starts_with("hloc_") || word.starts_with("HLOC_") {
                out.push(word);
            }
            rest = &rest[end..];
        } else {
            let ch = rest.chars().next().map_or(1, char::len_utf8);
            rest = &rest[ch..];
        }
    }
    out
}

fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let mut defined_in: std::collections::HashMap<&'static str, usize> = Default::default();
        let mut defines = Vec::new();
        let mut refers_to = Vec::new();
        for (i, part) in parts().iter().enumerate() {
            let mut own = Vec::new();
            let mut earlier: HashSet<usize> = HashSet::new();
            for name in names(part) {
                match defined_in.get(name) {
                    Some(&j) if j != i => {
                        earlier.insert(j);
                    }
                    Some(_) => {}
                    None => {
                        defined_in.insert(name, i);
                        own.push(name);
                    }
                }
            }
            defines.push(own);
            let mut earlier: Vec<usize> = earlier.into_iter().collect();
            earlier.sort_unstable();
            refers_to.push(earlier);
        }
        Graph { defines, refers_to }
    })
}

/// The parts of [`super::VECMATH`] (without the trigonometric entry lines) a unit needs
/// whose kernels call the functions for which `calls(name)` holds and which gets the
/// entry lines `entries`, concatenated in order.
pub(super) fn needed_text(calls: &dyn Fn(&str) -> bool, entries: &str) -> String {
    let g = graph();
    let parts = parts();
    let in_entries: HashSet<&str> = names(entries).into_iter().collect();
    let mut need = vec![false; parts.len()];
    need[0] = true;
    for (i, own) in g.defines.iter().enumerate() {
        need[i] |= own.iter().any(|name| {
            in_entries.contains(name)
                || (name.starts_with("hloc_v") && !name.starts_with("hloc_vm_") && calls(name))
        });
    }
    for i in (0..parts.len()).rev() {
        if need[i] {
            for &j in &g.refers_to[i] {
                need[j] = true;
            }
        }
    }
    parts
        .iter()
        .zip(&need)
        .filter(|(_, n)| **n)
        .map(|(p, _)| *p)
        .collect()
}
