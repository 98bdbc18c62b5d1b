//! Convolution tiles against the evaluator (issue 37): a convolution's tiling space holds its
//! output dimensions, then its window dimensions and input features as sequential dimensions
//! (the steps a program walks), and each step's operand tiles must hold exactly what the
//! output tile reads in that step.
//!
//! What the evaluator reads is observed (s32, no rounding):
//! - through one tap (window position and input feature): with the kernel one at that tap for
//!   every output feature and zero elsewhere, raising input element `e` by one changes the
//!   outputs that read `e` through the tap;
//! - for the kernel: with every input element nonzero, raising kernel element `k` changes the
//!   outputs whose window reads a real (not padded) input element through `k`.
//!
//! For every tile-size vector and tile id of the whole space, the input tile holds exactly the
//! input elements some output of the output tile reads through a tap of the step's window
//! and feature tiles, and the kernel tile exactly the step's kernel elements some output of
//! the tile reads (none twice). This is checked for the symbolic tile (sizes `ts_i`) where
//! one is given, and for the tile propagated with the sizes fixed, where one is given; where
//! none is, the reason is checked. Cases: XLA's NHWC and NCHW convolutions (smaller
//! features), strided 1-D ones (windows touching, overlapping, and narrower than the
//! stride), a window-dilated one, and padded ones (the kernel's taps masked at the edges).

use std::collections::{BTreeSet, HashMap};

use hlo::literal::ArrayData;
use hlo::Module;
use tiling::propagate::{to_operands, Propagated, Tile, TilingSpace};

use crate::support::tile_elements::{distinct_elements, for_each_tiling, s32, unlinear};

/// A convolution `conv` of `input` (dims `inp`) and `kernel` (dims `ker`) to `out`.
struct Conv {
    inp: Vec<i64>,
    ker: Vec<i64>,
    out: Vec<i64>,
    attrs: String,
    module: Module,
}

/// One tap: the window position per spatial dimension and the input feature.
type Tap = (Vec<i64>, i64);

