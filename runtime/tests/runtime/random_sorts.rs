//! Differential tests of sort, top-k and variadic reduce: random ranks, sort dimensions,
//! layouts, one to three operands (keys with many ties: s8, u8; floats; a payload),
//! comparators in both directions with the total order or not, stable or not; variadic
//! reductions (an argmax-like pair reduced over random dimensions); and sorts and top-k
//! over typed keys of every element type with NaNs (both signs, other payloads), both
//! zeros and infinities, in every comparator form the runtime recognizes (and some it
//! must not), compared bit for bit. Compiled for the CPU and compared with the reference
//! evaluator. Deterministic: a failure prints the module.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};

use crate::gen::{self, list, shape, Rng};

/// A random sort (even seeds) or variadic reduce (odd seeds) module.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let rank = 1 + rng.below(3);
    let dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 17)).collect();
    if seed % 2 == 1 {
        // (value, index) pairs: the larger value wins, ties to the smaller index.
        let kept: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
        let reduced: Vec<usize> = (0..rank).filter(|d| !kept.contains(d)).collect();
        let out: Vec<i64> = kept.iter().map(|&d| dims[d]).collect();
        let ty = *rng.pick(&["f32", "s32", "f64"]);
        let x = shape(&mut rng, ty, &dims);
        let id = shape(&mut rng, "s32", &dims);
        let o1 = shape(&mut rng, ty, &out);
        let o2 = shape(&mut rng, "s32", &out);
        let d = rng.below(rank);
        return format!(
            "HloModule r\nam {{\n  a = {ty}[] parameter(0)\n  i = s32[] parameter(1)\n  \
             b = {ty}[] parameter(2)\n  j = s32[] parameter(3)\n  gt = pred[] compare(a, b), direction=GT\n  \
             eq = pred[] compare(a, b), direction=EQ\n  lt = pred[] compare(i, j), direction=LT\n  \
             tie = pred[] and(eq, lt)\n  w = pred[] or(gt, tie)\n  v = {ty}[] select(w, a, b)\n  \
             k = s32[] select(w, i, j)\n  ROOT t = ({ty}[], s32[]) tuple(v, k)\n}}\nENTRY e {{\n  \
             x = {x} parameter(0)\n  io = {id} iota(), iota_dimension={d}\n  lo = {ty}[] constant(-1000)\n  \
             z = s32[] constant(0)\n  ROOT r = ({o1}, {o2}) reduce(x, io, lo, z), dimensions={{{}}}, to_apply=am\n}}\n",
            list(&reduced),
        );
    }
    let key = *rng.pick(&["s8", "u8", "f32", "f64", "s32"]);
    let n_ops = 1 + rng.below(3);
    let tys: Vec<&str> = std::iter::once(key)
        .chain((1..n_ops).map(|_| *rng.pick(&["f32", "s32", "u8"])))
        .collect();
    let d = rng.below(rank);
    let dir = *rng.pick(&["LT", "GT"]);
    let total = if key.starts_with('f') && rng.below(2) == 0 {
        ", type=TOTALORDER"
    } else {
        ""
    };
    let stable = if rng.below(2) == 0 {
        ", is_stable=true"
    } else {
        ""
    };
    let params: Vec<String> = tys
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            [
                format!("  a{i} = {t}[] parameter({})", 2 * i),
                format!("  b{i} = {t}[] parameter({})", 2 * i + 1),
            ]
        })
        .collect();
    let ins: Vec<String> = tys
        .iter()
        .enumerate()
        .map(|(i, t)| format!("  x{i} = {} parameter({i})", shape(&mut rng, t, &dims)))
        .collect();
    let outs: Vec<String> = tys.iter().map(|t| shape(&mut rng, t, &dims)).collect();
    let names: Vec<String> = (0..n_ops).map(|i| format!("x{i}")).collect();
    let root_shape = if n_ops == 1 {
        outs[0].clone()
    } else {
        format!("({})", outs.join(", "))
    };
    format!(
        "HloModule s\ncmp {{\n{}\n  ROOT c = pred[] compare(a0, b0), direction={dir}{total}\n}}\n\
         ENTRY e {{\n{}\n  ROOT s = {root_shape} sort({}), dimensions={{{d}}}{stable}, to_apply=cmp\n}}\n",
        params.join("\n"),
        ins.join("\n"),
        names.join(", "),
    )
}

