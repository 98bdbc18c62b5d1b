//! Differential test of `ragged-dot` through the CPU backend (expanded into a dense dot
//! of group-masked operands by `hlo_transforms::RaggedDotExpander`), against the reference
//! evaluator: the three modes (ragged free, contracting and batch dimension), the ragged
//! dimension anywhere in the lhs, the rhs group dimension anywhere, a second contracting or
//! free dimension, one `[g]` row of group sizes or one row per prefix coordinate, random
//! layouts, and group sizes drawn with zeros, sums short of the ragged extent and sums past
//! it. Deterministic: a failure prints the module.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::Literal;

use crate::gen::{self, list, Rng};

/// One dimension of an operand: its role and size.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Batch(usize),
    Contract(usize),
    Free(usize),
    Group,
}

struct Case {
    /// 0: ragged free dimension, 1: contracting, 2: batch.
    mode: usize,
    text: String,
    /// The group sizes' dims and values.
    sizes: (Vec<i64>, Vec<i64>, ElementType),
}

fn position(dims: &[Role], r: Role) -> usize {
    dims.iter()
        .position(|&d| d == r)
        .expect("the role is there")
}

/// Group sizes for `rows` positions in `g` groups: cut points drawn at random (so zeros are
/// common), the total short of, equal to or past `rows`.
fn sizes_row(rng: &mut Rng, rows: i64, g: usize) -> Vec<i64> {
    if g == 0 {
        return Vec::new();
    }
    let total = match rng.below(4) {
        0 => rng.range(0, rows),
        1 => rows + rng.range(1, 4),
        _ => rows,
    };
    let mut cuts: Vec<i64> = (0..g.saturating_sub(1))
        .map(|_| rng.range(0, total))
        .collect();
    cuts.push(total);
    cuts.sort_unstable();
    let mut prev = 0;
    cuts.into_iter()
        .map(|c| {
            let s = c - prev;
            prev = c;
            s
        })
        .collect()
}

