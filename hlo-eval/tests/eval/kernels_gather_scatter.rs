//! `gather` and `scatter`: row gathers, clamping, batching dimensions, scatter with
//! duplicate indices, replacement, out-of-bounds windows, variadic updates; gathering
//! an iota gives the (clamped) indices back.

use crate::support;

use support::*;

#[test]
fn gathers_rows_with_clamping() {
    let text = "HloModule m
ENTRY e {
  x = f32[4,2] parameter(0)
  i = s32[3] parameter(1)
  ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
}";
    let x = f32s("f32[4,2]", &[0., 1., 10., 11., 20., 21., 30., 31.]);
    let r = eval_root(text, &[x, s32s("s32[3]", &[2, -1, 7])]).unwrap();
    assert_eq!(get_f32(&r), vec![20., 21., 0., 1., 30., 31.]);
}

#[test]
fn gathers_windows_clamped_to_fit() {
    // 2-D start indices with the index vector in dimension 0.
    let text = "HloModule m
ENTRY e {
  x = s32[3,3] parameter(0)
  i = s32[2,2] parameter(1)
  ROOT g = s32[2,2,2] gather(x, i), offset_dims={0,1}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=0, slice_sizes={2,2}
}";
    let x = s32s("s32[3,3]", &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // Columns of i are index vectors: (0,0) and (2,5) -> clamped to (1,1).
    let r = eval_root(text, &[x, s32s("s32[2,2]", &[0, 2, 0, 5])]).unwrap();
    // Output dims: [window0, window1, batch].
    assert_eq!(get_s32(&r), vec![0, 4, 1, 5, 3, 7, 4, 8]);
}

#[test]
fn gather_with_batching_dims() {
    // take_along_axis style: out[b, k] = x[b, idx[b, k]]
    let text = "HloModule m
ENTRY e {
  x = s32[2,3] parameter(0)
  i = s32[2,2,1] parameter(1)
  ROOT g = s32[2,2] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}
}";
    let x = s32s("s32[2,3]", &[0, 1, 2, 10, 11, 12]);
    let r = eval_root(text, &[x, s32s("s32[2,2,1]", &[2, 0, 1, 1])]).unwrap();
    assert_eq!(get_s32(&r), vec![2, 0, 11, 11]);
}

/// Gathering single elements of an iota returns the clamped indices.
fn gather_of_iota_is_indices(n: u8, idx: Vec<i16>) -> bool {
    let n = usize::from(n % 9) + 1;
    let m = idx.len();
    let text = format!("HloModule m
ENTRY e {{
  x = s32[{n}] parameter(0)
  i = s32[{m}] parameter(1)
  ROOT g = s32[{m}] gather(x, i), offset_dims={{}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1}}
}}");
    let iota: Vec<i32> = (0..n as i32).collect();
    let iv: Vec<i32> = idx.iter().map(|&x| i32::from(x)).collect();
    let r = eval_root(
        &text,
        &[
            s32s(&format!("s32[{n}]"), &iota),
            s32s(&format!("s32[{m}]"), &iv),
        ],
    )
    .unwrap();
    get_s32(&r)
        == iv
            .iter()
            .map(|&i| i.clamp(0, n as i32 - 1))
            .collect::<Vec<_>>()
}

#[test]
fn random_gathers_of_iota() {
    quickcheck::QuickCheck::new()
        .tests(100)
        .quickcheck(gather_of_iota_is_indices as fn(u8, Vec<i16>) -> bool);
}

const ADD: &str = "add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}";