#[test]
fn random_sorts_and_variadic_reduces_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-sorts", gen::seeds(0..40), |seed| {
        Some(module(seed))
    });
}

/// Bit patterns a key or payload of type `ty` draws from: specials and a few values, a
/// random part of them per module so lines hold many ties (floats: NaNs of both signs and
/// other payloads when `nans`, both zeros, both infinities, a denormal; integers: their
/// extremes).
///
/// The NaNs include a signaling one (`0x7f800001` and its f16/bf16/f64 kin) in every
/// comparator form: XLA's total order compares the bits, so it sorts before the quiet
/// `0x7fc00000`; the evaluator once quieted it by widening to `f64` and put it after
/// (issue 36 item 2, fixed in f615870), which only the sorts' comparator path showed.
fn pool(rng: &mut Rng, ty: &str, nans: bool) -> Vec<u64> {
    let f32s = |v: &[f32]| v.iter().map(|x| u64::from(x.to_bits())).collect::<Vec<_>>();
    let (mut v, nan): (Vec<u64>, Vec<u64>) = match ty {
        "f32" => (
            f32s(&[
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -2.5,
                f32::INFINITY,
                f32::NEG_INFINITY,
                1e-45,
                -3e38,
            ]),
            vec![0x7fc0_0000, 0xffc0_0000, 0xffff_ffff, 0x7f80_0001],
        ),
        "f64" => (
            [
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -2.5,
                f64::INFINITY,
                f64::NEG_INFINITY,
                5e-324,
                -1e300,
            ]
            .iter()
            .map(|x: &f64| x.to_bits())
            .collect(),
            vec![
                0x7ff8_0000_0000_0000,
                0xfff8_0000_0000_0000,
                0x7ff0_0000_0000_0001,
            ],
        ),
        "bf16" => (
            vec![
                0, 0x8000, 0x3f80, 0xbf80, 0x3f00, 0xc020, 0x7f80, 0xff80, 0x0001,
            ],
            vec![0x7fc0, 0xffc0, 0xffff, 0x7f81],
        ),
        "f16" => (
            vec![
                0, 0x8000, 0x3c00, 0xbc00, 0x3800, 0xc100, 0x7c00, 0xfc00, 0x0001,
            ],
            vec![0x7e00, 0xfe00, 0xffff, 0x7c01],
        ),
        "pred" => (vec![0, 1], vec![]),
        _ => {
            let bits: u32 = ty[1..].parse().expect("integer width");
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let (lo, hi) = if ty.starts_with('s') {
                (1u64 << (bits - 1), (1u64 << (bits - 1)) - 1)
            } else {
                (0, mask)
            };
            let mut v = vec![lo, hi, 0, 1, mask, 2, 7 & mask];
            v.extend((0..3).map(|_| rng.range(0, 1 << 20) as u64 & mask));
            (v, vec![])
        }
    };
    if nans {
        v.extend(&nan);
    }
    rng.shuffle(&mut v);
    v.truncate(2 + rng.below(v.len() - 1));
    v
}

/// A literal of `ty` and `dims` (row-major) with elements drawn from `pool`.
fn literal(rng: &mut Rng, ty: &str, dims: &[i64], pool: &[u64]) -> Literal {
    let n: i64 = dims.iter().product();
    let bits: Vec<u64> = (0..n).map(|_| *rng.pick(pool)).collect();
    let data = match ty {
        "f32" => ArrayData::F32(bits.iter().map(|&b| f32::from_bits(b as u32)).collect()),
        "f64" => ArrayData::F64(bits.iter().map(|&b| f64::from_bits(b)).collect()),
        "bf16" | "f16" => ArrayData::Bits16(bits.iter().map(|&b| b as u16).collect()),
        "pred" => ArrayData::Pred(bits.iter().map(|&b| b != 0).collect()),
        "s8" => ArrayData::S8(bits.iter().map(|&b| b as i8).collect()),
        "s16" => ArrayData::S16(bits.iter().map(|&b| b as i16).collect()),
        "s32" => ArrayData::S32(bits.iter().map(|&b| b as i32).collect()),
        "s64" => ArrayData::S64(bits.iter().map(|&b| b as i64).collect()),
        "u8" => ArrayData::U8(bits.iter().map(|&b| b as u8).collect()),
        "u16" => ArrayData::U16(bits.iter().map(|&b| b as u16).collect()),
        "u32" => ArrayData::U32(bits.iter().map(|&b| b as u32).collect()),
        "u64" => ArrayData::U64(bits),
        _ => panic!("no literal of {ty}"),
    };
    let et: ElementType = ty.parse().expect("element type");
    Literal::Array(ArrayLiteral::new(Shape::array(et, dims.to_vec()), data).expect("literal"))
}

