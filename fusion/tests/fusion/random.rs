//! Property test: random modules from a fixed-seed generator keep their evaluator results
//! after fusion (for both targets), verify (no cycle, shapes right) and have a complete
//! explain report. The modules chain elementwise ops (cheap and transcendental),
//! row reductions broadcast back, transposes, reshapes, slices with pads, and return a
//! tuple of two values (so some producers are also outputs).

use crate::support::{check_report_covers, compare, Compared};

use testkit::rng::Lcg as Rng;

/// A random module over f32[4,6] values.
fn random_module(rng: &mut Rng) -> String {
    let mut lines = vec![
        "  v0 = f32[4,6] parameter(0)".to_string(),
        "  v1 = f32[4,6] parameter(1)".to_string(),
    ];
    let mut n = 2;
    let steps = 3 + rng.pick(10);
    for _ in 0..steps {
        let a = rng.pick(n);
        let b = rng.pick(n);
        match rng.pick(8) {
            0 | 1 => {
                let op = ["add", "subtract", "multiply", "maximum"][rng.pick(4)];
                lines.push(format!("  v{n} = f32[4,6] {op}(v{a}, v{b})"));
            }
            2 => {
                let op = ["negate", "exponential", "tanh", "abs"][rng.pick(4)];
                lines.push(format!("  v{n} = f32[4,6] {op}(v{a})"));
            }
            3 => {
                lines.push(format!("  z{n} = f32[] constant(0)"));
                lines.push(format!(
                    "  r{n} = f32[4] reduce(v{a}, z{n}), dimensions={{1}}, to_apply=add"
                ));
                lines.push(format!(
                    "  v{n} = f32[4,6] broadcast(r{n}), dimensions={{0}}"
                ));
            }
            4 => {
                lines.push(format!(
                    "  t{n} = f32[6,4] transpose(v{a}), dimensions={{1,0}}"
                ));
                lines.push(format!("  e{n} = f32[6,4] exponential(t{n})"));
                lines.push(format!(
                    "  v{n} = f32[4,6] transpose(e{n}), dimensions={{1,0}}"
                ));
            }
            5 => {
                lines.push(format!("  sl{n} = f32[24] reshape(v{a})"));
                lines.push(format!("  m{n} = f32[24] multiply(sl{n}, sl{n})"));
                lines.push(format!("  v{n} = f32[4,6] reshape(m{n})"));
            }
            6 => {
                lines.push(format!(
                    "  sl{n} = f32[4,3] slice(v{a}), slice={{[0:4], [1:4]}}"
                ));
                lines.push(format!("  z{n} = f32[] constant(1)"));
                lines.push(format!(
                    "  v{n} = f32[4,6] pad(sl{n}, z{n}), padding=0_0x2_1"
                ));
            }
            _ => {
                lines.push(format!("  c{n} = f32[] constant(0.5)"));
                lines.push(format!(
                    "  b{n} = f32[4,6] broadcast(c{n}), dimensions={{}}"
                ));
                lines.push(format!("  v{n} = f32[4,6] multiply(v{a}, b{n})"));
            }
        }
        n += 1;
    }
    let other = rng.pick(n - 1);
    lines.push(format!(
        "  ROOT out = (f32[4,6], f32[4,6]) tuple(v{}, v{other})",
        n - 1
    ));
    format!(
        "HloModule random\nadd {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}}\nENTRY e {{\n{}\n}}\n",
        lines.join("\n")
    )
}

#[test]
fn random_modules_keep_their_results() {
    let mut rng = Rng(0x5eed);
    let devices = [device::load("cpu").unwrap(), device::load("h100").unwrap()];
    let mut fusions = 0;
    for i in 0..150 {
        let text = random_module(&mut rng);
        let before = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&before).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let device = &devices[i % 2];
        let mut after = before.clone();
        let report =
            fusion::fuse(&mut after, device).unwrap_or_else(|e| panic!("module {i}: {e}\n{text}"));
        fusions += report.fusions().count();
        if let Err(e) = check_report_covers(&after, &report) {
            panic!("module {i}: {e}\n{text}");
        }
        match compare(&before, &after) {
            Ok(Compared::Same) => {}
            Ok(Compared::NotEvaluable(e)) => panic!("module {i}: not evaluable: {e}\n{text}"),
            Err(e) => panic!(
                "module {i}: {e}\n{text}\nfused:\n{}",
                hlo::print_module(&after)
            ),
        }
    }
    assert!(fusions > 150, "only {fusions} fusions");
}
