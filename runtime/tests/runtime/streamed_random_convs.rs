//! Convolutions of random shapes, layouts, strides, dilations and feature groups, their
//! patch matrices streamed by rows in groups of producer blocks per GEMM call (the
//! threshold lowered to stream every one): the results match the reference evaluator's
//! for any number of scratch slots (threads), and some of them do group blocks.

use std::path::Path;

use runtime::CompileOptions;

use super::differential::random_args;

/// A small deterministic generator (xorshift), so that every run tests the same shapes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// A convolution module: batch `b`, input `h x w` with `ci` features in `groups` feature
/// groups, `co` outputs, a `kh x kw` window with `stride`, rhs dilation `dil` and `pad`
/// on every side, in NHWC (`b01f`) or NCHW (`bf01`).
#[derive(Debug, Clone, Copy)]
struct Conv {
    b: i64,
    h: i64,
    w: i64,
    ci: i64,
    co: i64,
    groups: i64,
    kh: i64,
    kw: i64,
    stride: i64,
    dil: i64,
    pad: i64,
    nchw: bool,
}

impl Conv {
    fn random(r: &mut Rng) -> Conv {
        let groups = r.pick(&[1, 1, 2]);
        Conv {
            b: 1 + r.below(3) as i64,
            h: 6 + r.below(12) as i64,
            w: 6 + r.below(12) as i64,
            ci: groups * (1 + r.below(6) as i64),
            co: groups * (1 + r.below(8) as i64),
            groups,
            kh: r.pick(&[1, 3, 3, 2]),
            kw: r.pick(&[1, 3, 3]),
            stride: r.pick(&[1, 1, 2]),
            dil: r.pick(&[1, 1, 2]),
            pad: r.below(2) as i64,
            nchw: r.below(3) == 0,
        }
    }

    fn out(&self, size: i64, k: i64) -> i64 {
        (size + 2 * self.pad - ((k - 1) * self.dil + 1)) / self.stride + 1
    }

    fn hlo(&self) -> String {
        let (oh, ow) = (self.out(self.h, self.kh), self.out(self.w, self.kw));
        let (x, o, labels) = if self.nchw {
            (
                format!("{},{},{},{}", self.b, self.ci, self.h, self.w),
                format!("{},{},{},{}", self.b, self.co, oh, ow),
                "bf01_01io->bf01",
            )
        } else {
            (
                format!("{},{},{},{}", self.b, self.h, self.w, self.ci),
                format!("{},{},{},{}", self.b, oh, ow, self.co),
                "b01f_01io->b01f",
            )
        };
        let wt = format!(
            "{},{},{},{}",
            self.kh,
            self.kw,
            self.ci / self.groups,
            self.co
        );
        let (s, d, p) = (self.stride, self.dil, self.pad);
        format!(
            "HloModule conv\nENTRY e {{\n  x = f32[{x}] parameter(0)\n  w = f32[{wt}] parameter(1)\n  \
             ROOT c = f32[{o}] convolution(x, w), window={{size={}x{} stride={s}x{s} \
             pad={p}_{p}x{p}_{p} rhs_dilate={d}x{d}}}, dim_labels={labels}, \
             feature_group_count={}\n}}\n",
            self.kh, self.kw, self.groups
        )
    }
}

fn options(threads: usize) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("streamed_random_convs")),
        threads: Some(threads),
        stream_min_bytes: Some(0),
        ..CompileOptions::default()
    }
}

#[test]
fn random_streamed_convolutions_match_the_evaluator() {
    let mut r = Rng(0x5eed_c0de);
    let (mut streamed, mut grouped) = (0, 0);
    for case in 0..24 {
        let conv = Conv::random(&mut r);
        if conv.out(conv.h, conv.kh) < 1 || conv.out(conv.w, conv.kw) < 1 {
            continue;
        }
        let text = conv.hlo();
        let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let threads = [1, 2, 3][case % 3];
        let exe = runtime::compile(&m, &options(threads)).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let thunks = plan::thunks_text(&exe.plan().program);
        streamed += usize::from(thunks.contains("streamed gemm"));
        grouped += usize::from(thunks.contains("blocks per gemm call"));
        let args = random_args(&m, case as u64);
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&m, &args, &outs)
            .unwrap_or_else(|e| panic!("{conv:?} threads {threads}: {e}\n{text}\n{thunks}"));
    }
    assert!(
        streamed >= 8,
        "only {streamed} of the convolutions streamed"
    );
    assert!(grouped >= 4, "only {grouped} streamed in groups of blocks");
}