/// Every leaf of `l` as bit patterns (NaN payloads and the sign of zero included).
pub(crate) fn bits(l: &Literal) -> Vec<Vec<u64>> {
    match l {
        Literal::Tuple(t) => t.iter().flat_map(bits).collect(),
        Literal::Array(a) => vec![match a.data() {
            ArrayData::Pred(v) => v.iter().map(|&x| u64::from(x)).collect(),
            ArrayData::S8(v) => v.iter().map(|&x| x as u64).collect(),
            ArrayData::S16(v) => v.iter().map(|&x| x as u64).collect(),
            ArrayData::S32(v) => v.iter().map(|&x| x as u64).collect(),
            ArrayData::S64(v) => v.iter().map(|&x| x as u64).collect(),
            ArrayData::U8(v) => v.iter().map(|&x| u64::from(x)).collect(),
            ArrayData::U16(v) => v.iter().map(|&x| u64::from(x)).collect(),
            ArrayData::U32(v) => v.iter().map(|&x| u64::from(x)).collect(),
            ArrayData::U64(v) => v.clone(),
            ArrayData::Bits16(v) => v.iter().map(|&x| u64::from(x)).collect(),
            ArrayData::Bits8(v) => v.iter().map(|&x| u64::from(x)).collect(),
            ArrayData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            ArrayData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            ArrayData::C64(v) => v
                .iter()
                .flat_map(|c| c.map(|x| u64::from(x.to_bits())))
                .collect(),
            ArrayData::C128(v) => v.iter().flat_map(|c| c.map(f64::to_bits)).collect(),
        }],
        _ => vec![],
    }
}

fn is_float(ty: &str) -> bool {
    matches!(ty, "f32" | "f64" | "bf16" | "f16")
}

/// How a comparator reads one operand's pair of elements.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Style {
    /// The parameters themselves (floats IEEE-ordered, or total order if `total`).
    Plain { total: bool },
    /// JAX's canonicalization (NaNs to one NaN, -0 to +0), total order.
    Jax,
    /// The float's bits as a signed integer with negative magnitudes flipped (XLA's
    /// expansion of a total-order compare), canonicalized first if `canonical`.
    Bits { canonical: bool, op: &'static str },
}

/// The instructions reading operand `i`'s elements (parameters `a{i}`, `b{i}` of `ty`)
/// in `style`, and the names of the two sides.
fn sides(i: usize, ty: &str, style: Style) -> (Vec<String>, [String; 2]) {
    let mut lines = Vec::new();
    let mut names = [format!("a{i}"), format!("b{i}")];
    let canonical = matches!(
        style,
        Style::Jax
            | Style::Bits {
                canonical: true,
                ..
            }
    );
    if canonical {
        lines.push(format!("  nan{i} = {ty}[] constant(nan)"));
        lines.push(format!("  zero{i} = {ty}[] constant(0)"));
        for s in &mut names {
            lines.push(format!("  {s}_ne = pred[] compare({s}, {s}), direction=NE"));
            lines.push(format!(
                "  {s}_eq = pred[] compare({s}, zero{i}), direction=EQ"
            ));
            lines.push(format!("  {s}_z = {ty}[] select({s}_eq, zero{i}, {s})"));
            lines.push(format!("  {s}_c = {ty}[] select({s}_ne, nan{i}, {s}_z)"));
            *s = format!("{s}_c");
        }
    }
    if let Style::Bits { op, .. } = style {
        let w = match ty {
            "f64" => 64,
            "f32" => 32,
            _ => 16,
        };
        let max = (1u64 << (w - 1)) - 1;
        lines.push(format!("  max{i} = s{w}[] constant({max})"));
        lines.push(format!("  izero{i} = s{w}[] constant(0)"));
        for s in &mut names {
            lines.push(format!("  {s}_b = s{w}[] {op}({s})"));
            lines.push(format!("  {s}_x = s{w}[] xor(max{i}, {s}_b)"));
            lines.push(format!(
                "  {s}_n = pred[] compare({s}_b, izero{i}), direction=LT"
            ));
            lines.push(format!("  {s}_t = s{w}[] select({s}_n, {s}_x, {s}_b)"));
            *s = format!("{s}_t");
        }
    }
    (lines, names)
}

