//! `sort` and top-k: multi-operand sorts with comparator computations, stability, total
//! order with NaN, and the permutation/order properties.

use crate::support;

use hlo::literal::ArrayData;
use hlo::Literal;
use support::*;

const SORT2: &str = "HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  k = f32[2,4] parameter(0)
  v = s32[2,4] parameter(1)
  ROOT s = (f32[2,4], s32[2,4]) sort(k, v), dimensions={1}, is_stable=true, to_apply=cmp
}";

#[test]
fn sorts_keys_and_values_along_a_dimension_stably() {
    let k = f32s("f32[2,4]", &[3., 1., 2., 1., 0., -1., 0., -2.]);
    let v = s32s("s32[2,4]", &[0, 1, 2, 3, 4, 5, 6, 7]);
    let r = eval_root(SORT2, &[k, v]).unwrap();
    assert_eq!(get_f32(part(&r, 0)), vec![1., 1., 2., 3., -2., -1., 0., 0.]);
    // Equal keys keep their order: 1 before 3, 4 before 6.
    assert_eq!(get_s32(part(&r, 1)), vec![1, 3, 2, 0, 7, 5, 4, 6]);
}

#[test]
fn sorts_along_the_outer_dimension() {
    let text = "HloModule m
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY e {
  k = s32[3,2] parameter(0)
  ROOT s = s32[3,2] sort(k), dimensions={0}, to_apply=cmp
}";
    let r = eval_root(text, &[s32s("s32[3,2]", &[1, 5, 3, 4, 2, 6])]).unwrap();
    assert_eq!(get_s32(&r), vec![3, 6, 2, 5, 1, 4]);
}

#[test]
fn total_order_comparator_places_nans() {
    let text = "HloModule m
cmp {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  k = f64[6] parameter(0)
  ROOT s = f64[6] sort(k), dimensions={0}, to_apply=cmp
}";
    let k = arr(
        "f64[6]",
        ArrayData::F64(vec![f64::NAN, 1.0, -0.0, 0.0, f64::NEG_INFINITY, -f64::NAN]),
    );
    let r = eval_root(text, &[k]).unwrap();
    let ArrayData::F64(v) = r.as_array().unwrap().data() else {
        panic!()
    };
    assert!(v[0].is_nan() && v[0].is_sign_negative());
    assert_eq!(v[1], f64::NEG_INFINITY);
    assert!(v[2] == 0.0 && v[2].is_sign_negative());
    assert!(v[3] == 0.0 && v[3].is_sign_positive());
    assert_eq!(v[4], 1.0);
    assert!(v[5].is_nan() && v[5].is_sign_positive());
}

#[test]
fn topk_takes_largest_with_lower_index_first_on_ties() {
    let text = "HloModule m
ENTRY e {
  x = f32[2,5] parameter(0)
  ROOT t = (f32[2,3], s32[2,3]) topk(x), k=3, largest=true
}";
    let x = f32s("f32[2,5]", &[1., 5., 3., 5., 2., f32::NAN, 0., -1., 7., 7.]);
    let r = eval_root(text, &[x]).unwrap();
    let vals = get_f32(part(&r, 0));
    assert_eq!(&vals[..3], &[5., 5., 3.]);
    assert!(vals[3].is_nan());
    assert_eq!(&vals[4..], &[7., 7.]);
    assert_eq!(get_s32(part(&r, 1)), vec![1, 3, 2, 0, 3, 4]);
}

#[test]
fn topk_custom_call_uses_its_comparator() {
    let text = "HloModule m
gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT g = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[1,4] parameter(0)
  ROOT t = (f32[1,2], s32[1,2]) custom-call(x), custom_call_target=\"TopK\", called_computations={gt}
}";
    let r = eval_root(text, &[f32s("f32[1,4]", &[2., 9., 4., 9.])]).unwrap();
    assert_eq!(get_f32(part(&r, 0)), vec![9., 9.]);
    assert_eq!(get_s32(part(&r, 1)), vec![1, 3]);
}

