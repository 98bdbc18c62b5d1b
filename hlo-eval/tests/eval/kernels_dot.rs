//! `dot` kernel: hand-computed cases, mixed precision, integers, complex, and a
//! quickcheck property against a naive loop for random dimension numbers.

use crate::support;

use hlo::literal::ArrayData;
use support::*;

#[test]
fn matrix_product() {
    let text = "HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let a = f32s("f32[2,3]", &[1., 2., 3., 4., 5., 6.]);
    let b = f32s("f32[3,2]", &[7., 8., 9., 10., 11., 12.]);
    let r = eval_root(text, &[a, b]).unwrap();
    assert_eq!(get_f32(&r), vec![58., 64., 139., 154.]);
}

#[test]
fn batch_and_transposed_contraction() {
    // out[b, i, j] = sum_k a[k, b, i] * c[b, j, k]
    let text = "HloModule m
ENTRY e {
  a = f32[2,2,1] parameter(0)
  c = f32[2,3,2] parameter(1)
  ROOT d = f32[2,1,3] dot(a, c), lhs_batch_dims={1}, lhs_contracting_dims={0}, rhs_batch_dims={0}, rhs_contracting_dims={2}
}";
    let a = f32s("f32[2,2,1]", &[1., 2., 3., 4.]); // a[k,b,0]: k0 -> (1,2), k1 -> (3,4)
    let c = f32s(
        "f32[2,3,2]",
        &[1., 0., 0., 1., 1., 1., 2., 0., 0., 2., 1., -1.],
    );
    let r = eval_root(text, &[a, c]).unwrap();
    // b=0: a(k)= (1,3); c rows (1,0),(0,1),(1,1) -> 1, 3, 4
    // b=1: a(k)= (2,4); c rows (2,0),(0,2),(1,-1) -> 4, 8, -2
    assert_eq!(get_f32(&r), vec![1., 3., 4., 4., 8., -2.]);
}