/// A compare of operand `i`'s sides: `dir` (`LT`, `GT`, `EQ`, ...) with the sides
/// swapped if `swap`, total order where the style compares floats in it.
fn key_compare(
    name: &str,
    sides: &[String; 2],
    ty: &str,
    style: Style,
    dir: &str,
    swap: bool,
) -> String {
    let (l, r) = if swap {
        (&sides[1], &sides[0])
    } else {
        (&sides[0], &sides[1])
    };
    let total = match style {
        Style::Plain { total } => total && is_float(ty),
        Style::Jax => true,
        Style::Bits { .. } => false,
    };
    let t = if total { ", type=TOTALORDER" } else { "" };
    format!("  {name} = pred[] compare({l}, {r}), direction={dir}{t}")
}

/// A random style for a key of `ty`.
fn style(rng: &mut Rng, ty: &str) -> Style {
    if !is_float(ty) {
        return Style::Plain { total: false };
    }
    match rng.below(5) {
        0 => Style::Plain { total: false },
        1 => Style::Plain { total: true },
        2 => Style::Jax,
        _ => Style::Bits {
            canonical: rng.below(2) == 0,
            op: if rng.below(2) == 0 {
                "bitcast-convert"
            } else {
                "bitcast"
            },
        },
    }
}

/// The direction of a strict compare making a key descending or not, sides swapped or
/// not.
fn strict(desc: bool, swap: bool) -> &'static str {
    if desc != swap {
        "GT"
    } else {
        "LT"
    }
}

/// The library calls' recognized orders in `p` (one flag per sort or top-k).
fn recognized(p: &plan::Program) -> Vec<bool> {
    use plan::{LibraryCall, Thunk};
    p.thunks
        .iter()
        .filter_map(|t| match t {
            Thunk::Library {
                call: LibraryCall::Sort { order, .. } | LibraryCall::TopK { order, .. },
                ..
            } => Some(order.is_some()),
            _ => None,
        })
        .collect()
}

/// Compiles and runs `text` on `args`, compares every output with the evaluator's bit
/// for bit and checks that the sort or top-k's comparator was recognized as `keys` says
/// (`None`: the passes may remove it, a sort of lines of one element).
fn check_bits(
    seed: u64,
    text: &str,
    args: &[Literal],
    keys: Option<bool>,
    failures: &mut Vec<String>,
) {
    let m = gen::parse(seed, text);
    let result = runtime::compile(&m, &gen::options("hloc-cache-key-sorts"))
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            let got = recognized(&exe.plan().program);
            if keys.is_some_and(|k| got != [k]) {
                return Err(format!("recognized {got:?}, expected {keys:?}"));
            }
            exe.run(args).map_err(|e| e.to_string())
        })
        .and_then(|outs| {
            let want = hlo_eval::evaluate(&m, args).map_err(|e| format!("evaluator: {e}"))?;
            let got: Vec<Vec<u64>> = outs.iter().flat_map(bits).collect();
            let want = bits(&want);
            match got.iter().zip(&want).position(|(g, w)| g != w) {
                None if got.len() == want.len() => Ok(()),
                None => Err(format!(
                    "{} outputs, the evaluator's {}",
                    got.len(),
                    want.len()
                )),
                Some(o) => {
                    let e = got[o].iter().zip(&want[o]).position(|(g, w)| g != w);
                    Err(format!(
                        "out{o} differs at element {e:?}: {:x?} vs {:x?}",
                        got[o], want[o]
                    ))
                }
            }
        });
    if let Err(e) = result {
        failures.push(format!("seed {seed}: {e}\n{text}"));
    }
}

/// A random sort over typed keys: one key operand (any element type, in every comparator
/// style: plain, total order, JAX's canonicalized, XLA's bits) or two (lexicographic, as
/// `lax.sort(num_keys=2)` emits), payload operands, ascending or descending with the
/// sides either way round, stable or not; or a comparator that is no key order (`LE`,
/// which only the comparator path sorts). Returns the text, the arguments and whether
/// the comparator should be recognized (`None` where the sort may be removed).
pub(crate) fn key_sort(seed: u64) -> (String, Vec<Literal>, Option<bool>) {
    key_sort_of(seed, &[1, 2, 5, 17, 64, 300, 700, 5000], seed % 16 == 7)
}