fn dims_text(v: &[i64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

impl Conv {
    fn new(inp: &[i64], ker: &[i64], out: &[i64], attrs: &str) -> Conv {
        let text = format!(
            "HloModule m
ENTRY e {{
  input = s32[{}] parameter(0)
  kernel = s32[{}] parameter(1)
  ROOT conv = s32[{}] convolution(input, kernel), {attrs}
}}",
            dims_text(inp),
            dims_text(ker),
            dims_text(out)
        );
        Conv {
            inp: inp.to_vec(),
            ker: ker.to_vec(),
            out: out.to_vec(),
            attrs: attrs.to_string(),
            module: hlo::parse_module(&text).expect("parses"),
        }
    }

    /// The kernel's label string (`01io`, `oi01`, ...).
    fn kernel_labels(&self) -> Vec<char> {
        let labels = self
            .attrs
            .split("dim_labels=")
            .nth(1)
            .and_then(|l| l.split('_').nth(1))
            .and_then(|l| l.split("->").next())
            .expect("dim_labels");
        labels.chars().collect()
    }

    /// The kernel index of tap `(w, f)` and output feature `o`.
    fn kernel_index(&self, w: &[i64], f: i64, o: i64) -> Vec<i64> {
        self.kernel_labels()
            .iter()
            .map(|&c| match c {
                'i' => f,
                'o' => o,
                d => w[d.to_digit(10).expect("a spatial label") as usize],
            })
            .collect()
    }

    /// The tap and output feature of kernel index `k`.
    fn tap_of(&self, k: &[i64]) -> (Tap, i64) {
        let labels = self.kernel_labels();
        let spatial = labels.iter().filter(|c| c.is_ascii_digit()).count();
        let mut w = vec![0; spatial];
        let (mut f, mut o) = (0, 0);
        for (&c, &v) in labels.iter().zip(k) {
            match c {
                'i' => f = v,
                'o' => o = v,
                d => w[d.to_digit(10).expect("a spatial label") as usize] = v,
            }
        }
        ((w, f), o)
    }

    fn run(&self, input: Vec<i32>, kernel: Vec<i32>) -> Vec<i32> {
        let args = [s32(&self.inp, input), s32(&self.ker, kernel)];
        let out = hlo_eval::evaluate(&self.module, &args).expect("the evaluator runs the conv");
        match out.as_array().map(|a| a.data().clone()) {
            Some(ArrayData::S32(v)) => v,
            other => panic!("an s32 output, got {other:?}"),
        }
    }

    /// The outputs that change between `base` and `r`.
    fn changed(&self, base: &[i32], r: &[i32]) -> BTreeSet<Vec<i64>> {
        base.iter()
            .zip(r)
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(o, _)| unlinear(o as i64, &self.out))
            .collect()
    }

    /// Per tap, `reach[e]`: the outputs reading input element `e` through that tap.
    fn input_reach(&self) -> HashMap<Tap, Vec<BTreeSet<Vec<i64>>>> {
        let n_in: i64 = self.inp.iter().product();
        let n_ker: i64 = self.ker.iter().product();
        let base_in: Vec<i32> = (0..n_in as i32).map(|v| v * 7 % 11 - 5).collect();
        let mut taps: HashMap<Tap, Vec<i64>> = HashMap::new();
        for k in 0..n_ker {
            let (tap, _) = self.tap_of(&unlinear(k, &self.ker));
            taps.entry(tap).or_default().push(k);
        }
        taps.into_iter()
            .map(|(tap, ks)| {
                let mut kernel = vec![0; n_ker as usize];
                for k in ks {
                    kernel[k as usize] = 1;
                }
                let base = self.run(base_in.clone(), kernel.clone());
                let reach = (0..n_in as usize)
                    .map(|e| {
                        let mut v = base_in.clone();
                        v[e] += 1;
                        self.changed(&base, &self.run(v, kernel.clone()))
                    })
                    .collect();
                (tap, reach)
            })
            .collect()
    }

    /// `reach[k]`: the outputs that read kernel element `k` against a real input element.
    fn kernel_reach(&self) -> Vec<BTreeSet<Vec<i64>>> {
        let n_in: i64 = self.inp.iter().product();
        let n_ker: i64 = self.ker.iter().product();
        let input: Vec<i32> = (0..n_in as i32).map(|v| 1 + v % 3).collect();
        let base_k: Vec<i32> = (0..n_ker as i32).map(|v| v * 5 % 7 - 3).collect();
        let base = self.run(input.clone(), base_k.clone());
        (0..n_ker as usize)
            .map(|k| {
                let mut v = base_k.clone();
                v[k] += 1;
                self.changed(&base, &self.run(input.clone(), v))
            })
            .collect()
    }
}

/// What the checks found: tilings checked, and size vectors with and without tiles.
#[derive(Default, Debug)]
struct Count {
    tilings: usize,
    symbolic: bool,
    sizes_with_tiles: usize,
    sizes_without: usize,
}

/// The operand tiles for `sizes` (`None`: symbolic sizes).
fn propagate(c: &Conv, sizes: Option<&[i64]>) -> (TilingSpace, Tile, Vec<Propagated>) {
    let conv = c.module.instr("conv").expect("conv");
    let mut space = TilingSpace::for_op(&conv, 0).expect("a space");
    if let Some(s) = sizes {
        space.set_tile_sizes(s).expect("sizes fit the space");
    }
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &conv, 0, &root).expect("propagates");
    (space, root, tiles)
}

