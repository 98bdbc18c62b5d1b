//! `convolution`: hand-computed cases and a quickcheck property against a naive loop
//! over random dimension labels, windows, dilations, reversal and groups.

use crate::support;

use support::*;

#[test]
fn one_dimensional_valid_convolution() {
    let text = "HloModule m
ENTRY e {
  x = f32[1,5,1] parameter(0)
  k = f32[2,1,1] parameter(1)
  ROOT c = f32[1,4,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f
}";
    let r = eval_root(
        text,
        &[
            f32s("f32[1,5,1]", &[1., 2., 3., 4., 5.]),
            f32s("f32[2,1,1]", &[1., 10.]),
        ],
    )
    .unwrap();
    assert_eq!(get_f32(&r), vec![21., 32., 43., 54.]);
}

#[test]
fn depthwise_nchw_with_padding() {
    // Two channels, feature_group_count=2: each channel convolved with its own kernel.
    let text = "HloModule m
ENTRY e {
  x = f32[1,2,3] parameter(0)
  k = f32[2,1,3] parameter(1)
  ROOT c = f32[1,2,3] convolution(x, k), window={size=3 pad=1_1}, dim_labels=bf0_oi0->bf0, feature_group_count=2
}";
    let x = f32s("f32[1,2,3]", &[1., 2., 3., 10., 20., 30.]);
    let k = f32s("f32[2,1,3]", &[0., 1., 0., 1., 1., 1.]);
    let r = eval_root(text, &[x, k]).unwrap();
    assert_eq!(get_f32(&r), vec![1., 2., 3., 30., 60., 50.]);
}

/// One spatial window dimension: size, stride, pad low, pad high, lhs and rhs dilation,
/// reversal.
type WinDim = (usize, usize, i64, i64, usize, usize, bool);

struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
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

/// Places sizes by label: `labels[p]` names what dimension `p` holds.
fn dims_for(labels: &[char], size: &dyn Fn(char) -> usize) -> Vec<usize> {
    labels.iter().map(|&c| size(c)).collect()
}

fn flat(dims: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

fn conv_matches_naive(seed: u64) -> bool {
    let mut g = Lcg(seed);
    let nsp = 1 + g.next(2);
    let (fg, bg) = match g.next(3) {
        0 => (1, 1),
        1 => (2, 1),
        _ => (1, 2),
    };
    let nb = 1 + g.next(2); // output batch
    let n_in = nb * bg;
    let cg = 1 + g.next(2);
    let c = cg * fg;
    let o = fg.max(bg) * (1 + g.next(2));
    let sp: Vec<char> = (0..nsp).map(|d| char::from(b'0' + d as u8)).collect();
    let mut win: Vec<WinDim> = Vec::new();
    let (mut in_sp, mut k_sp, mut out_sp) = (vec![], vec![], vec![]);
    for _ in 0..nsp {
        let (n, k) = (1 + g.next(4), 1 + g.next(3));
        let (stride, lhs_d, rhs_d) = (1 + g.next(2), 1 + g.next(2), 1 + g.next(2));
        let (lo, hi) = (g.next(4) as i64 - 1, g.next(4) as i64 - 1);
        let rev = g.next(2) == 1;
        let padded = ((n - 1) * lhs_d + 1) as i64 + lo + hi;
        let eff = ((k - 1) * rhs_d + 1) as i64;
        let out = if padded >= eff {
            ((padded - eff) / stride as i64 + 1) as usize
        } else {
            0
        };
        in_sp.push(n);
        k_sp.push(k);
        out_sp.push(out);
        win.push((k, stride, lo, hi, lhs_d, rhs_d, rev));
    }
    let mut ll: Vec<char> = "bf".chars().chain(sp.iter().copied()).collect();
    let mut kl: Vec<char> = "io".chars().chain(sp.iter().copied()).collect();
    let mut ol: Vec<char> = "bf".chars().chain(sp.iter().copied()).collect();
    g.shuffle(&mut ll);
    g.shuffle(&mut kl);
    g.shuffle(&mut ol);
    let sdim = |c: char, v: &[usize]| v[(c as u8 - b'0') as usize];
    let ld = dims_for(&ll, &|ch| match ch {
        'b' => n_in,
        'f' => c,
        d => sdim(d, &in_sp),
    });
    let kd = dims_for(&kl, &|ch| match ch {
        'i' => cg,
        'o' => o,
        d => sdim(d, &k_sp),
    });
    let od = dims_for(&ol, &|ch| match ch {
        'b' => nb,
        'f' => o,
        d => sdim(d, &out_sp),
    });
    let field = |f: &dyn Fn(&WinDim) -> String| win.iter().map(f).collect::<Vec<_>>().join("x");
    let window = format!(
        "size={} stride={} pad={} lhs_dilate={} rhs_dilate={} rhs_reversal={}",
        field(&|w| w.0.to_string()),
        field(&|w| w.1.to_string()),
        field(&|w| format!("{}_{}", w.2, w.3)),
        field(&|w| w.4.to_string()),
        field(&|w| w.5.to_string()),
        field(&|w| u8::from(w.6).to_string()),
    );
    let labels = |v: &[char]| v.iter().collect::<String>();
    let text = format!(
        "HloModule m\nENTRY e {{\n  x = s32[{}] parameter(0)\n  k = s32[{}] parameter(1)\n  ROOT c = s32[{}] convolution(x, k), window={{{window}}}, dim_labels={}_{}->{}, feature_group_count={fg}, batch_group_count={bg}\n}}",
        list(&ld), list(&kd), list(&od), labels(&ll), labels(&kl), labels(&ol)
    );
    let xv: Vec<i32> = (0..ld.iter().product::<usize>())
        .map(|_| g.next(5) as i32 - 2)
        .collect();
    let kv: Vec<i32> = (0..kd.iter().product::<usize>())
        .map(|_| g.next(5) as i32 - 2)
        .collect();
    let got = eval_root(
        &text,
        &[
            s32s(&format!("s32[{}]", list(&ld)), &xv),
            s32s(&format!("s32[{}]", list(&kd)), &kv),
        ],
    );
    let got = match got {
        Ok(v) => get_s32(&v),
        Err(e) => panic!("{e}\n{text}"),
    };
    // Naive loop in label space.
    let pos_of = |labels: &[char], ch: char| labels.iter().position(|&c| c == ch).unwrap();
    let total: usize = od.iter().product();
    let mut want = Vec::with_capacity(total);
    for flat_o in 0..total {
        let mut oi = vec![0; od.len()];
        let mut r = flat_o;
        for p in (0..od.len()).rev() {
            oi[p] = r % od[p];
            r /= od[p];
        }
        let (b, f) = (oi[pos_of(&ol, 'b')], oi[pos_of(&ol, 'f')]);
        let fgi = f / (o / fg);
        let bgi = f / (o / bg);
        let mut sum = 0i32;
        for ci in 0..cg {
            let mut kidx = vec![0usize; nsp];
            loop {
                let mut ok = true;
                let mut xi = vec![0; ld.len()];
                let mut ki = vec![0; kd.len()];
                xi[pos_of(&ll, 'b')] = bgi * nb + b;
                xi[pos_of(&ll, 'f')] = fgi * cg + ci;
                ki[pos_of(&kl, 'i')] = ci;
                ki[pos_of(&kl, 'o')] = f;
                for d in 0..nsp {
                    let (k, stride, lo, _, lhs_d, rhs_d, rev) = win[d];
                    let ch = sp[d];
                    let outc = oi[pos_of(&ol, ch)] as i64;
                    let p = outc * stride as i64 + (kidx[d] * rhs_d) as i64 - lo;
                    if p < 0 || p % lhs_d as i64 != 0 || (p / lhs_d as i64) as usize >= in_sp[d] {
                        ok = false;
                    } else {
                        xi[pos_of(&ll, ch)] = (p / lhs_d as i64) as usize;
                    }
                    ki[pos_of(&kl, ch)] = if rev { k - 1 - kidx[d] } else { kidx[d] };
                }
                if ok {
                    sum += xv[flat(&ld, &xi)] * kv[flat(&kd, &ki)];
                }
                // next kernel position
                let mut d = nsp;
                let mut done = true;
                while d > 0 {
                    d -= 1;
                    kidx[d] += 1;
                    if kidx[d] < k_sp[d] {
                        done = false;
                        break;
                    }
                    kidx[d] = 0;
                }
                if done {
                    break;
                }
            }
        }
        want.push(sum);
    }
    if got != want {
        eprintln!("{text}\ngot {got:?}\nwant {want:?}");
    }
    got == want
}

#[test]
fn random_convolutions_match_naive_loops() {
    quickcheck::QuickCheck::new()
        .tests(300)
        .quickcheck(conv_matches_naive as fn(u64) -> bool);
}

/// `algorithm=` on a convolution (a precision request, as on dot) leaves its value what
/// the same convolution computes without it: f32 inputs, `dot_f32_f32_f32`.
#[test]
fn algorithm_attribute_keeps_the_value() {
    let with = |alg: &str| {
        format!(
            "HloModule m
ENTRY e {{
  x = f32[1,6,2] parameter(0)
  k = f32[3,2,2] parameter(1)
  ROOT c = f32[1,4,2] convolution(x, k), window={{size=3}}, dim_labels=b0f_0io->b0f{alg}
}}"
        )
    };
    let x = f32s(
        "f32[1,6,2]",
        &[1., -2., 3., 0.5, -1., 4., 2., 2., -3., 1., 0., 7.],
    );
    let k = f32s(
        "f32[3,2,2]",
        &[1., 0., -1., 2., 0.5, 0.5, 3., -1., 2., 1., 0., -2.],
    );
    let plain = eval_root(&with(""), &[x.clone(), k.clone()]).unwrap();
    let tagged = eval_root(&with(", algorithm=dot_f32_f32_f32"), &[x, k]).unwrap();
    assert_eq!(get_f32(&tagged), get_f32(&plain));
    assert_eq!(get_f32(&plain).len(), 8);
}