/// [`key_sort`] with the sorted dimension's extent drawn from `lengths`, or one row of
/// 70,000 elements where `radix`.
pub(crate) fn key_sort_of(
    seed: u64,
    lengths: &[i64],
    radix: bool,
) -> (String, Vec<Literal>, Option<bool>) {
    let mut rng = Rng::new(seed);
    let rank = 1 + rng.below(3);
    let mut d = rng.below(rank);
    let mut dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 4)).collect();
    dims[d] = *rng.pick(lengths);
    if radix {
        // Long enough for the radix sort's wider digits.
        (dims, d) = (vec![70_000], 0);
    }
    let key_types = [
        "f32", "f64", "bf16", "f16", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "pred",
    ];
    let key = *rng.pick(&key_types);
    let two_keys = rng.below(4) == 0;
    let n_ops = usize::from(two_keys) + 1 + rng.below(3);
    let mut tys = vec![key];
    if two_keys {
        tys.push(*rng.pick(&key_types));
    }
    while tys.len() < n_ops {
        tys.push(*rng.pick(&["s32", "f32", "u8", "f64", "bf16"]));
    }
    let nans = rng.below(3) != 0;
    let mut params = Vec::new();
    for (i, t) in tys.iter().enumerate() {
        params.push(format!("  a{i} = {t}[] parameter({})", 2 * i));
        params.push(format!("  b{i} = {t}[] parameter({})", 2 * i + 1));
    }
    let opaque = rng.below(8) == 0;
    let mut body = Vec::new();
    let s0 = style(&mut rng, tys[0]);
    let (lines0, sides0) = sides(0, tys[0], s0);
    body.extend(lines0);
    let (desc0, swap0) = (rng.below(2) == 0, rng.below(2) == 0);
    if opaque {
        body.push(key_compare("ROOT r", &sides0, tys[0], s0, "LE", swap0));
    } else if two_keys {
        let s1 = style(&mut rng, tys[1]);
        let (lines1, sides1) = sides(1, tys[1], s1);
        body.extend(lines1);
        let (desc1, swap1) = (rng.below(2) == 0, rng.below(2) == 0);
        body.push(key_compare(
            "lt0",
            &sides0,
            tys[0],
            s0,
            strict(desc0, swap0),
            swap0,
        ));
        body.push(key_compare(
            "eq0",
            &sides0,
            tys[0],
            s0,
            "EQ",
            rng.below(2) == 0,
        ));
        body.push(key_compare(
            "lt1",
            &sides1,
            tys[1],
            s1,
            strict(desc1, swap1),
            swap1,
        ));
        body.push("  tie = pred[] and(eq0, lt1)".into());
        body.push("  ROOT r = pred[] or(lt0, tie)".into());
    } else {
        body.push(key_compare(
            "ROOT r",
            &sides0,
            tys[0],
            s0,
            strict(desc0, swap0),
            swap0,
        ));
    }
    let ins: Vec<String> = tys
        .iter()
        .enumerate()
        .map(|(i, t)| format!("  x{i} = {} parameter({i})", shape(&mut rng, t, &dims)))
        .collect();
    let outs: Vec<String> = tys.iter().map(|t| shape(&mut rng, t, &dims)).collect();
    let names: Vec<String> = (0..n_ops).map(|i| format!("x{i}")).collect();
    let root_shape = if n_ops == 1 {
        outs[0].clone()
    } else {
        format!("({})", outs.join(", "))
    };
    let stable = if rng.below(2) == 0 {
        ", is_stable=true"
    } else {
        ""
    };
    let text = format!(
        "HloModule s\ncmp {{\n{}\n{}\n}}\nENTRY e {{\n{}\n  ROOT s = {root_shape} sort({}), dimensions={{{d}}}{stable}, to_apply=cmp\n}}\n",
        params.join("\n"),
        body.join("\n"),
        ins.join("\n"),
        names.join(", "),
    );
    let args = tys
        .iter()
        .map(|t| {
            let p = pool(&mut rng, t, nans);
            literal(&mut rng, t, &dims, &p)
        })
        .collect();
    (text, args, (dims[d] > 1).then_some(!opaque))
}

