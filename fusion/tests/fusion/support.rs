//! What the tests share: evaluating a module before and after fusion on the same random
//! arguments, and checking that the explain report covers the fused module.

use std::collections::HashSet;

use hlo::{Literal, Module};
use hlo_eval::{random::random_literal, tolerance};

/// The outcome of comparing results before and after.
pub enum Compared {
    /// Equal within the evaluator's tolerance.
    Same,
    /// The original cannot be evaluated (e.g. a custom call), with the reason.
    NotEvaluable(#[allow(dead_code)] String),
}

/// Random arguments for the entry of `module` (seed 1, as the pass tests use).
pub fn random_args(module: &Module) -> Result<Vec<Literal>, String> {
    let entry = module.entry();
    entry
        .parameters()
        .iter()
        .enumerate()
        .map(|(n, &id)| random_literal(entry.instr(id).shape(), 1, n as u64, 1 << 24))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// Evaluates both modules on `args`; `Err` when the results differ or the fused one
/// fails where the original ran.
pub fn compare_on(before: &Module, after: &Module, args: &[Literal]) -> Result<Compared, String> {
    let want = match hlo_eval::evaluate(before, args) {
        Ok(w) => w,
        Err(e) => return Ok(Compared::NotEvaluable(e.to_string())),
    };
    match hlo_eval::evaluate(after, args) {
        Ok(got) if tolerance::literals_match(&got, &want) => Ok(Compared::Same),
        Ok(got) => Err(format!("results differ: {got:?} vs {want:?}")),
        Err(e) => Err(format!("the fused module no longer evaluates: {e}")),
    }
}

/// [`compare_on`] with random arguments.
pub fn compare(before: &Module, after: &Module) -> Result<Compared, String> {
    match random_args(before) {
        Ok(args) => compare_on(before, after, &args),
        Err(e) => Ok(Compared::NotEvaluable(e)),
    }
}

/// Checks that `report` has a record for every fusion and every kernel -> kernel edge of
/// the computations ENTRY runs, and nothing else.
pub fn check_report_covers(module: &Module, report: &fusion::FusionReport) -> Result<(), String> {
    let fusions: HashSet<&str> = report.fusions().map(|f| f.fusion.as_str()).collect();
    let edges: HashSet<(&str, &str)> = report
        .edges()
        .map(|e| (e.producer.as_str(), e.consumer.as_str()))
        .collect();
    let mut want_fusions = 0;
    let mut want_edges = 0;
    for cid in fusion::control_flow_computations(module) {
        let c = module.computation(cid);
        for (_, i) in c.instructions() {
            if i.opcode() == hlo::Opcode::Fusion {
                want_fusions += 1;
                if !fusions.contains(i.name()) {
                    return Err(format!("no record for fusion `{}`", i.name()));
                }
            }
            if fusion::ops::is_bookkeeping(i.opcode()) {
                continue;
            }
            let mut seen = HashSet::new();
            for &p in i.operands() {
                let pi = c.instr(p);
                if fusion::ops::is_bookkeeping(pi.opcode()) || !seen.insert(p) {
                    continue;
                }
                want_edges += 1;
                if !edges.contains(&(pi.name(), i.name())) {
                    return Err(format!("no record for edge {} -> {}", pi.name(), i.name()));
                }
            }
        }
    }
    if fusions.len() != want_fusions || edges.len() != want_edges {
        return Err(format!(
            "{} fusion and {} edge records for {want_fusions} fusions and {want_edges} edges",
            fusions.len(),
            edges.len()
        ));
    }
    Ok(())
}