#[test]
fn bf16_accumulates_in_f32_and_rounds_once() {
    // 1 + 2^-8 * 4 terms: each product 2^-8 alone would be lost in bf16 accumulation
    // (ulp of 1 is 2^-7), but in f32 they add up to 2^-6.
    let text = "HloModule m
ENTRY e {
  a = bf16[1,5] parameter(0)
  b = bf16[5,1] parameter(1)
  ROOT d = bf16[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let one = 0x3f80u16;
    let tiny = 0x3b80u16; // 2^-8
    let a = arr(
        "bf16[1,5]",
        ArrayData::Bits16(vec![one, tiny, tiny, tiny, tiny]),
    );
    let b = arr("bf16[5,1]", ArrayData::Bits16(vec![one; 5]));
    let r = eval_root(text, &[a, b]).unwrap();
    // 1 + 2^-6 = 0x3f82 in bf16.
    assert_eq!(
        r.as_array().unwrap().data(),
        &ArrayData::Bits16(vec![0x3f82])
    );
}

#[test]
fn mixed_precision_result_type() {
    let text = "HloModule m
ENTRY e {
  a = bf16[1,2] parameter(0)
  b = bf16[2,1] parameter(1)
  ROOT d = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let a = arr("bf16[1,2]", ArrayData::Bits16(vec![0x3f80, 0x3b80]));
    let b = arr("bf16[2,1]", ArrayData::Bits16(vec![0x3f80, 0x3f80]));
    let r = eval_root(text, &[a, b]).unwrap();
    assert_eq!(get_f32(&r), vec![1.0 + 1.0 / 256.0]);
}

#[test]
fn integers_wrap() {
    let text = "HloModule m
ENTRY e {
  a = s8[1,2] parameter(0)
  b = s8[2,1] parameter(1)
  ROOT d = s32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let a = arr("s8[1,2]", ArrayData::S8(vec![-128, 127]));
    let b = arr("s8[2,1]", ArrayData::S8(vec![-128, 127]));
    let r = eval_root(text, &[a, b]).unwrap();
    assert_eq!(get_s32(&r), vec![16384 + 16129]);
    let text32 = "HloModule m
ENTRY e {
  a = s32[2] parameter(0)
  b = s32[2] parameter(1)
  ROOT d = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}";
    let r = eval_root(
        text32,
        &[s32s("s32[2]", &[65536, 1]), s32s("s32[2]", &[65536, 5])],
    )
    .unwrap();
    assert_eq!(get_s32(&r), vec![5]); // 2^32 wraps to 0
}

#[test]
fn complex_product() {
    let text = "HloModule m
ENTRY e {
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT d = c64[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}";
    let a = arr("c64[2]", ArrayData::C64(vec![[1., 2.], [0., 1.]]));
    let b = arr("c64[2]", ArrayData::C64(vec![[3., -1.], [0., 1.]]));
    let r = eval_root(text, &[a, b]).unwrap();
    // (1+2i)(3-i) = 5+5i; i*i = -1 -> 4+5i
    assert_eq!(
        r.as_array().unwrap().data(),
        &ArrayData::C64(vec![[4., 5.]])
    );
}

#[test]
fn mismatched_contracting_sizes_are_an_error() {
    let text = "HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[2,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let r = eval_root(
        text,
        &[f32s("f32[2,3]", &[0.; 6]), f32s("f32[2,2]", &[0.; 4])],
    );
    assert!(r.is_err());
}

/// A deterministic stream of small numbers.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
    fn shuffle(&mut self, v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            let j = self.next(i + 1);
            v.swap(i, j);
        }
    }
}

fn list(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Random dimension numbers: the kernel matches a naive loop over the output and the
/// contraction (integer values, so the comparison is exact).
fn dot_matches_naive(seed: u64) -> bool {
    let mut g = Lcg(seed);
    let (nb, nc, nlf, nrf) = (g.next(3), g.next(3), g.next(3), g.next(3));
    let size = |g: &mut Lcg| 1 + g.next(3);
    let bsz: Vec<usize> = (0..nb).map(|_| size(&mut g)).collect();
    let csz: Vec<usize> = (0..nc).map(|_| size(&mut g)).collect();
    let lfsz: Vec<usize> = (0..nlf).map(|_| size(&mut g)).collect();
    let rfsz: Vec<usize> = (0..nrf).map(|_| size(&mut g)).collect();
    // Roles of lhs positions: 0..nb batch, nb..nb+nc contracting, then free.
    let mut lpos: Vec<usize> = (0..nb + nc + nlf).collect();
    let mut rpos: Vec<usize> = (0..nb + nc + nrf).collect();
    g.shuffle(&mut lpos);
    g.shuffle(&mut rpos);
    // lpos[role] = dimension of that role.
    let ldims_role: Vec<usize> = bsz.iter().chain(&csz).chain(&lfsz).copied().collect();
    let rdims_role: Vec<usize> = bsz.iter().chain(&csz).chain(&rfsz).copied().collect();
    let mut ldims = vec![0; lpos.len()];
    for (role, &d) in lpos.iter().enumerate() {
        ldims[d] = ldims_role[role];
    }
    let mut rdims = vec![0; rpos.len()];
    for (role, &d) in rpos.iter().enumerate() {
        rdims[d] = rdims_role[role];
    }
    // Free dims appear in the output in increasing dimension order.
    let mut lfree: Vec<usize> = lpos[nb + nc..].to_vec();
    lfree.sort();
    let mut rfree: Vec<usize> = rpos[nb + nc..].to_vec();
    rfree.sort();
    let out_dims: Vec<usize> = bsz
        .iter()
        .copied()
        .chain(lfree.iter().map(|&d| ldims[d]))
        .chain(rfree.iter().map(|&d| rdims[d]))
        .collect();
    let text = format!(
        "HloModule m\nENTRY e {{\n  a = s32[{}] parameter(0)\n  b = s32[{}] parameter(1)\n  ROOT d = s32[{}] dot(a, b), lhs_batch_dims={{{}}}, lhs_contracting_dims={{{}}}, rhs_batch_dims={{{}}}, rhs_contracting_dims={{{}}}\n}}",
        list(&ldims),
        list(&rdims),
        list(&out_dims),
        list(&lpos[..nb]),
        list(&lpos[nb..nb + nc]),
        list(&rpos[..nb]),
        list(&rpos[nb..nb + nc]),
    );
    let ln: usize = ldims.iter().product();
    let rn: usize = rdims.iter().product();
    let av: Vec<i32> = (0..ln).map(|_| g.next(7) as i32 - 3).collect();
    let bv: Vec<i32> = (0..rn).map(|_| g.next(7) as i32 - 3).collect();
    let got = eval_root(
        &text,
        &[
            s32s(&format!("s32[{}]", list(&ldims)), &av),
            s32s(&format!("s32[{}]", list(&rdims)), &bv),
        ],
    )
    .unwrap();
    // Naive: iterate output multi-index and contraction multi-index.
    let flat =
        |dims: &[usize], idx: &[usize]| idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i);
    let odo = |dims: &[usize]| -> Vec<Vec<usize>> {
        let mut all = vec![vec![]];
        for &d in dims {
            all = all
                .into_iter()
                .flat_map(|p| {
                    (0..d).map(move |i| {
                        let mut q = p.clone();
                        q.push(i);
                        q
                    })
                })
                .collect();
        }
        all
    };
    let mut want = Vec::new();
    for o in odo(&out_dims) {
        let (bi, rest) = o.split_at(nb);
        let (li, ri) = rest.split_at(nlf);
        let mut sum = 0i32;
        for c in odo(&csz) {
            let mut lidx = vec![0; ldims.len()];
            let mut ridx = vec![0; rdims.len()];
            for k in 0..nb {
                lidx[lpos[k]] = bi[k];
                ridx[rpos[k]] = bi[k];
            }
            for k in 0..nc {
                lidx[lpos[nb + k]] = c[k];
                ridx[rpos[nb + k]] = c[k];
            }
            for (k, &d) in lfree.iter().enumerate() {
                lidx[d] = li[k];
            }
            for (k, &d) in rfree.iter().enumerate() {
                ridx[d] = ri[k];
            }
            sum += av[flat(&ldims, &lidx)] * bv[flat(&rdims, &ridx)];
        }
        want.push(sum);
    }
    get_s32(&got) == want
}

#[test]
fn random_dimension_numbers_match_naive_loops() {
    quickcheck::QuickCheck::new()
        .tests(200)
        .quickcheck(dot_matches_naive as fn(u64) -> bool);
}

#[test]
fn f16_accumulates_in_f32_and_rounds_once() {
    // 2048 + 1 + 1 in f16: each +1 alone rounds back to 2048 (ulp 2), together +2.
    let text = "HloModule m
ENTRY e {
  a = f16[1,3] parameter(0)
  b = f16[3,1] parameter(1)
  ROOT d = f16[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let (x2048, one) = (0x6800u16, 0x3c00u16);
    let a = arr("f16[1,3]", ArrayData::Bits16(vec![x2048, one, one]));
    let b = arr("f16[3,1]", ArrayData::Bits16(vec![one; 3]));
    let r = eval_root(text, &[a, b]).unwrap();
    // 2050 = 0x6801 in f16.
    assert_eq!(
        r.as_array().unwrap().data(),
        &ArrayData::Bits16(vec![0x6801])
    );
}

#[test]
fn ragged_dot_non_contracting_groups_pick_their_rhs() {
    let text = "HloModule m
ENTRY e {
  a = s32[4,2] parameter(0)
  b = s32[2,2,3] parameter(1)
  g = s32[2] parameter(2)
  ROOT d = s32[4,3] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
}";
    let a = s32s("s32[4,2]", &[1, 0, 0, 1, 1, 1, 2, 2]);
    let b = s32s("s32[2,2,3]", &[1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60]);
    let r = eval_root(text, &[a, b, s32s("s32[2]", &[1, 2])]).unwrap();
    // Row 3 is after the last group: zeros.
    assert_eq!(get_s32(&r), vec![1, 2, 3, 40, 50, 60, 50, 70, 90, 0, 0, 0]);
}

#[test]
fn ragged_dot_contracting_groups_split_the_sum() {
    let text = "HloModule m
ENTRY e {
  a = s32[2,3] parameter(0)
  b = s32[3,2] parameter(1)
  g = s32[2] parameter(2)
  ROOT d = s32[2,2,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
}";
    let a = s32s("s32[2,3]", &[1, 2, 3, 4, 5, 6]);
    let b = s32s("s32[3,2]", &[1, 0, 0, 1, 1, 1]);
    let r = eval_root(text, &[a, b, s32s("s32[2]", &[2, 1])]).unwrap();
    assert_eq!(get_s32(&r), vec![1, 2, 4, 5, 3, 3, 6, 6]);
}

#[test]
fn ragged_dot_batch_groups_are_the_plain_dot() {
    let text = "HloModule m
ENTRY e {
  a = s32[3,1,2] parameter(0)
  b = s32[3,2,1] parameter(1)
  g = s32[2] parameter(2)
  ROOT d = s32[3,1,1] ragged-dot(a, b, g), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={0}
}";
    let a = s32s("s32[3,1,2]", &[1; 6]);
    let b = s32s("s32[3,2,1]", &[1, 2, 3, 4, 5, 6]);
    let r = eval_root(text, &[a, b, s32s("s32[2]", &[1, 1])]).unwrap();
    // Each batch meets only its own rhs batch, so the groups (even the uncovered third
    // batch) change nothing: JAX's reference is the plain dot.
    assert_eq!(get_s32(&r), vec![3, 7, 11]);
}

#[test]
fn ragged_dot_batched_group_sizes_split_each_batch_its_own_way() {
    // Batch 0 has groups [1, 2], batch 1 has [3, 0]: row m of batch b uses rhs[g, b].
    let text = "HloModule m
ENTRY e {
  a = s32[2,3,1] parameter(0)
  b = s32[2,2,1,1] parameter(1)
  g = s32[2,2] parameter(2)
  ROOT d = s32[2,3,1] ragged-dot(a, b, g), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_contracting_dims={2}, lhs_ragged_dims={1}, rhs_group_dims={0}
}";
    let a = s32s("s32[2,3,1]", &[1, 2, 3, 11, 12, 13]);
    let b = s32s("s32[2,2,1,1]", &[2, 3, 5, 7]);
    let r = eval_root(text, &[a, b, s32s("s32[2,2]", &[1, 2, 3, 0])]).unwrap();
    assert_eq!(get_s32(&r), vec![2, 2 * 5, 3 * 5, 11 * 3, 12 * 3, 13 * 3]);
}

#[test]
fn ragged_dot_contracting_with_zero_and_short_groups() {
    // k = 4 split [0, 3] (the last column in no group): group 0 contracts nothing.
    let text = "HloModule m
ENTRY e {
  a = s32[1,4] parameter(0)
  b = s32[4,1] parameter(1)
  g = s32[2] parameter(2)
  ROOT d = s32[2,1,1] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
}";
    let a = s32s("s32[1,4]", &[1, 2, 3, 4]);
    let b = s32s("s32[4,1]", &[1, 10, 100, 1000]);
    let r = eval_root(text, &[a, b, s32s("s32[2]", &[0, 3])]).unwrap();
    assert_eq!(get_s32(&r), vec![0, 1 + 20 + 300]);
}

/// `d = scaled-dot(a: f32[2,4], b: f32[3,4], sa, sb: f32[])` contracting the columns, with
/// the lhs scale of shape `lhs_scale`.
fn scaled_dot_module(lhs_scale: &str) -> String {
    format!(
        "HloModule m
ENTRY e {{
  a = f32[2,4] parameter(0)
  b = f32[3,4] parameter(1)
  sa = {lhs_scale} parameter(2)
  sb = f32[] parameter(3)
  ROOT d = f32[2,3] scaled-dot(a, b, sa, sb), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}}"
    )
}

#[test]
fn scaled_dot_multiplies_each_block_by_its_scale() {
    // lhs [2,4] with one scale per row and half row (blocks of 1x2); rhs [3,4] with one
    // scalar scale; contraction over the 4 columns.
    let a = [1., 2., 3., 4., -1., 0., 2., 1.];
    let b = [1., 0., 0., 1., 0., 1., 1., 0., 2., 2., 2., 2.];
    let sa = [2., 10., -1., 0.5];
    let sb = 3.0f32;
    let r = eval_root(
        &scaled_dot_module("f32[2,2]"),
        &[
            f32s("f32[2,4]", &a),
            f32s("f32[3,4]", &b),
            f32s("f32[2,2]", &sa),
            f32s("f32[]", &[sb]),
        ],
    )
    .unwrap();
    // Independent loop: a[i][k] * sa[i][k / 2] * b[j][k] * sb.
    let mut want = vec![0f32; 6];
    for i in 0..2 {
        for j in 0..3 {
            want[i * 3 + j] = (0..4)
                .map(|k| a[i * 4 + k] * sa[i * 2 + k / 2] * b[j * 4 + k] * sb)
                .sum();
        }
    }
    assert_eq!(get_f32(&r), want);
    // Row 0: scaled a = (2, 4, 30, 40); b row 0 = (1, 0, 0, 1): (2 + 40) * 3.
    assert_eq!(want[0], 126.0);
}

#[test]
fn scaled_dot_rejects_scales_that_do_not_divide() {
    let text = scaled_dot_module("f32[2,3]");
    let m = hlo::parse_module(&text).unwrap();
    assert!(hlo::pass::verify::verify(&m).is_err());
    // The kernel refuses too when run without the verifier.
    let err = eval_root(
        &text,
        &[
            f32s("f32[2,4]", &[0.; 8]),
            f32s("f32[3,4]", &[0.; 12]),
            f32s("f32[2,3]", &[1.; 6]),
            f32s("f32[]", &[1.]),
        ],
    )
    .unwrap_err();
    assert!(err.to_string().contains("do not divide"), "{err}");
}
