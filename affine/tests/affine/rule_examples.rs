//! Every simplifier rule has a positive and a negative text example (tests/rules/*.test, testkit format).
//! Positive examples must fire the rule, negative ones must not (and say why: the
//! counterexample the rule must not rewrite). Every output is checked against the input by
//! enumerating the domain, and compared with the blessed expectation.

use crate::oracle;
use testkit::golden;

use std::collections::BTreeMap;
use std::path::Path;

use affine::simplify::rules::RULES;

#[test]
fn rule_examples() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rules");
    // rule name -> (positives, negatives)
    let mut seen: BTreeMap<&'static str, (usize, usize)> =
        RULES.iter().map(|r| (r.name, (0, 0))).collect();
    let mut failures = Vec::new();
    for path in golden::files(&dir, "test") {
        golden::check_file(&path, |case| {
            let at = format!("{}:{}", path.display(), case.line);
            let Some(name) = case.header_value("rule") else {
                failures.push(format!("{at}: missing `# rule: NAME`"));
                return String::new();
            };
            let Some(counts) = seen.iter_mut().find(|(k, _)| **k == name).map(|(_, v)| v) else {
                failures.push(format!("{at}: unknown rule `{name}`"));
                return String::new();
            };
            let positive = case.has_header("positive");
            let negative = case.header_value("negative");
            match (positive, negative) {
                (true, None) => counts.0 += 1,
                (false, Some(why)) if !why.is_empty() => counts.1 += 1,
                _ => failures.push(format!(
                    "{at}: need `# positive` or `# negative: <counterexample>`"
                )),
            }
            let input = match affine::parse::parse_map(&case.input) {
                Ok(m) => m,
                Err(e) => {
                    failures.push(format!("{at}: {}", e.render(&case.input, None)));
                    return String::new();
                }
            };
            let mut output = input.clone();
            let fired: Vec<&str> = if case.header_value("apply") == Some("rescale_symbols") {
                let changed = output.rescale_symbols();
                output.simplify();
                if changed {
                    vec!["rescale_symbol"]
                } else {
                    vec![]
                }
            } else {
                let fired = output.simplify_traced();
                if let Err(e) = oracle::same_on_domain(&input, &output, 1_000_000) {
                    failures.push(format!("{at}: simplification changed the map: {e}"));
                }
                fired
            };
            let did_fire = fired.contains(&name);
            if positive && !did_fire {
                failures.push(format!("{at}: `{name}` did not fire (fired: {fired:?})"));
            }
            if negative.is_some() && did_fire {
                failures.push(format!("{at}: `{name}` fired on a negative example"));
            }
            output.to_string()
        });
    }
    for (name, (pos, neg)) in &seen {
        if *pos == 0 || *neg == 0 {
            failures.push(format!(
                "rule `{name}` has {pos} positive and {neg} negative examples"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
