//! `f32` products of a few rows (`m <= 32`) against a row-major weight `[k, n]`
//! (`x @ W`): a recurrent step's `[16, 256] x [256, 1024]` gates, a decode step's
//! `[4, 768] x [768, 2304]` projection. faer's sequential product spends most of such a
//! call packing and dispatching (35-60 GFLOP/s per thread at 16-32 rows, 190 the core's
//! FMA peak); here the weight is read in place, once per row tile of the lhs, and the
//! lhs (a few KB) is packed `[k][MR]` so that every step of a register tile broadcasts
//! `MR` lhs values against `NV` vectors of one weight row
//! ([`crate::gemm_small_kernels`]).
//!
//! The columns are walked in blocks (the block's weight columns, up to 1 MB, stay in the
//! second-level cache while every row group reads them: [`block_cols`]), each block in
//! strips of the tile's width, the last one masked. Products split among
//! the threads by columns in `gemm::split` (each part is one call here). The lhs and the
//! result may have any strides; the weight's columns are contiguous (`rs.1 == 1`).

#![allow(unsafe_code)]

use std::cell::RefCell;

use crate::gemm_small_kernels::{self as kernels, Tile};
use crate::thin_gemm::Operands;

/// The most lhs rows that run here: beyond it a packing GEMM reuses each weight element
/// enough to pay for its packing.
pub(crate) const MAX_ROWS: usize = 32;

/// The fewest result columns that run here (at 96 faer's packed weight stays in the
/// first-level cache and its tiles waste no lanes: 0.8x its speed here).
const MIN_COLS: usize = 128;

/// A register tile: `mr` rows by `width` columns, and its code.
#[derive(Clone, Copy)]
struct Kernel {
    mr: usize,
    width: usize,
    run: unsafe fn(&Tile),
}

/// The instruction sets a product runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    /// 16-lane AVX-512F with FMA.
    Avx512,
    /// 8-lane AVX2 with FMA.
    Avx2,
    /// Neither: plain loops.
    Plain,
}

impl Isa {
    /// The widest the CPU has.
    fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("fma") {
                return Isa::Avx512;
            }
            if has!("avx2") && has!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Plain
    }

    /// The tiles on this instruction set, the main tile first, then the smaller ones
    /// for the last rows (each the narrowest with at least the rows left).
    fn kernels(self) -> &'static [Kernel] {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => &AVX512,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => &AVX2,
            _ => &PLAIN,
        }
    }
}

/// AVX-512 tiles: 16 sums in registers (tiles of 24 sums, 8x3, 4x6 and 12x2, ran at
/// half the speed of 8x2 and 16x1 in `time_against_faer`), the weight row 8 steps ahead
/// prefetched (1.1-1.6x on weights that do not fit the second-level cache).
#[cfg(target_arch = "x86_64")]
static AVX512: [Kernel; 5] = [
    Kernel {
        mr: 16,
        width: 16,
        run: kernels::tile_avx512::<16, 1, PREFETCH>,
    },
    Kernel {
        mr: 8,
        width: 32,
        run: kernels::tile_avx512::<8, 2, PREFETCH>,
    },
    Kernel {
        mr: 4,
        width: 64,
        run: kernels::tile_avx512::<4, 4, PREFETCH>,
    },
    Kernel {
        mr: 2,
        width: 128,
        run: kernels::tile_avx512::<2, 8, PREFETCH>,
    },
    Kernel {
        mr: 1,
        width: 128,
        run: kernels::tile_avx512::<1, 8, PREFETCH>,
    },
];

/// Weight rows ahead of the one read that a tile prefetches.
const PREFETCH: isize = 8;

/// AVX2 tiles (16 vector registers: 8 sums, the weight vectors and a broadcast).
#[cfg(target_arch = "x86_64")]
static AVX2: [Kernel; 3] = [
    Kernel {
        mr: 4,
        width: 16,
        run: kernels::tile_avx2::<4, 2, PREFETCH>,
    },
    Kernel {
        mr: 2,
        width: 32,
        run: kernels::tile_avx2::<2, 4, PREFETCH>,
    },
    Kernel {
        mr: 1,
        width: 64,
        run: kernels::tile_avx2::<1, 8, PREFETCH>,
    },
];

/// Tiles without vector instructions.
static PLAIN: [Kernel; 2] = [
    Kernel {
        mr: 4,
        width: 64,
        run: kernels::tile_plain::<4>,
    },
    Kernel {
        mr: 1,
        width: 64,
        run: kernels::tile_plain::<1>,
    },
];

