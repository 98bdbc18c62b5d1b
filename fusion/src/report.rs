//! The explain report of a fused module (issue 16 §5): one record per fusion instruction
//! and one per producer -> consumer edge between two kernels that stayed unfused, in ENTRY
//! and the computations it runs through while, conditional and call; as JSON lines or as
//! text.

use std::collections::{HashMap, HashSet};

use hlo::attrs::FusionKind;
use hlo::{CompId, Module, Opcode};
use serde::Serialize;

use crate::decision::{Cost, Decision, Reason};
use crate::ops::{self, OpClass};

/// What the passes remember of their decisions, by the names in the final module.
#[derive(Clone, Debug, Default)]
pub struct FusionLog {
    /// For each fusion instruction created: its members (original names), emitter and
    /// decisions.
    pub fusions: HashMap<String, (Vec<String>, &'static str, Vec<Decision>)>,
    /// For each producer that stayed a kernel of its own: its refusals (priority
    /// fusion's, which names the consumer that blocked it, then later passes' for other
    /// consumers).
    pub refusals: HashMap<String, Vec<Decision>>,
}

impl FusionLog {
    /// Adds a refusal of `decision.producer` (replacing an earlier one for the same
    /// consumer).
    pub fn refuse(&mut self, decision: Decision) {
        let list = self.refusals.entry(decision.producer.clone()).or_default();
        match list.iter_mut().find(|d| d.consumer == decision.consumer) {
            Some(d) => *d = decision,
            None => list.push(decision),
        }
    }

    /// Records that the kernels named `parts` became the fusion `new` by `decisions`:
    /// its members are theirs (or the op itself for a kernel of one op), its decisions
    /// theirs followed by the new ones.
    pub fn merged(
        &mut self,
        parts: &[String],
        new: &str,
        emitter: &'static str,
        decisions: Vec<Decision>,
    ) {
        let mut members = Vec::new();
        let mut all = Vec::new();
        for p in parts {
            match self.fusions.remove(p) {
                Some((m, _, d)) => {
                    members.extend(m);
                    all.extend(d);
                }
                None => members.push(p.clone()),
            }
            self.refusals.remove(p);
        }
        all.extend(decisions);
        self.fusions
            .insert(new.to_string(), (members, emitter, all));
    }
}

/// A fusion instruction of the final module.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FusionRecord {
    /// The fusion instruction's name.
    pub fusion: String,
    /// `loop`, `input`, `output` or `custom`.
    pub kind: String,
    /// The emitter that generates it: `loop`, `reduction`, `transpose`.
    pub emitter: String,
    /// The original instructions fused into it.
    pub members: Vec<String>,
    /// The decisions that built it.
    pub decisions: Vec<Decision>,
}

/// An edge between two kernels that stayed unfused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeRecord {
    /// The producer's name in the final module.
    pub producer: String,
    /// The consumer's name in the final module.
    pub consumer: String,
    /// Always false.
    pub fused: bool,
    /// Why it stayed unfused.
    pub reason: Reason,
    /// The numbers of the refusal (zeros when no cost was needed to decide).
    pub cost: Cost,
    /// What in particular decided it (text report only).
    #[serde(skip)]
    pub detail: Option<String>,
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Record {
    /// A fusion.
    Fusion(FusionRecord),
    /// An unfused edge.
    Edge(EdgeRecord),
}

/// The report of a fused module.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FusionReport {
    /// Records in module order (computation by computation, instruction by instruction).
    pub records: Vec<Record>,
}

/// ENTRY and the computations it runs through while, conditional and call, in order.
pub fn control_flow_computations(module: &Module) -> Vec<CompId> {
    let mut out = vec![module.entry_id()];
    let mut seen: HashSet<CompId> = out.iter().copied().collect();
    let mut i = 0;
    while i < out.len() {
        let c = module.computation(out[i]);
        for (_, instr) in c.instructions() {
            if matches!(
                instr.opcode(),
                Opcode::While | Opcode::Conditional | Opcode::Call
            ) {
                for callee in instr.called_computations_iter() {
                    if callee.index() < module.computation_count() && seen.insert(callee) {
                        out.push(callee);
                    }
                }
            }
        }
        i += 1;
    }
    out
}

fn kind_name(k: Option<FusionKind>) -> &'static str {
    match k {
        Some(FusionKind::Input) => "input",
        Some(FusionKind::Output) => "output",
        Some(FusionKind::Custom) => "custom",
        _ => "loop",
    }
}