#[test]
fn random_key_sorts_match_the_reference_evaluator_bit_for_bit() {
    let mut failures = Vec::new();
    for seed in gen::seeds(0..48) {
        let (text, args, keys) = key_sort(seed);
        check_bits(seed, &text, &args, keys, &mut failures);
    }
    gen::assert_none(&failures);
}

/// A random top-k over the last dimension: the `topk` opcode (largest or smallest first)
/// or XLA's `TopK` custom call with a comparator over values (and indices): XLA's bits
/// form, IEEE or total order, JAX's canonicalization, an index tie-break, or `GE` (no key
/// order: the comparator path). `k` from 1 to the row length; rows long enough for the
/// heap selection.
pub(crate) fn key_topk(seed: u64) -> (String, Vec<Literal>, bool) {
    key_topk_of(seed, &[1, 3, 16, 100, 700, 3000])
}

/// [`key_topk`] with the row length drawn from `lengths`.
pub(crate) fn key_topk_of(seed: u64, lengths: &[i64]) -> (String, Vec<Literal>, bool) {
    let mut rng = Rng::new(seed);
    let rank = 1 + rng.below(3);
    let mut dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 4)).collect();
    let n = *rng.pick(lengths);
    dims[rank - 1] = n;
    let k = match rng.below(4) {
        0 => 1,
        1 => n,
        2 => n.min(5),
        _ => rng.range(1, n),
    };
    let ty = *rng.pick(&[
        "f32", "f64", "bf16", "f16", "s32", "u32", "s64", "u8", "s8", "u64",
    ]);
    let nans = rng.below(3) != 0;
    let mut out_dims = dims.clone();
    out_dims[rank - 1] = k;
    let x = shape(&mut rng, ty, &dims);
    let (vs, is) = (
        shape(&mut rng, ty, &out_dims),
        shape(&mut rng, "s32", &out_dims),
    );
    let opcode = rng.below(3) == 0;
    let (text, keys) = if opcode {
        let largest = rng.below(2) == 0;
        (
            format!(
                "HloModule t\nENTRY e {{\n  x = {x} parameter(0)\n  ROOT t = ({vs}, {is}) topk(x), k={k}, largest={largest}\n}}\n"
            ),
            true,
        )
    } else {
        let s = style(&mut rng, ty);
        let (lines, sides) = sides(0, ty, s);
        let swap = rng.below(2) == 0;
        let four = rng.below(2) == 0;
        let mut body = lines;
        let form = rng.below(4);
        let keys = form != 0;
        match form {
            0 => body.push(key_compare("ROOT r", &sides, ty, s, "GE", swap)),
            1 => {
                body.push(key_compare("gt", &sides, ty, s, strict(true, swap), swap));
                body.push(key_compare("eq", &sides, ty, s, "EQ", false));
                body.push("  lt = pred[] compare(a1, b1), direction=LT".into());
                body.push("  tie = pred[] and(eq, lt)".into());
                body.push("  ROOT r = pred[] or(gt, tie)".into());
            }
            _ => body.push(key_compare(
                "ROOT r",
                &sides,
                ty,
                s,
                strict(true, swap),
                swap,
            )),
        }
        let four = four || form == 1;
        let params = if four {
            format!("  a0 = {ty}[] parameter(0)\n  b0 = {ty}[] parameter(1)\n  a1 = s32[] parameter(2)\n  b1 = s32[] parameter(3)")
        } else {
            format!("  a0 = {ty}[] parameter(0)\n  b0 = {ty}[] parameter(1)")
        };
        (
            format!(
                "HloModule t\ncmp {{\n{params}\n{}\n}}\nENTRY e {{\n  x = {x} parameter(0)\n  \
                 ROOT t = ({vs}, {is}) custom-call(x), custom_call_target=\"TopK\", called_computations={{cmp}}\n}}\n",
                body.join("\n")
            ),
            keys,
        )
    };
    let p = pool(&mut rng, ty, nans);
    let args = vec![literal(&mut rng, ty, &dims, &p)];
    (text, args, keys)
}

#[test]
fn random_top_ks_match_the_reference_evaluator_bit_for_bit() {
    let mut failures = Vec::new();
    for seed in gen::seeds(0..48) {
        let (text, args, keys) = key_topk(seed);
        check_bits(seed, &text, &args, Some(keys), &mut failures);
    }
    gen::assert_none(&failures);
}
