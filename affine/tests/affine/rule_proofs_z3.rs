//! Every statement of every simplifier rule is proven by z3 (the rule list is enumerated, so
//! a new rule is proven automatically). A statement z3 cannot decide symbolically is proven
//! on each of its declared linear instances instead; the report says which method worked.
//! `HLOC_PROVE_RULES=name,name` proves only those rules (the whole list takes minutes on a
//! loaded machine).
#![cfg(feature = "z3")]

use std::time::Instant;

use affine::prove::{prove, prove_instantiated, Proof};
use affine::simplify::rules::RULES;

const TIMEOUT_MS: u32 = 4_000;

#[test]
fn every_rule_is_proven() {
    let mut failures = Vec::new();
    let mut report = Vec::new();
    let only = std::env::var("HLOC_PROVE_RULES").ok();
    let selected = |name: &str| {
        only.as_deref()
            .is_none_or(|l| l.split(',').any(|n| n == name))
    };
    for rule in RULES.iter().filter(|r| selected(r.name)) {
        for (i, spec) in rule.specs.iter().enumerate() {
            let named = spec
                .statement()
                .unwrap_or_else(|e| panic!("{}: {e}", rule.name));
            let start = Instant::now();
            let symbolic = prove(&named.statement, TIMEOUT_MS);
            let (method, proof) = match symbolic {
                Proof::Unknown(_) if !named.instantiate.is_empty() => (
                    "instances",
                    prove_instantiated(&named.statement, &named.instantiate, TIMEOUT_MS),
                ),
                p => ("symbolic", p),
            };
            let ms = start.elapsed().as_millis();
            report.push(format!(
                "{:<28} #{i} {method:<9} {ms:>6} ms  {proof}",
                rule.name
            ));
            match proof {
                Proof::Proven => {}
                Proof::Counterexample(values) => {
                    let point: Vec<String> = values
                        .iter()
                        .map(|(v, x)| {
                            let name = named
                                .names
                                .iter()
                                .find(|(_, w)| w == v)
                                .map_or("?", |(n, _)| n.as_str());
                            format!("{name} = {x}")
                        })
                        .collect();
                    failures.push(format!(
                        "{} #{i}: counterexample {}",
                        rule.name,
                        point.join(", ")
                    ));
                }
                Proof::Unknown(why) => {
                    failures.push(format!("{} #{i}: unknown ({why})", rule.name))
                }
            }
        }
    }
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
