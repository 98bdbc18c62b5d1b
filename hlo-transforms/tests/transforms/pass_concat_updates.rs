//! `concat-of-updated-slices` on random stacked arrays: layers (or column blocks) sliced
//! out of one array, some updated at a dynamic or constant start (in range, negative, past
//! the end: clamped), some read by a reduction, stacked back by a concatenate. The pass
//! must rewrite every such module and keep the evaluator's results bit for bit (only data
//! moves) for several start positions; a module whose slices do not tile the array must
//! stay as it is.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::Pass;
use hlo::{ElementType, Literal, Shape};
use hlo_transforms::ConcatOfUpdatedSlices;

use testkit::rng::Lcg as Rng;

fn dims_text(d: &[i64]) -> String {
    d.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A random module: array `a` of rank 3 cut along dimension `cut` into parts, each a plain
/// slice or an updated one (a reshape dropping the unit dimension first when the part has
/// width 1 along `cut`), the concatenate, and the readers. Parameters: `a`, the update
/// `v`, the start `p`. With `gap`, the parts skip one row after the first (the array is
/// one wider): they do not tile it.
fn random_module(rng: &mut Rng, gap: bool) -> String {
    let cut = rng.pick(3);
    let mut full = [
        2 + rng.pick(3) as i64,
        2 + rng.pick(3) as i64,
        1 + rng.pick(3) as i64,
    ];
    let parts = 2 + rng.pick(3);
    let widths: Vec<i64> = (0..parts).map(|_| 1 + rng.pick(2) as i64).collect();
    full[cut] = widths.iter().sum::<i64>() + i64::from(gap);
    // The update: one row (width 1) along a dimension other than `cut`, at `p` there.
    let along = (cut + 1 + rng.pick(2)) % 3;
    let mut lines = vec![
        format!("  a = f32[{}] parameter(0)", dims_text(&full)),
        "  p = s32[] parameter(2)".to_string(),
        "  zero = s32[] constant(0)".to_string(),
        "  one = s32[] constant(1)".to_string(),
    ];
    let mut vdims = full;
    vdims[along] = 1;
    vdims[cut] = 1;
    lines.push(format!("  v = f32[{}] parameter(1)", dims_text(&vdims)));
    let (mut ops, mut readers, mut at) = (Vec::new(), Vec::new(), 0i64);
    let mut updated = 0;
    for (j, &w) in widths.iter().enumerate() {
        let mut pd = full;
        pd[cut] = w;
        let bounds: Vec<String> = (0..3)
            .map(|k| match k == cut {
                true => format!("[{}:{}]", at, at + w),
                false => format!("[0:{}]", full[k]),
            })
            .collect();
        at += w;
        if gap && j == 0 {
            // Part 1 starts one past part 0's end.
            at += 1;
        }
        lines.push(format!(
            "  part{j} = f32[{}] slice(a), slice={{{}}}",
            dims_text(&pd),
            bounds.join(", ")
        ));
        if rng.pick(3) == 0 && !(updated == 0 && j + 1 == widths.len()) {
            ops.push(format!("part{j}"));
            continue;
        }
        updated += 1;
        // Starts: `p` along `along`, along `cut` a constant or `p` too.
        let start = |k: usize, rng: &mut Rng| match k {
            _ if k == along => "p".to_string(),
            _ if k == cut => ["zero", "one", "p"][rng.pick(3)].to_string(),
            _ => "zero".to_string(),
        };
        let starts: Vec<String> = (0..3).map(|k| start(k, rng)).collect();
        let reshaped = w == 1 && rng.pick(2) == 0;
        if reshaped {
            // Through reshapes dropping the cut dimension.
            let rd: Vec<i64> = (0..3).filter(|&k| k != cut).map(|k| pd[k]).collect();
            let vd: Vec<i64> = (0..3).filter(|&k| k != cut).map(|k| vdims[k]).collect();
            let rs: Vec<&String> = (0..3).filter(|&k| k != cut).map(|k| &starts[k]).collect();
            lines.push(format!("  r{j} = f32[{}] reshape(part{j})", dims_text(&rd)));
            lines.push(format!("  w{j} = f32[{}] reshape(v)", dims_text(&vd)));
            lines.push(format!(
                "  d{j} = f32[{}] dynamic-update-slice(r{j}, w{j}, {}, {})",
                dims_text(&rd),
                rs[0],
                rs[1]
            ));
            lines.push(format!("  x{j} = f32[{}] reshape(d{j})", dims_text(&pd)));
        } else {
            lines.push(format!(
                "  x{j} = f32[{}] dynamic-update-slice(part{j}, v, {})",
                dims_text(&pd),
                starts.join(", ")
            ));
        }
        let value = format!("x{j}");
        if rng.pick(2) == 0 {
            // A reader of the updated part: the update itself (before any reshape back).
            let (what, dims) = match reshaped {
                true => (format!("d{j}"), "0,1"),
                false => (value.clone(), "0,1,2"),
            };
            lines.push(format!("  z{j} = f32[] constant(0)"));
            lines.push(format!(
                "  red{j} = f32[] reduce({what}, z{j}), dimensions={{{dims}}}, to_apply=sum"
            ));
            readers.push(format!("red{j}"));
        }
        ops.push(value);
    }
    let mut cd = full;
    cd[cut] = at - i64::from(gap);
    lines.push(format!(
        "  c = f32[{}] concatenate({}), dimensions={{{cut}}}",
        dims_text(&cd),
        ops.join(", ")
    ));
    let mut outs = vec!["c".to_string()];
    outs.extend(readers);
    let shapes: Vec<String> = outs
        .iter()
        .map(|o| match o.as_str() {
            "c" => format!("f32[{}]", dims_text(&cd)),
            _ => "f32[]".to_string(),
        })
        .collect();
    format!(
        "HloModule stacked\nsum {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}}\nENTRY e {{\n{}\n  ROOT out = ({}) tuple({})\n}}\n",
        lines.join("\n"),
        shapes.join(", "),
        outs.join(", ")
    )
}

fn array(ty: ElementType, dims: &[i64], data: ArrayData) -> Literal {
    Literal::Array(ArrayLiteral::new(Shape::array(ty, dims.to_vec()), data).unwrap())
}

/// Distinct values (0, 1, 2, ...) for `a` and negative ones for `v`, so that a value
/// written to the wrong place shows.
fn arguments(m: &hlo::Module, p: i32) -> Vec<Literal> {
    let entry = m.entry();
    let dims = |n: usize| {
        entry
            .instr(entry.parameter(n).unwrap())
            .shape()
            .dims()
            .to_vec()
    };
    let (a, v) = (dims(0), dims(1));
    let count = |d: &[i64]| d.iter().product::<i64>() as usize;
    vec![
        array(
            ElementType::F32,
            &a,
            ArrayData::F32((0..count(&a)).map(|i| i as f32).collect()),
        ),
        array(
            ElementType::F32,
            &v,
            ArrayData::F32((0..count(&v)).map(|i| -1.0 - i as f32).collect()),
        ),
        array(ElementType::S32, &[], ArrayData::S32(vec![p])),
    ]
}

#[test]
fn stacked_updates_become_chains_with_the_same_values() {
    let mut rng = Rng(0xcafe);
    for case in 0..60 {
        let text = random_module(&mut rng, false);
        let before = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&before).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut after = before.clone();
        let changed = ConcatOfUpdatedSlices.run(&mut after).unwrap();
        let printed = hlo::print_module(&after);
        assert!(changed, "case {case}: not rewritten\n{text}");
        assert!(
            !printed.contains("concatenate("),
            "case {case}: a concatenate is left\n{printed}"
        );
        hlo::pass::verify::verify(&after).unwrap_or_else(|e| panic!("{e}\n{printed}"));
        for p in [-2, 0, 1, 2, 7] {
            let args = arguments(&before, p);
            let want = hlo_eval::evaluate(&before, &args).unwrap();
            let got = hlo_eval::evaluate(&after, &args).unwrap();
            assert_eq!(
                got, want,
                "case {case}, p = {p}: results differ\n{text}\nafter:\n{printed}"
            );
        }
    }
}

#[test]
fn parts_that_do_not_tile_the_array_stay() {
    let mut rng = Rng(0xbeef);
    for _ in 0..20 {
        let text = random_module(&mut rng, true);
        let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut after = m.clone();
        assert!(!ConcatOfUpdatedSlices.run(&mut after).unwrap(), "{text}");
        assert_eq!(hlo::print_module(&after), hlo::print_module(&m));
    }
}