/// Whether an `m x n x k` product whose rhs has strides `rs` runs here: a weight with
/// contiguous columns, at least [`MIN_COLS`] columns, a packed lhs of at most
/// [`MAX_PACKED`] elements, and 8-32 rows, or 4-7 rows of a contraction under
/// [`LONG_K`]. Measured against faer on one thread (`time_against_faer`, the 2-core
/// AVX-512 machine under load): 1.7-2.0x its GFLOP/s at `[16, 1024, 256]` and
/// `[32, 768, 512]`, 1.0-1.15x at 16-32 rows of 512-768 columns and short contractions
/// (faer's best: its packed weight stays in the first-level cache), 1.5x at
/// `[8, 1536, 768]`, 1.05-1.1x at 4 rows of `k = 768`, 0.82x at `[4, 384, 3072]`, 0.8x at
/// `[16, 96, 192]`; one and two rows about even (faer's vector path reads such a weight
/// in place). A weight gradient's `[32, 32768] x [32768, 27]` (the lhs as big as the
/// "weight", most lanes masked) ran 1.9x slower inside cnn_train_step.
fn runs(m: usize, n: usize, k: usize, rs: (isize, isize)) -> bool {
    let rows = (MIN_ROWS..=MAX_ROWS).contains(&m) || ((4..MIN_ROWS).contains(&m) && k < LONG_K);
    k > 0 && rows && n >= MIN_COLS && m * k <= MAX_PACKED && rs.1 == 1
}

/// The fewest lhs rows that run here whatever the contraction.
const MIN_ROWS: usize = 8;

/// The contraction from which products of 4-7 rows stay on faer.
const LONG_K: usize = 2048;

/// The most lhs elements (packed, 512 KB) that run here: beyond it the lhs is no longer
/// the small operand that stays in the cache while the weight streams past.
const MAX_PACKED: usize = 1 << 17;

/// Computes `out = lhs x rhs` (`m x n x k`, overwriting the result) if it runs here;
/// `false` (nothing written) where it does not.
///
/// # Safety
/// Every element of the `m x k` lhs, `k x n` rhs and `m x n` result at `p`'s strides lies
/// inside its allocation, the result elements are writable and alias neither operand,
/// and no other thread touches them during the call.
pub(crate) unsafe fn product(p: &Operands<f32>, m: usize, n: usize, k: usize) -> bool {
    if !runs(m, n, k, p.rs) {
        return false;
    }
    // SAFETY: the caller's contract; `runs` checked the weight's layout.
    unsafe { product_on(Isa::best(), p, m, n, k) };
    true
}