/// Checks the convolution's tiles (see the module documentation); `refusal` is the reason
/// a missing tile must give.
fn check(c: &Conv, refusal: &str) -> Count {
    let in_reach = c.input_reach();
    let k_reach = c.kernel_reach();
    let (space, root, symbolic) = propagate(c, None);
    let n_out = c.out.len();
    let spatial = space.dims.len() - n_out - 1;
    assert_eq!(
        space.dims[n_out..]
            .iter()
            .filter(|d| d.owner.is_some())
            .count(),
        spatial + 1,
        "{}: the window and the input features are sequential dimensions",
        c.attrs
    );
    let extents: Vec<i64> = space
        .dims
        .iter()
        .map(|d| d.extent.expect("an extent"))
        .collect();
    let n_in: i64 = c.inp.iter().product();
    let n_ker: i64 = c.ker.iter().product();
    // The elements each step must read, at every tiling.
    let want = |sizes: &[i64], tids: &[i64]| {
        let outs = distinct_elements(&root, tids, sizes, &[]);
        let in_step = |i: usize, v: i64| {
            let (t, s) = (tids[n_out + i], sizes[n_out + i]);
            v >= t * s && v < t * s + s
        };
        let tap_in = |(w, f): &Tap| {
            w.iter().enumerate().all(|(i, &v)| in_step(i, v)) && in_step(spatial, *f)
        };
        let reads = |set: &BTreeSet<Vec<i64>>| set.iter().any(|o| outs.contains(o));
        let input: BTreeSet<Vec<i64>> = (0..n_in as usize)
            .filter(|&e| in_reach.iter().any(|(tap, r)| tap_in(tap) && reads(&r[e])))
            .map(|e| unlinear(e as i64, &c.inp))
            .collect();
        let kernel: BTreeSet<Vec<i64>> = (0..n_ker)
            .map(|k| unlinear(k, &c.ker))
            .filter(|k| tap_in(&c.tap_of(k).0))
            .filter(|k| {
                let (tap, o) = c.tap_of(k);
                reads(&k_reach[linear(&c.kernel_index(&tap.0, tap.1, o), &c.ker)])
            })
            .collect();
        [input, kernel]
    };
    let check_tiles = |tiles: &[Propagated], sizes: &[i64], tids: &[i64]| {
        let w = want(sizes, tids);
        for (j, t) in tiles.iter().enumerate() {
            let Ok(t) = t else { continue };
            let got = distinct_elements(t, tids, sizes, &[]);
            assert_eq!(
                got, w[j],
                "{}: operand {j}, sizes {sizes:?}, tile ids {tids:?}: {t}",
                c.attrs
            );
        }
    };
    let mut count = Count {
        symbolic: symbolic.iter().all(|t| t.is_ok()),
        ..Count::default()
    };
    for t in &symbolic {
        if let Err(e) = t {
            assert!(e.contains(refusal), "{}: {e}", c.attrs);
        }
    }
    let mut last: Option<(Vec<i64>, Vec<Propagated>)> = None;
    count.tilings = for_each_tiling(&extents, |sizes, tids| {
        check_tiles(&symbolic, sizes, tids);
        if last.as_ref().map(|(s, _)| s.as_slice()) != Some(sizes) {
            let (_, _, tiles) = propagate(c, Some(sizes));
            if tiles.iter().all(|t| t.is_ok()) {
                count.sizes_with_tiles += 1;
            } else {
                count.sizes_without += 1;
            }
            for t in &tiles {
                if let Err(e) = t {
                    assert!(e.contains(refusal), "{}: sizes {sizes:?}: {e}", c.attrs);
                }
            }
            last = Some((sizes.to_vec(), tiles));
        }
        let (_, tiles) = last.as_ref().expect("propagated");
        check_tiles(tiles, sizes, tids);
    });
    count
}

/// The row-major position of index `i` in an array of dimensions `d`.
fn linear(i: &[i64], d: &[i64]) -> usize {
    i.iter().zip(d).fold(0, |acc, (&x, &n)| acc * n + x) as usize
}

#[test]
fn conv_nhwc_steps_read_what_the_evaluator_reads() {
    let c = Conv::new(
        &[1, 5, 5, 2],
        &[3, 3, 2, 2],
        &[1, 3, 3, 2],
        "window={size=3x3}, dim_labels=b01f_01io->b01f",
    );
    let n = check(&c, "");
    assert!(n.symbolic, "{n:?}");
    assert_eq!(n.sizes_without, 0, "{n:?}");
    assert!(n.tilings >= 10_000, "{n:?}");
}

