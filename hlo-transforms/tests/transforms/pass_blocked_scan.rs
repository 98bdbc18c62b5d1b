//! The blocked-scan rewrite (`reduce-window-rewriter`) against the evaluator, bit for bit:
//! the evaluator computes a long cumulative window in XLA's blocked order directly
//! (`hlo-eval`'s `window_scan`, checked against XLA's recorded outputs), the rewritten
//! module computes it from short windows, slices, broadcasts and the reducer's op; both
//! must give the same bits for every element type, reducer, direction, exclusive or not,
//! scanned dimension and length (one, two and three levels of blocks).

use hlo::pass::Pass;
use hlo_eval::random::random_literal;

fn module(ty: &str, op: &str, dims: &[i64], d: usize, reverse: bool, exclusive: bool) -> String {
    let n = dims[d];
    let shape = |ds: &[i64]| {
        let list: Vec<String> = ds.iter().map(i64::to_string).collect();
        format!("{ty}[{}]", list.join(","))
    };
    let mut out = dims.to_vec();
    out[d] += i64::from(exclusive);
    let pad = n - 1 + i64::from(exclusive);
    let size: Vec<String> = (0..dims.len())
        .map(|k| if k == d { n.to_string() } else { "1".into() })
        .collect();
    let pads: Vec<String> = (0..dims.len())
        .map(|k| match (k == d, reverse) {
            (false, _) => "0_0".into(),
            (true, false) => format!("{pad}_0"),
            (true, true) => format!("0_{pad}"),
        })
        .collect();
    let (init, body) = match op {
        "add" => ("0", "ROOT s = T[] add(x, y)".to_string()),
        "multiply" => ("1", "ROOT s = T[] multiply(x, y)".to_string()),
        "maximum" => ("-inf", "ROOT s = T[] maximum(x, y)".to_string()),
        // Not a plain binary op: combined through a `map`.
        _ => (
            "0",
            "ny = T[] negate(y)\n  ROOT s = T[] subtract(x, ny)".to_string(),
        ),
    };
    let init = if ty.starts_with('s') && init == "-inf" {
        "-2147483648"
    } else {
        init
    };
    let body = body.replace("T[]", &format!("{ty}[]"));
    format!(
        "HloModule m\nr {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  {body}\n}}\nENTRY e {{\n  p = {} parameter(0)\n  z = {ty}[] constant({init})\n  ROOT o = {} reduce-window(p, z), window={{size={} pad={}}}, to_apply=r\n}}\n",
        shape(dims),
        shape(&out),
        size.join("x"),
        pads.join("x"),
    )
}

#[test]
fn rewritten_scans_give_the_evaluators_bits() {
    let shapes: [(&[i64], usize); 6] = [
        (&[17], 0),
        (&[3, 40], 1),
        (&[33, 2], 0),
        (&[2, 300], 1),
        (&[2, 5000], 1),
        (&[2, 64, 3], 1),
    ];
    let mut cases = 0;
    for ty in ["f32", "bf16", "f16", "f64", "s32"] {
        for op in ["add", "multiply", "maximum", "addneg"] {
            for (k, &(dims, d)) in shapes.iter().enumerate() {
                for (reverse, exclusive) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let text = module(ty, op, dims, d, reverse, exclusive);
                    let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                    let mut t = m.clone();
                    let changed = hlo_transforms::BlockedScans.run(&mut t).unwrap();
                    assert!(changed, "not rewritten:\n{text}");
                    hlo::pass::verify::verify(&t).unwrap_or_else(|e| panic!("{e}\n{t}"));
                    let left = t
                        .computations
                        .iter()
                        .flat_map(|c| c.instructions().map(move |(_, i)| (c, i)))
                        .filter_map(|(c, i)| {
                            let dims = c.instr(*i.operands.first()?).shape.dims().to_vec();
                            hlo::ir::blocked_scan::cumulative_window(i, &dims)
                        })
                        .filter(|w| w.is_blocked())
                        .count();
                    assert_eq!(left, 0, "a long window is left:\n{t}");
                    // Values near 1 keep products finite; small integers keep sums exact.
                    let shape = m.entry().instr(m.entry().parameters()[0]).shape().clone();
                    let arg = random_literal(&shape, 7 + k as u64, 0, 1 << 22).unwrap();
                    let arg = if op == "multiply" && !ty.starts_with('s') {
                        near_one(&arg)
                    } else {
                        arg
                    };
                    let want = hlo_eval::evaluate(&m, std::slice::from_ref(&arg)).unwrap();
                    let got = hlo_eval::evaluate(&t, std::slice::from_ref(&arg)).unwrap();
                    assert_eq!(
                        got, want,
                        "{ty} {op} {dims:?} reverse {reverse} exclusive {exclusive}:\n{t}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 5 * 4 * 6 * 4);
}

/// `1 + x / 64` for float `x`: products of thousands of those stay finite.
fn near_one(x: &hlo::Literal) -> hlo::Literal {
    use hlo::literal::{ArrayData, ArrayLiteral};
    let a = x.as_array().unwrap();
    let vals: Vec<f64> = (0..a.data().len())
        .map(|i| 1.0 + a.get_f64(i).unwrap() / 64.0)
        .collect();
    let mut data = ArrayData::new(a.element_type()).unwrap();
    for v in vals {
        data.push_float(a.element_type(), v, None, "near one")
            .unwrap();
    }
    hlo::Literal::Array(ArrayLiteral::new(a.shape().clone(), data).unwrap())
}
