//! Dots of gathered rows (`x[idx] @ w`, a graph network's messages) compiled through the
//! whole pipeline, which computes them as gathers of the product's rows where fewer rows
//! are gathered from than picked (`hlo_transforms::DotBeforeGather`), against the
//! evaluator on random modules: the gathered side left or right, `w` a matrix or a vector,
//! indices `[n]` or `[n,1]` (out-of-range ones clamped as the gather clamps, or their rows
//! NaN as `jnp.take` fills them), the gather read elsewhere too or not, and a scatter-add
//! of the messages back onto the rows.

use crate::gen::{self, Rng};

fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let m = 1 + rng.below(12) as i64;
    let n = m + 1 + rng.below(40) as i64;
    let k = 1 + rng.below(9) as i64;
    let f = 1 + rng.below(2 * k as usize) as i64;
    let explicit = rng.below(2) == 0;
    let idx = if explicit {
        format!("s32[{n},1]")
    } else {
        format!("s32[{n}]")
    };
    let mut lines = vec![
        format!("  x = f32[{m},{k}] parameter(0)"),
        format!("  i0 = {idx} parameter(1)"),
        // Mostly in range, some past either end (clamped).
        format!("  lim = s32[] constant({})", m + 2),
        format!("  blim = {idx} broadcast(lim), dimensions={{}}"),
        format!("  i = {idx} remainder(i0, blim)"),
        format!(
            "  g = f32[{n},{k}] gather(x, i), offset_dims={{1}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,{k}}}"
        ),
    ];
    // `jnp.take`'s fill mode: rows of indices past the end NaN (the lhs forms only).
    let form = rng.below(3);
    let lhs = if form < 2 && rng.below(2) == 0 {
        lines.push(format!("  top = s32[] constant({})", m - 1));
        lines.push(format!("  btop = {idx} broadcast(top), dimensions={{}}"));
        let pred = if explicit {
            format!("pred[{n},1]")
        } else {
            format!("pred[{n}]")
        };
        lines.push(format!("  ok = {pred} compare(i, btop), direction=LE"));
        if explicit {
            lines.push(format!("  okr = pred[{n}] reshape(ok)"));
        }
        let ok = if explicit { "okr" } else { "ok" };
        lines.push(format!(
            "  bok = pred[{n},{k}] broadcast({ok}), dimensions={{0}}"
        ));
        lines.push("  nan = f32[] constant(nan)".to_string());
        lines.push(format!(
            "  bnan = f32[{n},{k}] broadcast(nan), dimensions={{}}"
        ));
        lines.push(format!("  gf = f32[{n},{k}] select(bok, g, bnan)"));
        "gf"
    } else {
        "g"
    };
    let (out, out_shape) = match form {
        0 => {
            lines.push(format!("  w = f32[{k},{f}] parameter(2)"));
            lines.push(format!(
                "  d = f32[{n},{f}] dot({lhs}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
            ));
            ("d", format!("f32[{n},{f}]"))
        }
        1 => {
            lines.push(format!("  w = f32[{k}] parameter(2)"));
            lines.push(format!(
                "  d = f32[{n}] dot({lhs}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
            ));
            ("d", format!("f32[{n}]"))
        }
        _ => {
            lines.push(format!("  w = f32[{f},{k}] parameter(2)"));
            lines.push(format!(
                "  d = f32[{f},{n}] dot(w, g), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}"
            ));
            ("d", format!("f32[{f},{n}]"))
        }
    };
    let mut outs = vec![(out.to_string(), out_shape.clone())];
    if rng.below(3) == 0 {
        outs.push(("g".to_string(), format!("f32[{n},{k}]")));
    }
    // The messages summed back onto their rows, as a graph network aggregates them.
    if out_shape == format!("f32[{n},{f}]") && rng.below(2) == 0 {
        lines.push("  zero = f32[] constant(0)".to_string());
        lines.push(format!(
            "  acc = f32[{m},{f}] broadcast(zero), dimensions={{}}"
        ));
        lines.push(format!(
            "  s = f32[{m},{f}] scatter(acc, i, d), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=sum"
        ));
        outs.push(("s".to_string(), format!("f32[{m},{f}]")));
    }
    let (names, shapes): (Vec<String>, Vec<String>) = outs.into_iter().unzip();
    lines.push(format!(
        "  ROOT r = ({}) tuple({})",
        shapes.join(", "),
        names.join(", ")
    ));
    format!(
        "HloModule gathered_dot\n\nsum {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\nENTRY e {{\n{}\n}}\n",
        lines.join("\n")
    )
}

#[test]
fn dots_of_gathered_rows_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-gathered-dots", gen::seeds(0..24), |seed| {
        Some(module(seed))
    });
    assert!(ran > 0);
}