/// Sorting random keys with a values operand gives an ordered permutation that keeps
/// equal keys in input order.
fn sort_is_stable_ordered_permutation(keys: Vec<i8>) -> bool {
    let n = keys.len().max(1);
    let mut k: Vec<i32> = keys.iter().map(|&x| i32::from(x % 4)).collect();
    k.resize(n, 0);
    let idx: Vec<i32> = (0..n as i32).collect();
    let text = SORT2
        .replace("f32", "s32")
        .replace("[2,4]", &format!("[{n}]"))
        .replace("dimensions={1}", "dimensions={0}");
    let r = eval_root(
        &text,
        &[
            s32s(&format!("s32[{n}]"), &k),
            s32s(&format!("s32[{n}]"), &idx),
        ],
    )
    .unwrap();
    let (sk, sv) = (get_s32(part(&r, 0)), get_s32(part(&r, 1)));
    let mut seen = sv.clone();
    seen.sort();
    seen == idx
        && sv.iter().zip(&sk).all(|(&i, &key)| k[i as usize] == key)
        && sk
            .windows(2)
            .zip(sv.windows(2))
            .all(|(kw, vw)| kw[0] < kw[1] || (kw[0] == kw[1] && vw[0] < vw[1]))
}

#[test]
fn random_sorts_are_stable_ordered_permutations() {
    quickcheck::QuickCheck::new()
        .tests(100)
        .quickcheck(sort_is_stable_ordered_permutation as fn(Vec<i8>) -> bool);
}

/// JAX's float comparator: NaNs canonicalised, -0 made 0, then a total-order `LT`.
const JAX_SORT: &str = "HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  na = pred[] compare(a, a), direction=NE
  za = pred[] compare(a, zero), direction=EQ
  a0 = f32[] select(za, zero, a)
  a1 = f32[] select(na, nan, a0)
  nb = pred[] compare(b, b), direction=NE
  zb = pred[] compare(b, zero), direction=EQ
  b0 = f32[] select(zb, zero, b)
  b1 = f32[] select(nb, nan, b0)
  ROOT lt = pred[] compare(a1, b1), direction=LT, type=TOTALORDER
  EXTRA
}
ENTRY e {
  k = f32[LEN] parameter(0)
  v = s32[LEN] parameter(1)
  ROOT s = (f32[LEN], s32[LEN]) sort(k, v), dimensions={0}, is_stable=true, to_apply=cmp
}";

/// The native comparator and the called computation order the same way.
fn native_comparator_matches_calls(keys: Vec<i8>) -> bool {
    let n = keys.len().max(1);
    let mut k: Vec<f32> = keys
        .iter()
        .map(|&x| match x % 7 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => -f32::NAN,
            _ => f32::from(x) / 4.0,
        })
        .collect();
    k.resize(n, 1.0);
    let v: Vec<i32> = (0..n as i32).collect();
    let args = [
        f32s(&format!("f32[{n}]"), &k),
        s32s(&format!("s32[{n}]"), &v),
    ];
    let native = hlo::parse_module(
        &JAX_SORT
            .replace("LEN", &n.to_string())
            .replace("  EXTRA\n", ""),
    )
    .unwrap();
    // An unused tuple keeps the comparator from compiling natively.
    let called = hlo::parse_module(
        &JAX_SORT
            .replace("LEN", &n.to_string())
            .replace("EXTRA", "unused = (pred[]) tuple(lt)"),
    )
    .unwrap();
    let (a, native_calls) = eval_root_of(&native, &args);
    let (b, calls) = eval_root_of(&called, &args);
    let (a, b) = (a.unwrap(), b.unwrap());
    let bits = |l: &Literal| {
        get_f32(part(l, 0))
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    };
    native_calls == 0
        && (n < 2 || calls > 0)
        && bits(&a) == bits(&b)
        && get_s32(part(&a, 1)) == get_s32(part(&b, 1))
}

#[test]
fn native_comparators_match_called_ones() {
    quickcheck::QuickCheck::new()
        .tests(100)
        .quickcheck(native_comparator_matches_calls as fn(Vec<i8>) -> bool);
}

#[test]
fn topk_smallest() {
    let text = "HloModule m
ENTRY e {
  x = s32[6] parameter(0)
  ROOT t = (s32[3], s32[3]) topk(x), k=3, largest=false
}";
    let r = eval_root(text, &[s32s("s32[6]", &[5, -1, 3, -1, 0, 9])]).unwrap();
    assert_eq!(get_s32(part(&r, 0)), vec![-1, -1, 0]);
    assert_eq!(get_s32(part(&r, 1)), vec![1, 3, 4]);
}
