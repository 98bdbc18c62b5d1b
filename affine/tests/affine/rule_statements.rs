//! Without z3: every rule statement is checked at many sampled points (instantiated
//! variables over their declared ranges, the others in [-12, 12]). A wrong statement whose
//! assumptions are satisfiable by small values is caught here even where z3 is not built.

use affine::enumerate::OwnedPoint;
use affine::gen::Rng;
use affine::simplify::rules::RULES;

const SAMPLES: usize = 20_000;

#[test]
fn rule_statements_hold_at_sampled_points() {
    let mut failures = Vec::new();
    let mut total_in_scope = 0usize;
    for rule in RULES {
        for (i, spec) in rule.specs.iter().enumerate() {
            let named = spec
                .statement()
                .unwrap_or_else(|e| panic!("{}: {e}", rule.name));
            let n = named.names.len();
            let mut rng = Rng::new(0x5eed ^ (i as u64) ^ rule.name.len() as u64);
            let mut in_scope = 0usize;
            for _ in 0..SAMPLES {
                let dims: Vec<i64> = (0..n)
                    .map(|k| {
                        let v = named.names[k].1;
                        match named.instantiate.iter().find(|(w, _)| *w == v) {
                            Some((_, r)) => rng.range_i64(*r.start(), *r.end()),
                            None => rng.range_i64(-12, 12),
                        }
                    })
                    .collect();
                let p = OwnedPoint {
                    dims,
                    ranges: vec![],
                    runtimes: vec![],
                };
                match named.statement.check_at(&p.as_point()) {
                    Some(false) => {
                        let point: Vec<String> = named
                            .names
                            .iter()
                            .zip(&p.dims)
                            .map(|((n, _), x)| format!("{n} = {x}"))
                            .collect();
                        failures.push(format!("{} #{i}: fails at {}", rule.name, point.join(", ")));
                        break;
                    }
                    Some(true)
                        if named
                            .statement
                            .assumptions
                            .iter()
                            .all(|a| a.holds_at(&p.as_point()) == Some(true)) =>
                    {
                        in_scope += 1;
                    }
                    Some(true) => {}
                    None => {}
                }
            }
            total_in_scope += in_scope;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        total_in_scope > 10_000,
        "too few sampled points satisfied the assumptions: {total_in_scope}"
    );
}