#[test]
fn conv_nchw_steps_read_what_the_evaluator_reads() {
    let c = Conv::new(
        &[1, 2, 5, 5],
        &[2, 2, 3, 3],
        &[1, 2, 3, 3],
        "window={size=3x3}, dim_labels=bf01_oi01->bf01",
    );
    let n = check(&c, "");
    assert!(n.symbolic, "{n:?}");
    assert_eq!(n.sizes_without, 0, "{n:?}");
}

#[test]
fn strided_conv_steps_are_exact_or_refused_with_gaps() {
    // Stride 2, window 2: a step of one tap reads every other element; a step of both taps
    // reads a run. Symbolically the window step may hold one tap or two: the stride
    // `2 - min(taps - 1, 1)` reads either exactly (issue 37: XLA's strided case).
    let touching = Conv::new(
        &[1, 8, 1],
        &[2, 1, 1],
        &[1, 4, 1],
        "window={size=2 stride=2}, dim_labels=b0f_0io->b0f",
    );
    let n = check(&touching, "with gaps");
    assert!(n.symbolic && n.sizes_without == 0, "{n:?}");
    // Stride 2, window 3: a step of two taps followed by one of one tap reads exactly too.
    let overlapping = Conv::new(
        &[1, 7, 2],
        &[3, 2, 1],
        &[1, 3, 1],
        "window={size=3 stride=2}, dim_labels=b0f_0io->b0f",
    );
    let n = check(&overlapping, "with gaps");
    assert!(n.symbolic && n.sizes_without == 0, "{n:?}");
    // Stride 3, window 2: only steps of one tap have a tile.
    let narrow = Conv::new(
        &[1, 8, 1],
        &[2, 1, 1],
        &[1, 3, 1],
        "window={size=2 stride=3}, dim_labels=b0f_0io->b0f",
    );
    let n = check(&narrow, "with gaps");
    assert!(n.sizes_with_tiles > 0 && n.sizes_without > 0, "{n:?}");
}

#[test]
fn dilated_conv_steps_read_what_the_evaluator_reads() {
    // XLA's dilated case in 1-D: one output position, the window's taps 2 apart.
    let c = Conv::new(
        &[1, 5, 2],
        &[3, 2, 2],
        &[1, 1, 2],
        "window={size=3 rhs_dilate=2}, dim_labels=b0f_0io->b0f",
    );
    let n = check(&c, "");
    assert!(n.symbolic, "{n:?}");
    assert_eq!(n.sizes_without, 0, "{n:?}");
}

#[test]
fn padded_conv_steps_read_what_the_evaluator_reads() {
    // Padding 1 low, 2 high: the input tile masks the padded positions, the kernel tile the
    // taps that read only padding for every output of the tile.
    let c = Conv::new(
        &[1, 6, 1],
        &[3, 1, 1],
        &[1, 7, 1],
        "window={size=3 pad=1_2}, dim_labels=b0f_0io->b0f",
    );
    let n = check(&c, "");
    assert!(n.symbolic, "{n:?}");
    assert_eq!(n.sizes_without, 0, "{n:?}");
    // Stride 2 and padding 1 on each side, two input features.
    let c = Conv::new(
        &[1, 7, 2],
        &[3, 2, 1],
        &[1, 4, 1],
        "window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f",
    );
    let n = check(&c, "with gaps");
    assert!(n.sizes_with_tiles > 0, "{n:?}");
}

#[test]
fn a_window_folded_by_padding_has_no_step_tiles() {
    // One input element, window 2, stride 2, padding 1: the one output reads it through tap
    // 1 only, and the maps fix the tap (no window variable left). A step of tap 0 reads
    // nothing, so tiles that hold tap 1 at every step would read it twice: none is given,
    // unless the window is read in one step.
    let c = Conv::new(
        &[1, 1, 1],
        &[2, 1, 1],
        &[1, 1, 1],
        "window={size=2 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f",
    );
    let (_, _, tiles) = propagate(&c, None);
    for t in &tiles {
        let err = t.as_ref().expect_err("no tile");
        assert!(err.contains("folded by its bounds"), "{err}");
    }
    let n = check(&c, "folded by its bounds");
    assert!(n.sizes_with_tiles > 0 && n.sizes_without > 0, "{n:?}");
}