#[test]
fn scatter_add_with_duplicates_and_out_of_bounds() {
    let text = format!("HloModule m
{ADD}
ENTRY e {{
  x = f32[3,2] parameter(0)
  i = s32[4] parameter(1)
  u = f32[4,2] parameter(2)
  ROOT s = f32[3,2] scatter(x, i, u), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add
}}");
    let x = f32s("f32[3,2]", &[0.; 6]);
    let u = f32s("f32[4,2]", &[1., 2., 3., 4., 5., 6., 7., 8.]);
    // Index 1 twice; 3 and -1 are out of bounds (skipped, not clamped).
    let r = eval_root(&text, &[x, s32s("s32[4]", &[1, 1, 3, -1]), u]).unwrap();
    assert_eq!(get_f32(&r), vec![0., 0., 4., 6., 0., 0.]);
}

#[test]
fn scatter_skips_windows_that_do_not_fit() {
    let text = format!("HloModule m
{ADD}
ENTRY e {{
  x = f32[4] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2,2] parameter(2)
  ROOT s = f32[4] scatter(x, i, u), update_window_dims={{1}}, inserted_window_dims={{}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add
}}");
    let r = eval_root(
        &text,
        &[
            f32s("f32[4]", &[0.; 4]),
            s32s("s32[2,1]", &[2, 3]),
            f32s("f32[2,2]", &[1., 2., 3., 4.]),
        ],
    )
    .unwrap();
    // Window at 3 would cover 3..5: skipped entirely.
    assert_eq!(get_f32(&r), vec![0., 0., 1., 2.]);
}

#[test]
fn scatter_set_and_general_computation() {
    let set = "HloModule m
set {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY e {
  x = f32[3] parameter(0)
  i = s32[2] parameter(1)
  u = f32[2] parameter(2)
  ROOT s = f32[3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set
}";
    let args = [
        f32s("f32[3]", &[1., 2., 3.]),
        s32s("s32[2]", &[2, 0]),
        f32s("f32[2]", &[9., 8.]),
    ];
    assert_eq!(get_f32(&eval_root(set, &args).unwrap()), vec![8., 2., 9.]);
    // a - b is no simple reducer: goes through the computation.
    let sub = set.replace(
        "ROOT b = f32[] parameter(1)",
        "b = f32[] parameter(1)\n  ROOT d = f32[] subtract(a, b)",
    );
    assert_eq!(
        get_f32(&eval_root(&sub, &args).unwrap()),
        vec![-7., 2., -6.]
    );
}

#[test]
fn variadic_scatter() {
    let text = "HloModule m
both {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(a, c)
  m = s32[] maximum(b, d)
  ROOT t = (f32[], s32[]) tuple(s, m)
}
ENTRY e {
  x = f32[2] parameter(0)
  y = s32[2] parameter(1)
  i = s32[3] parameter(2)
  u = f32[3] parameter(3)
  v = s32[3] parameter(4)
  ROOT s = (f32[2], s32[2]) scatter(x, y, i, u, v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=both
}";
    let r = eval_root(
        text,
        &[
            f32s("f32[2]", &[0., 0.]),
            s32s("s32[2]", &[0, 0]),
            s32s("s32[3]", &[1, 1, 0]),
            f32s("f32[3]", &[1., 2., 3.]),
            s32s("s32[3]", &[5, 4, -1]),
        ],
    )
    .unwrap();
    assert_eq!(get_f32(part(&r, 0)), vec![3., 3.]);
    assert_eq!(get_s32(part(&r, 1)), vec![0, 5]);
}

/// Scatter-adding ones at random indices counts them (out-of-range ones are dropped).
fn scatter_add_counts(n: u8, idx: Vec<i8>) -> bool {
    let n = usize::from(n % 7) + 1;
    let m = idx.len();
    let text = format!("HloModule m
add {{
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}}
ENTRY e {{
  x = s32[{n}] parameter(0)
  i = s32[{m}] parameter(1)
  u = s32[{m}] parameter(2)
  ROOT s = s32[{n}] scatter(x, i, u), update_window_dims={{}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add
}}");
    let iv: Vec<i32> = idx.iter().map(|&x| i32::from(x % 10)).collect();
    let r = eval_root(
        &text,
        &[
            s32s(&format!("s32[{n}]"), &vec![0; n]),
            s32s(&format!("s32[{m}]"), &iv),
            s32s(&format!("s32[{m}]"), &vec![1; m]),
        ],
    )
    .unwrap();
    let mut want = vec![0; n];
    for &i in &iv {
        if i >= 0 && (i as usize) < n {
            want[i as usize] += 1;
        }
    }
    get_s32(&r) == want
}

#[test]
fn random_scatter_adds_are_histograms() {
    quickcheck::QuickCheck::new()
        .tests(100)
        .quickcheck(scatter_add_counts as fn(u8, Vec<i8>) -> bool);
}