thread_local! {
    /// The packed lhs of this thread's last product (reused: a recurrent step calls
    /// with the same sizes every step).
    static PACKED: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// A group of lhs rows and the tile that runs it.
#[derive(Clone, Copy)]
struct Group {
    /// The first row.
    r0: usize,
    /// Rows (`<= kernel.mr`).
    rows: usize,
    /// Where its packed rows start in the buffer.
    at: usize,
    kernel: Kernel,
}

/// The row groups of `m` rows on `tiles` (widest first, the last one row): each the
/// widest tile with at most the rows left, so no tile computes padding rows (the
/// weight's block is in the second-level cache for the second and later groups).
fn groups(m: usize, k: usize, tiles: &[Kernel]) -> Vec<Group> {
    let mut out = Vec::new();
    let (mut r0, mut at) = (0, 0);
    while r0 < m {
        let left = m - r0;
        let kernel = *tiles
            .iter()
            .find(|t| t.mr <= left)
            .unwrap_or(&tiles[tiles.len() - 1]);
        let rows = kernel.mr.min(left);
        out.push(Group {
            r0,
            rows,
            at,
            kernel,
        });
        r0 += rows;
        at += kernel.mr * k;
    }
    out
}

/// Result columns every row group walks before the next block: the block's weight
/// (`k` rows, at most [`BLOCK_BYTES`]) stays in the second-level cache for every group
/// after the first; a multiple of 128 (every tile's width divides it).
fn block_cols(k: usize) -> usize {
    (BLOCK_BYTES / (4 * k) / 128 * 128).max(128)
}

/// The weight bytes of a block of columns.
const BLOCK_BYTES: usize = 1 << 20;

/// The product on `isa`'s tiles.
///
/// # Safety
/// [`product`]'s contract; `p.rs.1 == 1`, `k > 0`, and the CPU has `isa`.
unsafe fn product_on(isa: Isa, p: &Operands<f32>, m: usize, n: usize, k: usize) {
    // SAFETY: the caller's contract; `isa`'s tiles run on the CPU.
    unsafe { product_with(isa.kernels(), p, m, n, k) }
}

/// The product on `tiles` (the main tile first, then smaller ones).
///
/// # Safety
/// [`product_on`]'s contract, the CPU able to run `tiles`.
unsafe fn product_with(tiles: &[Kernel], p: &Operands<f32>, m: usize, n: usize, k: usize) {
    let groups = groups(m, k, tiles);
    let len = groups.last().map_or(0, |g| g.at + g.kernel.mr * k);
    PACKED.with(|cell| {
        let mut packed = cell.borrow_mut();
        packed.clear();
        packed.resize(len, 0.0);
        for g in &groups {
            let mr = g.kernel.mr;
            let dst = &mut packed[g.at..g.at + mr * k];
            for r in 0..g.rows {
                // SAFETY: lhs row `g.r0 + r < m`.
                let row = unsafe { p.lhs.offset((g.r0 + r) as isize * p.ls.0) };
                for (kk, x) in dst.iter_mut().skip(r).step_by(mr).enumerate() {
                    // SAFETY: lhs element (g.r0 + r, kk), kk < k.
                    *x = unsafe { *row.offset(kk as isize * p.ls.1) };
                }
            }
        }
        let block = block_cols(k);
        for c0 in (0..n).step_by(block) {
            let c1 = n.min(c0 + block);
            for g in &groups {
                for j in (c0..c1).step_by(g.kernel.width) {
                    // SAFETY: offsets of the weight's column `j` and the result's
                    // (g.r0, j), inside their allocations (the caller's contract).
                    let t = unsafe {
                        Tile {
                            ap: packed.as_ptr().add(g.at),
                            b: p.rhs.add(j),
                            bs0: p.rs.0,
                            k,
                            out: p.out.offset(g.r0 as isize * p.os.0 + j as isize * p.os.1),
                            os: p.os,
                            rows: g.rows,
                            cols: g.kernel.width.min(c1 - j),
                        }
                    };
                    // SAFETY: the packed group holds `k * mr` elements; the tile's weight
                    // and result elements lie inside the product (the caller's contract);
                    // the CPU has `isa` (the caller's contract).
                    unsafe { (g.kernel.run)(&t) };
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::rng::XorShift;

    /// The instruction sets this CPU can run.
    fn isas() -> Vec<Isa> {
        let mut out = vec![Isa::Plain];
        if Isa::best() != Isa::Plain {
            out.push(Isa::Avx2);
        }
        if Isa::best() == Isa::Avx512 {
            out.push(Isa::Avx512);
        }
        out
    }

    /// Random products (1-40 rows: every tile and every remainder of rows; columns
    /// below, at and past whole vectors, strips and blocks; contractions 1-700; any
    /// layouts of the lhs and the result, a row-major weight with a padded leading
    /// dimension) on every instruction set the CPU has, against a plain loop in `f64`;
    /// elements outside the result untouched.
    #[test]
    fn small_row_products_match_a_plain_loop() {
        for seed in 0..240u64 {
            let mut rng = XorShift(seed * 2654435761 + 11);
            let m = 1 + rng.below(40);
            let n = [1 + rng.below(20), 1 + rng.below(200), 300 + rng.below(600)][rng.below(3)];
            let k = 1 + [rng.below(20), rng.below(300), rng.below(700)][rng.below(3)];
            let (ls, la) = rng.matrix_strides(m, k);
            let ld = n + rng.below(3);
            let (rs, ra) = ((ld as isize, 1), k * ld);
            let (os, oa) = rng.matrix_strides(m, n);
            let lhs: Vec<f32> = (0..la).map(|_| rng.grid_unit() as f32).collect();
            let rhs: Vec<f32> = (0..ra).map(|_| rng.grid_unit() as f32).collect();
            let at = |s: (isize, isize), i: usize, j: usize| {
                (i as isize * s.0 + j as isize * s.1) as usize
            };
            let mut want = vec![0f64; m * n];
            for i in 0..m {
                for j in 0..n {
                    want[i * n + j] = (0..k)
                        .map(|t| f64::from(lhs[at(ls, i, t)]) * f64::from(rhs[at(rs, t, j)]))
                        .sum();
                }
            }
            for isa in isas() {
                let mut out = vec![7.0f32; oa];
                let ops = Operands {
                    lhs: lhs.as_ptr(),
                    ls,
                    rhs: rhs.as_ptr(),
                    rs,
                    out: out.as_mut_ptr(),
                    os,
                };
                // SAFETY: the layouts' allocations hold every element; `out` is fresh;
                // the weight's columns are contiguous; the CPU has `isa`.
                unsafe { product_on(isa, &ops, m, n, k) };
                let mut written = vec![false; oa];
                for i in 0..m {
                    for j in 0..n {
                        let got = f64::from(out[at(os, i, j)]);
                        let w = want[i * n + j];
                        assert!(
                            (got - w).abs() <= 1e-5 * (1.0 + k as f64),
                            "seed {seed} {isa:?}: m={m} n={n} k={k} ls={ls:?} os={os:?} ({i}, {j}): {got} != {w}"
                        );
                        written[at(os, i, j)] = true;
                    }
                }
                for (x, w) in out.iter().zip(&written) {
                    assert!(
                        *w || *x == 7.0,
                        "seed {seed} {isa:?}: an element outside the result was written"
                    );
                }
            }
        }
    }

    /// Every row count is covered by groups of tiles without overlap or padding rows,
    /// each the widest tile with at most the rows left.
    #[test]
    fn row_groups_cover_the_rows() {
        for isa in [Isa::Avx512, Isa::Avx2, Isa::Plain] {
            let tiles = isa.kernels();
            for m in 1..=40 {
                let gs = groups(m, 5, tiles);
                let (mut next, mut at) = (0, 0);
                for g in &gs {
                    assert_eq!((g.r0, g.at), (next, at), "{isa:?} m={m}");
                    assert_eq!(g.rows, g.kernel.mr, "{isa:?} m={m}");
                    let left = m - g.r0;
                    assert!(
                        tiles.iter().all(|t| t.mr <= g.rows || t.mr > left),
                        "{isa:?} m={m}: a narrower tile than fits"
                    );
                    next += g.rows;
                    at += g.kernel.mr * 5;
                }
                assert_eq!(next, m, "{isa:?} m={m}");
            }
        }
    }

    /// Products with many rows, few columns, or a weight without contiguous columns are
    /// left to the other kernels.
    #[test]
    fn other_products_do_not_run_here() {
        assert!(runs(16, 1024, 256, (1024, 1)));
        assert!(runs(32, 1536, 512, (1536, 1)));
        assert!(!runs(33, 1024, 256, (1024, 1)));
        assert!(!runs(16, 8, 256, (8, 1)));
        assert!(!runs(16, 96, 192, (96, 1)));
        assert!(runs(16, 192, 192, (192, 1)));
        assert!(!runs(32, 27, 32768, (27, 1)));
        assert!(!runs(32, 256, 8192, (256, 1)));
        assert!(runs(32, 256, 2048, (256, 1)));
        assert!(!runs(16, 1024, 256, (1, 256)));
        assert!(!runs(16, 1024, 0, (1024, 1)));
        assert!(runs(4, 2304, 768, (2304, 1)));
        assert!(!runs(4, 768, 3072, (768, 1)));
        assert!(runs(8, 768, 3072, (768, 1)));
        assert!(!runs(2, 2304, 768, (2304, 1)));
        assert!(!runs(1, 2304, 768, (2304, 1)));
    }

    /// Times the tiles against faer on one thread (the recurrent and decode steps' shapes
    /// of issue 30; `SMALL_SHAPES=m:n:k,...` for others); prints the best of many runs.
    #[test]
    #[ignore = "a timing harness: cargo test --release -p backend-cpu --lib gemm_small -- --ignored --nocapture"]
    fn time_against_faer() {
        let shapes: Vec<(usize, usize, usize)> = std::env::var("SMALL_SHAPES")
            .map(|s| {
                s.split(',')
                    .filter_map(|x| {
                        let v: Vec<usize> = x.split(':').filter_map(|y| y.parse().ok()).collect();
                        (v.len() == 3).then(|| (v[0], v[1], v[2]))
                    })
                    .collect()
            })
            .unwrap_or_else(|_| {
                vec![
                    (16, 512, 256),
                    (16, 512, 128),
                    (16, 1024, 256),
                    (32, 768, 512),
                    (32, 768, 128),
                    (4, 1152, 768),
                    (4, 384, 3072),
                    (4, 1536, 768),
                    (1, 1536, 768),
                    (2, 1536, 768),
                    (8, 1536, 768),
                    (16, 96, 192),
                ]
            });
        let isa = Isa::best();
        let mut variants: Vec<(&str, Vec<Kernel>)> = vec![("default", isa.kernels().to_vec())];
        #[cfg(target_arch = "x86_64")]
        if isa == Isa::Avx512 {
            variants.push(("from 8x2", AVX512[1..].to_vec()));
            macro_rules! v {
                ($name:expr, $(($mr:expr, $nv:expr, $pf:expr)),*) => {
                    variants.push(($name, vec![$(Kernel {
                        mr: $mr,
                        width: 16 * $nv,
                        run: kernels::tile_avx512::<$mr, $nv, $pf>,
                    }),*]))
                };
            }
            v!(
                "no prefetch",
                (16, 1, 0),
                (8, 2, 0),
                (4, 4, 0),
                (2, 8, 0),
                (1, 8, 0)
            );
            variants.push(("avx2", AVX2.to_vec()));
        }
        print!("| m | n | k | faer GFLOP/s | 2 threads GFLOP/s | 2 on pool GFLOP/s |");
        for (name, _) in &variants {
            print!(" {name} GFLOP/s |");
        }
        println!();
        let mut rng = XorShift(5);
        for &(m, n, k) in &shapes {
            let w: Vec<f32> = (0..n * k).map(|_| rng.grid_unit() as f32).collect();
            let x: Vec<f32> = (0..m * k).map(|_| rng.grid_unit() as f32).collect();
            let mut out = vec![0f32; m * n];
            let flops = 2.0 * (m * n * k) as f64;
            let reps = ((2e8 / flops) as usize).clamp(5, 2000);
            let time = |f: &mut dyn FnMut()| {
                f();
                let mut best = f64::MAX;
                for _ in 0..reps {
                    let t = std::time::Instant::now();
                    f();
                    best = best.min(t.elapsed().as_secs_f64());
                }
                flops / best / 1e9
            };
            let op = out.as_mut_ptr();
            let faer_gf = time(&mut || {
                // SAFETY: the vectors hold the matrices at these strides.
                let (a, b, c) = unsafe {
                    (
                        faer::MatRef::from_raw_parts(x.as_ptr(), m, k, k as isize, 1),
                        faer::MatRef::from_raw_parts(w.as_ptr(), k, n, n as isize, 1),
                        faer::MatMut::from_raw_parts_mut(op, m, n, n as isize, 1),
                    )
                };
                faer::linalg::matmul::matmul(c, faer::Accum::Replace, a, b, 1.0f32, faer::Par::Seq);
            });
            let want = out.clone();
            print!("| {m} | {n} | {k} | {faer_gf:.1} |");
            // The default tiles on two threads, a column half each (as `gemm::split`
            // shares such a product).
            // Column half `h` of the product (pointers as integers, so the closure is
            // `Sync` and both threads may call it).
            let (xp, wp, opp) = (x.as_ptr() as usize, w.as_ptr() as usize, op as usize);
            let half = |h: usize| {
                let (c0, c1) = (n * h / 2, n * (h + 1) / 2);
                let ops = Operands {
                    lhs: xp as *const f32,
                    ls: (k as isize, 1),
                    rhs: (wp as *const f32).wrapping_add(c0),
                    rs: (n as isize, 1),
                    out: (opp as *mut f32).wrapping_add(c0),
                    os: (n as isize, 1),
                };
                // SAFETY: as above; the halves' columns are disjoint.
                unsafe { product_on(Isa::best(), &ops, m, c1 - c0, k) };
            };
            let halves = time(&mut || {
                rayon::prelude::ParallelIterator::for_each(
                    rayon::prelude::IntoParallelIterator::into_par_iter(0..2usize),
                    half,
                );
            });
            print!(" {halves:.1} |");
            // The same halves from a pool thread, as a loop moved to the pool by
            // `on_pool` splits its step's product: one half here, the other stolen.
            let pooled = crate::on_pool::run(|| {
                time(&mut || {
                    rayon::join(|| half(0), || half(1));
                })
            });
            print!(" {pooled:.1} |");
            for (_, tiles) in &variants {
                let ops = Operands {
                    lhs: x.as_ptr(),
                    ls: (k as isize, 1),
                    rhs: w.as_ptr(),
                    rs: (n as isize, 1),
                    out: op,
                    os: (n as isize, 1),
                };
                let gf = time(&mut || {
                    // SAFETY: as above; the CPU runs the tiles.
                    unsafe { product_with(tiles, &ops, m, n, k) };
                });
                // SAFETY: `op` is `out`'s buffer, not written during the comparison.
                let got = unsafe { std::slice::from_raw_parts(op, m * n) };
                let worst = got
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max);
                assert!(worst <= 1e-3, "{m}x{n}x{k}: differs from faer by {worst}");
                print!(" {gf:.1} |");
            }
            println!();
        }
    }
}