fn case(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let mode = rng.below(3);
    let ty = *rng.pick(&["f32", "f32", "f64", "s32"]);
    let n_batch = if mode == 2 {
        1 + rng.below(2)
    } else {
        rng.below(2)
    };
    let batch: Vec<i64> = (0..n_batch).map(|_| rng.range(1, 3)).collect();
    let contract: Vec<i64> = (0..1 + rng.below(2)).map(|_| rng.range(1, 9)).collect();
    let free_l: Vec<i64> = (0..1 + rng.below(2)).map(|_| rng.range(1, 9)).collect();
    let n = rng.range(1, 6);
    let g = if rng.below(8) == 0 && mode == 0 {
        0
    } else {
        rng.range(1, 5) as usize
    };
    // The operands' dimensions in a random order.
    let mut lhs: Vec<Role> = (0..n_batch).map(Role::Batch).collect();
    lhs.extend((0..contract.len()).map(Role::Contract));
    lhs.extend((0..free_l.len()).map(Role::Free));
    rng.shuffle(&mut lhs);
    let mut rhs: Vec<Role> = (0..n_batch).map(Role::Batch).collect();
    rhs.extend((0..contract.len()).map(Role::Contract));
    rhs.push(Role::Free(0));
    if mode == 0 {
        rhs.push(Role::Group);
    }
    rng.shuffle(&mut rhs);
    let size = |r: Role| match r {
        Role::Batch(i) => batch[i],
        Role::Contract(i) => contract[i],
        Role::Free(i) => free_l[i],
        Role::Group => g as i64,
    };
    let rsize = |r: Role| match r {
        Role::Free(_) => n,
        r => size(r),
    };
    let ragged = match mode {
        0 => Role::Free(rng.below(free_l.len())),
        1 => Role::Contract(rng.below(contract.len())),
        _ => Role::Batch(rng.below(n_batch)),
    };
    // The prefix dimensions (the rows of batched group sizes), by the definition: the
    // batch dimensions, then the free (mode 1) or contracting (mode 2) ones listed before
    // the ragged one; in mode 3 the batch dimensions before it. Lists are in role order.
    let lhs_free_order: Vec<Role> = lhs
        .iter()
        .copied()
        .filter(|r| matches!(r, Role::Free(_)))
        .collect();
    let mut prefix: Vec<Role> = match ragged {
        Role::Batch(i) => (0..i).map(Role::Batch).collect(),
        _ => (0..n_batch).map(Role::Batch).collect(),
    };
    match ragged {
        Role::Free(_) => prefix.extend(lhs_free_order.iter().take_while(|&&r| r != ragged)),
        Role::Contract(i) => prefix.extend((0..i).map(Role::Contract)),
        _ => {}
    }
    let batched = rng.below(2) == 0;
    let mut gdims: Vec<i64> = if batched {
        prefix.iter().map(|&r| size(r)).collect()
    } else {
        Vec::new()
    };
    gdims.push(g as i64);
    let rows = size(ragged);
    let n_rows: i64 = gdims[..gdims.len() - 1].iter().product();
    let values: Vec<i64> = (0..n_rows)
        .flat_map(|_| sizes_row(&mut rng, rows, g))
        .collect();
    let gty = *rng.pick(&[ElementType::S32, ElementType::S64]);
    let ids = |ops: &[Role], pick: fn(Role) -> Option<usize>| -> Vec<usize> {
        let mut v: Vec<(usize, usize)> = ops
            .iter()
            .enumerate()
            .filter_map(|(d, &r)| pick(r).map(|i| (i, d)))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, d)| d).collect()
    };
    let is_batch = |r: Role| match r {
        Role::Batch(i) => Some(i),
        _ => None,
    };
    let is_contract = |r: Role| match r {
        Role::Contract(i) => Some(i),
        _ => None,
    };
    let (lb, rb) = (ids(&lhs, is_batch), ids(&rhs, is_batch));
    let (lc, rc) = (ids(&lhs, is_contract), ids(&rhs, is_contract));
    // Result: [g] (mode 2), batch, lhs free in order, the rhs free one.
    let mut out: Vec<i64> = if mode == 1 {
        vec![g as i64]
    } else {
        Vec::new()
    };
    out.extend(&batch);
    out.extend(lhs_free_order.iter().map(|&r| size(r)));
    out.push(n);
    let ldims: Vec<i64> = lhs.iter().map(|&r| size(r)).collect();
    let rdims: Vec<i64> = rhs.iter().map(|&r| rsize(r)).collect();
    let mut attrs = Vec::new();
    if n_batch > 0 {
        attrs.push(format!(
            "lhs_batch_dims={{{}}}, rhs_batch_dims={{{}}}",
            list(&lb),
            list(&rb)
        ));
    }
    attrs.push(format!(
        "lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}",
        list(&lc),
        list(&rc)
    ));
    attrs.push(format!("lhs_ragged_dims={{{}}}", position(&lhs, ragged)));
    if mode == 0 {
        attrs.push(format!(
            "rhs_group_dims={{{}}}",
            position(&rhs, Role::Group)
        ));
    }
    let gs = format!("{}[{}]", gty.as_str(), list(&gdims));
    let text = format!(
        "HloModule ragged\nENTRY e {{\n  a = {} parameter(0)\n  b = {} parameter(1)\n  \
         g = {gs} parameter(2)\n  ROOT d = {ty}[{}] ragged-dot(a, b, g), {}\n}}\n",
        gen::shape(&mut rng, ty, &ldims),
        gen::shape(&mut rng, ty, &rdims),
        list(&out),
        attrs.join(", ")
    );
    Case {
        mode,
        text,
        sizes: (gdims, values, gty),
    }
}

fn sizes_literal((dims, values, ty): &(Vec<i64>, Vec<i64>, ElementType)) -> Literal {
    let mut data = ArrayData::new(*ty).expect("an integer type");
    for &v in values {
        data.push_int(*ty, i128::from(v)).expect("in range");
    }
    let shape = Shape::array(*ty, dims.clone());
    Literal::Array(ArrayLiteral::new(shape, data).expect("sized"))
}

#[test]
fn random_ragged_dots_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-ragged-dots");
    let mut failures = Vec::new();
    let mut modes = [0usize; 3];
    for seed in gen::seeds(0..60) {
        let c = case(seed);
        let m = gen::parse(seed, &c.text);
        let mut args = gen::random_args(&m, seed);
        // The operands' random values are small (integers within +-10): no overflow.
        args.truncate(2);
        args.push(sizes_literal(&c.sizes));
        modes[c.mode] += 1;
        gen::check(seed, (&m, &c.text), &args, &options, &mut failures);
    }
    gen::assert_none(&failures);
    assert!(modes.iter().all(|&k| k > 0), "every mode drawn: {modes:?}");
}