impl FusionReport {
    /// The report of `module` from what the passes logged.
    pub fn build(module: &Module, log: &FusionLog) -> FusionReport {
        let mut records = Vec::new();
        for cid in control_flow_computations(module) {
            let c = module.computation(cid);
            for (_, instr) in c.instructions() {
                if instr.opcode() == Opcode::Fusion {
                    let (members, emitter, decisions) = match log.fusions.get(instr.name()) {
                        Some((m, e, d)) => (m.clone(), e.to_string(), d.clone()),
                        None => existing_fusion(module, instr),
                    };
                    records.push(Record::Fusion(FusionRecord {
                        fusion: instr.name().to_string(),
                        kind: kind_name(instr.fusion_kind()).to_string(),
                        emitter,
                        members,
                        decisions,
                    }));
                }
                if ops::is_bookkeeping(instr.opcode()) {
                    continue;
                }
                let mut seen = HashSet::new();
                for &p in instr.operands() {
                    let pi = c.instr(p);
                    if ops::is_bookkeeping(pi.opcode()) || !seen.insert(p) {
                        continue;
                    }
                    // The refusal naming this consumer; else what the two ops are, when
                    // that alone keeps them apart; else the producer's own refusal.
                    let refusals = log.refusals.get(pi.name());
                    let exact =
                        refusals.and_then(|ds| ds.iter().find(|d| d.consumer == instr.name()));
                    let by_class = default_reason(module, pi, instr);
                    let (reason, cost, detail) = match (exact, refusals.and_then(|ds| ds.first())) {
                        (Some(d), _) => (d.reason, d.cost.clone(), d.detail.clone()),
                        (None, Some(d)) if by_class == Reason::NotProfitable => {
                            (d.reason, d.cost.clone(), d.detail.clone())
                        }
                        _ => (by_class, Cost::default(), None),
                    };
                    records.push(Record::Edge(EdgeRecord {
                        producer: pi.name().to_string(),
                        consumer: instr.name().to_string(),
                        fused: false,
                        reason,
                        cost,
                        detail,
                    }));
                }
            }
        }
        FusionReport { records }
    }

    /// One JSON object per line.
    pub fn to_json_lines(&self) -> String {
        let mut s = String::new();
        for r in &self.records {
            if let Ok(line) = serde_json::to_string(r) {
                s.push_str(&line);
                s.push('\n');
            }
        }
        s
    }

    /// One line per decision, costs in µs and bytes (`unfused µs -> fused µs`, bytes and
    /// flops likewise, and the producer's consumer count); a refusal decided without
    /// costs (an op that never fuses) shows just its reason.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let cost = |c: &Cost| {
            format!(
                "{:.3} µs -> {:.3} µs, {} -> {} bytes, {} -> {} flops, {} consumer(s)",
                c.unfused_us,
                c.fused_us,
                c.bytes_unfused,
                c.bytes_fused,
                c.flops_unfused,
                c.flops_fused,
                c.duplication
            )
        };
        for r in &self.records {
            match r {
                Record::Fusion(f) => {
                    s.push_str(&format!(
                        "fusion {} (kind {}, emitter {}): {}\n",
                        f.fusion,
                        f.kind,
                        f.emitter,
                        f.members.join(", ")
                    ));
                    for d in &f.decisions {
                        s.push_str(&format!(
                            "  fused {} into {}: {}\n",
                            d.producer,
                            d.consumer,
                            cost(&d.cost)
                        ));
                    }
                }
                Record::Edge(e) if e.cost == Cost::default() => s.push_str(&format!(
                    "unfused {} -> {}: {}\n",
                    e.producer,
                    e.consumer,
                    e.reason.code()
                )),
                Record::Edge(e) => s.push_str(&format!(
                    "unfused {} -> {}: {}{}: {}\n",
                    e.producer,
                    e.consumer,
                    e.reason.code(),
                    e.detail
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default(),
                    cost(&e.cost)
                )),
            }
        }
        s
    }

    /// The fusion records.
    pub fn fusions(&self) -> impl Iterator<Item = &FusionRecord> + '_ {
        self.records.iter().filter_map(|r| match r {
            Record::Fusion(f) => Some(f),
            Record::Edge(_) => None,
        })
    }

    /// The unfused edge records.
    pub fn edges(&self) -> impl Iterator<Item = &EdgeRecord> + '_ {
        self.records.iter().filter_map(|r| match r {
            Record::Edge(e) => Some(e),
            Record::Fusion(_) => None,
        })
    }
}

/// Members and emitter of a fusion that was already in the input.
fn existing_fusion(
    module: &Module,
    instr: &hlo::Instruction,
) -> (Vec<String>, String, Vec<Decision>) {
    let Some(body) = instr.calls().and_then(|c| module.get_computation(c)) else {
        return (Vec::new(), "loop".into(), Vec::new());
    };
    let members: Vec<String> = body
        .instructions()
        .filter(|(_, i)| i.opcode() != Opcode::Parameter)
        .map(|(_, i)| i.name().to_string())
        .collect();
    let classes: Vec<OpClass> = body
        .instructions()
        .map(|(_, i)| ops::classify(module, i))
        .collect();
    let emitter = if classes.contains(&OpClass::Reduction) {
        "reduction"
    } else if classes.contains(&OpClass::Transpose) {
        "transpose"
    } else {
        "loop"
    };
    (members, emitter.into(), Vec::new())
}

/// The reason two ops stay apart by what they are alone: a library-call consumer, an op
/// that never fuses, else `not-profitable` (which defers to the passes' refusals).
fn default_reason(
    module: &Module,
    producer: &hlo::Instruction,
    consumer: &hlo::Instruction,
) -> Reason {
    let fusible = |i: &hlo::Instruction| {
        i.opcode() == Opcode::Fusion || ops::is_fusible(ops::classify(module, i))
    };
    if ops::classify(module, consumer) == OpClass::Library {
        Reason::ConsumerIsLibraryCall
    } else if !fusible(producer) || !fusible(consumer) {
        Reason::UnfusibleOp
    } else {
        Reason::NotProfitable
    }
}
