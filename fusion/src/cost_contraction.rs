//! Contractions the CPU code generator runs as loops, priced by what the loop does.
//!
//! A dot or convolution no library call takes (a depthwise convolution, its weight
//! gradient, an integer dot, a contraction fused with its consumer) is emitted by the
//! elemental emitter as one accumulator per output element and a loop nest over the
//! contraction's range variables, the last one innermost, every tap summed in order. The C
//! is compiled without `-ffast-math`, so a floating-point sum is not vectorized: each
//! multiply-add waits for the one before it (~4 cycles), 25-50x below the vector rate the
//! flops table assumes (the model read 0.01-0.05 of measured on such kernels). Where an
//! operand moves by a page or more per step of the innermost loop (a weight gradient summed
//! over the batch, the images a whole image apart) and one output's taps do not fit in the
//! first-level cache, every tap is a cache and TLB miss no prefetcher follows: another
//! ~20 ns each (0.004 of measured).
//!
//! [`LoopContraction`] is what the model keeps of such an op ([`crate::cost::OpInfo`];
//! [`crate::cost_loops`] sums a kernel's); its price per tap comes from the description's
//! `[loops]` section
//! (`tools/fit_loop_rates.py` fits it); a description without one prices the loop at its
//! compute rates, as any other flops.

use device::{Device, DeviceKind};
use hlo::{CompId, ElementType, InstrId, Module, Opcode};

/// Bytes of a cache line: an operand that moves by this much or more per tap reads a new
/// line for every tap.
const LINE_BYTES: f64 = 64.0;

/// Bytes of a page: an operand that moves by this much or more per tap defeats the
/// hardware prefetchers (they do not cross pages) and misses the first-level TLB.
const PAGE_BYTES: f64 = 4096.0;

/// The operand type class of a loop contraction, which picks its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopType {
    /// `f32` (or any float type not below).
    F32,
    /// `f64`.
    F64,
    /// `bf16` or `f16`, widened to `f32` per tap.
    Half,
    /// Integers (an integer sum is associative: vectorized).
    Int,
}

impl LoopType {
    /// The class of a contraction of operands stored as `lhs` and `rhs`.
    pub fn of(lhs: ElementType, rhs: ElementType) -> LoopType {
        let half = |t| matches!(t, ElementType::BF16 | ElementType::F16);
        if half(lhs) || half(rhs) {
            LoopType::Half
        } else if lhs == ElementType::F64 || rhs == ElementType::F64 {
            LoopType::F64
        } else if lhs.is_float() || rhs.is_float() {
            LoopType::F32
        } else {
            LoopType::Int
        }
    }
}

/// What the model knows of a dot or convolution run as a loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopContraction {
    /// Taps (multiply-adds) per output element: the product of the contraction's range
    /// extents (the emitter runs a convolution's whole window, taps in the padding
    /// included).
    pub taps_per_element: f64,
    /// The operand type class.
    pub ty: LoopType,
    /// Bytes the lhs and the rhs address move per step of the innermost loop.
    pub innermost_stride_bytes: [f64; 2],
    /// Bytes of the lhs and the rhs.
    pub operand_bytes: [f64; 2],
    /// The extent of the output's most-major dimension: the blocks the kernel is split into
    /// across the thread pool.
    pub blocks: f64,
}

impl LoopContraction {
    /// The loop a dot or convolution `id` of `comp` runs as, from its output-to-input
    /// maps and its operands' layouts; `None` for any other op, or one whose maps are not
    /// known.
    pub fn of(module: &Module, comp: CompId, id: InstrId) -> Option<LoopContraction> {
        let r = module.instr_ref(comp, id)?;
        let i = r.instr();
        if !matches!(i.opcode(), Opcode::Dot | Opcode::Convolution) || i.operands().len() != 2 {
            return None;
        }
        let c = r.computation();
        let shapes = [
            c.instr(i.operands()[0]).shape(),
            c.instr(i.operands()[1]).shape(),
        ];
        let groups = indexing::output_to_input(&r).ok()?;
        let group = groups.first()?;
        let maps: Vec<&affine::IndexingMap> = (0..2)
            .map(|k| Some(&group.operands.get(k)?.maps().next()?.map))
            .collect::<Option<_>>()?;
        let extent = |v: &affine::Interval| (v.hi - v.lo + 1).max(0) as f64;
        let ranges = maps[0].ranges();
        let taps_per_element: f64 = ranges.iter().map(extent).product();
        // The innermost loop: the last range variable that loops at all.
        let innermost = ranges.iter().rposition(|v| extent(v) > 1.0);
        let stride = |k: usize| -> f64 {
            let Some(s) = innermost else { return 0.0 };
            let sym = affine::Expr::range(s as u32);
            let strides = element_strides(shapes[k]);
            let elements: i64 = maps[k]
                .results()
                .iter()
                .zip(&strides)
                .map(|(&e, &st)| {
                    affine::linear::Linear::of(e).map_or(0, |l| l.coefficient(sym)) * st
                })
                .sum();
            let width = shapes[k]
                .element_type()
                .and_then(|t| t.byte_width())
                .unwrap_or(4);
            (elements.unsigned_abs() * width as u64) as f64
        };
        let ty = |k: usize| shapes[k].element_type().unwrap_or(ElementType::F32);
        Some(LoopContraction {
            taps_per_element,
            ty: LoopType::of(ty(0), ty(1)),
            innermost_stride_bytes: [stride(0), stride(1)],
            operand_bytes: shapes.map(|s| s.byte_size().unwrap_or(0).max(0) as f64),
            blocks: i.shape().dims().first().map_or(1.0, |&b| b.max(1) as f64),
        })
    }

    /// Seconds of one tap on one unit of `device`: the sum's chain at the `[loops]` rate
    /// of the operand type; where an operand moves by a line or more per tap and the lines
    /// one output's taps touch (its tile, which the next output along the innermost
    /// output dimension reads again) do not fit in the first-level cache, the line's
    /// transfer from the level they fit in, or, where an operand moves by a page or more
    /// and is larger than `far_operand_bytes`, a miss per tap on top of the chain (a
    /// depthwise weight gradient over 16 images, 2.4 MB, measured 17 ns per tap; over
    /// 1.2 MB it ran at the chain's rate). `None` without a `[loops]` section.
    pub fn tap_seconds(&self, device: &Device) -> Option<f64> {
        let l = device.loops.as_ref()?;
        let rate = match self.ty {
            LoopType::F32 => l.contraction_f32_flops_per_unit,
            LoopType::F64 => l.contraction_f64_flops_per_unit,
            LoopType::Half => l.contraction_half_flops_per_unit,
            LoopType::Int => l.contraction_int_flops_per_unit,
        };
        let chain = 2.0 / rate;
        let tile: f64 = self
            .innermost_stride_bytes
            .iter()
            .map(|&s| s.min(LINE_BYTES))
            .sum::<f64>()
            * self.taps_per_element;
        if tile <= device.cache.l1_bytes as f64 {
            return Some(chain);
        }
        let strided = self
            .innermost_stride_bytes
            .iter()
            .filter(|&&s| s >= LINE_BYTES);
        let l2 = l.far_operand_bytes as f64;
        let far = self
            .innermost_stride_bytes
            .iter()
            .zip(&self.operand_bytes)
            .any(|(&s, &bytes)| s >= PAGE_BYTES && bytes > l2);
        if far {
            return Some(chain + l.far_tap_s);
        }
        let units = f64::from(device.compute.units.max(1));
        let per_core = device.reread_bytes_per_s(tile as u64) / units;
        let lines = strided.count() as f64 * LINE_BYTES / per_core;
        Some(chain.max(lines))
    }

    /// Seconds of `evaluations` output elements on `device`, the blocks shared by its
    /// units (the busiest unit runs `ceil(blocks / units)` of them); `None` without a
    /// `[loops]` section or on a GPU.
    pub fn seconds(&self, device: &Device, evaluations: f64) -> Option<f64> {
        if device.kind != DeviceKind::Cpu {
            return None;
        }
        let tap = self.tap_seconds(device)?;
        let units = f64::from(device.compute.units.max(1));
        let busiest = (self.blocks / units).ceil() / self.blocks;
        Some(evaluations * self.taps_per_element * tap * busiest)
    }
}

/// Element strides of each dimension of an array shape in its layout (row-major without
/// one).
fn element_strides(s: &hlo::Shape) -> Vec<i64> {
    let dims = s.dims();
    let mut strides = vec![0i64; dims.len()];
    let order: Vec<usize> = match s.layout() {
        Some(l) if l.minor_to_major.len() == dims.len() => l
            .minor_to_major
            .iter()
            .filter_map(|&d| usize::try_from(d).ok())
            .collect(),
        _ => (0..dims.len()).rev().collect(),
    };
    let mut step = 1i64;
    for d in order {
        if let Some(x) = strides.get_mut(d) {
            *x = step;
            step = step.saturating_mul(dims[d].max(1));
        }
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Module {
        hlo::parse_module(text).unwrap()
    }

    fn of(m: &Module, name: &str) -> LoopContraction {
        let i = m.instr(name).unwrap();
        LoopContraction::of(m, i.comp_id(), i.id()).unwrap()
    }

    /// A depthwise 3x3 convolution: 9 taps per output, the innermost loop over the window's
    /// columns, a row of 128 channels (512 bytes) apart in the input and the weights; one
    /// output's lines (9 x 64 x 2 bytes) fit in the first-level cache, so a tap costs the
    /// chain: 2 flops at the `f32` rate.
    #[test]
    fn a_depthwise_convolution_costs_the_sum_chain() {
        let m = parse(
            "HloModule m\nENTRY e {\n  x = f32[8,32,32,128] parameter(0)\n  \
             w = f32[3,3,1,128] parameter(1)\n  ROOT c = f32[8,32,32,128] convolution(x, w), \
             window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=128\n}",
        );
        let lc = of(&m, "c");
        assert_eq!(lc.taps_per_element, 9.0);
        assert_eq!(lc.ty, LoopType::F32);
        assert_eq!(lc.innermost_stride_bytes, [512.0, 512.0]);
        assert_eq!(lc.blocks, 8.0);
        let cpu = device::load("cpu").unwrap();
        let l = cpu.loops.clone().unwrap();
        let tap = 2.0 / l.contraction_f32_flops_per_unit;
        assert_eq!(lc.tap_seconds(&cpu), Some(tap));
        // 8 blocks on 2 cores: 4 each.
        let outputs = 8.0 * 32.0 * 32.0 * 128.0;
        let want = outputs * 9.0 * tap * 0.5;
        assert!((lc.seconds(&cpu, outputs).unwrap() - want).abs() < 1e-12 * want);
    }

    /// A depthwise weight gradient sums 8 images x 32 x 32 taps per output, the innermost
    /// loop over the images, 512 KB apart: every tap pays the page-strided miss. Three
    /// blocks on two cores: the busiest runs two of them.
    #[test]
    fn a_page_strided_weight_gradient_pays_a_miss_per_tap() {
        let m = parse(
            "HloModule m\nENTRY e {\n  x = f32[8,32,32,128] parameter(0)\n  \
             g = f32[8,32,32,128] parameter(1)\n  ROOT c = f32[3,3,1,128] convolution(x, g), \
             window={size=32x32 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=128\n}",
        );
        let lc = of(&m, "c");
        assert_eq!(lc.taps_per_element, 8.0 * 32.0 * 32.0);
        assert_eq!(lc.innermost_stride_bytes, [524288.0, 524288.0]);
        let cpu = device::load("cpu").unwrap();
        let l = cpu.loops.clone().unwrap();
        let tap = 2.0 / l.contraction_f32_flops_per_unit + l.far_tap_s;
        assert_eq!(lc.tap_seconds(&cpu), Some(tap));
        let outputs = 9.0 * 128.0;
        let want = outputs * 8192.0 * tap * 2.0 / 3.0;
        assert!((lc.seconds(&cpu, outputs).unwrap() - want).abs() < 1e-12 * want);
        // A GPU description has no loops section: no loop price.
        assert_eq!(lc.seconds(&device::load("h100").unwrap(), outputs), None);
        // The same over 2 images of 16 x 16 (256 KB per operand, within the second-level
        // cache): a line per tap from there, below the chain.
        let m = parse(
            "HloModule m\nENTRY e {\n  x = f32[2,16,16,128] parameter(0)\n  \
             g = f32[2,16,16,128] parameter(1)\n  ROOT c = f32[3,3,1,128] convolution(x, g), \
             window={size=16x16 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=128\n}",
        );
        let small = of(&m, "c");
        assert_eq!(small.innermost_stride_bytes, [131072.0, 131072.0]);
        assert_eq!(small.operand_bytes, [262144.0, 262144.0]);
        // Tile: 512 taps x 128 bytes = 64 KB, in the second level.
        let line = 2.0 * 64.0 / (cpu.cache.l2_bytes_per_s / 2.0);
        let chain = 2.0 / l.contraction_f32_flops_per_unit;
        assert_eq!(small.tap_seconds(&cpu), Some(chain.max(line)));
    }

    /// An integer dot's rhs column is 256 elements (1 KB) apart per tap: its 512 taps touch
    /// 512 lines (32 KB) plus the contiguous lhs row, within the first-level cache, so
    /// the integer rate alone prices it. A `bf16` dot with a column-major rhs (its
    /// contraction contiguous) takes the half rate; a row-major rhs over a contraction of
    /// 4096 touches 256 KB of lines per output: a line per tap from the second level.
    #[test]
    fn strides_come_from_the_layouts() {
        let m = parse(
            "HloModule m\nENTRY e {\n  x = s32[256,512] parameter(0)\n  y = s32[512,256] parameter(1)\n  \
             a = bf16[64,4096] parameter(2)\n  b = bf16[4096,64]{0,1} parameter(3)\n  \
             c = bf16[4096,64] parameter(4)\n  \
             t = s32[256,256] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
             h = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
             r = bf16[64,64] dot(a, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
             ROOT o = (s32[256,256], bf16[64,64], bf16[64,64]) tuple(t, h, r)\n}",
        );
        let cpu = device::load("cpu").unwrap();
        let l = cpu.loops.clone().unwrap();
        let t = of(&m, "t");
        assert_eq!((t.ty, t.taps_per_element), (LoopType::Int, 512.0));
        assert_eq!(t.innermost_stride_bytes, [4.0, 1024.0]);
        assert_eq!(
            t.tap_seconds(&cpu),
            Some(2.0 / l.contraction_int_flops_per_unit)
        );
        let h = of(&m, "h");
        assert_eq!(
            (h.ty, h.innermost_stride_bytes),
            (LoopType::Half, [2.0, 2.0])
        );
        assert_eq!(
            h.tap_seconds(&cpu),
            Some(2.0 / l.contraction_half_flops_per_unit)
        );
        let r = of(&m, "r");
        assert_eq!(r.innermost_stride_bytes, [2.0, 128.0]);
        // Tile: 4096 x (2 + 64) bytes = 270 KB, in the second level: one line per tap.
        let line = 64.0 / (cpu.cache.l2_bytes_per_s / 2.0);
        let chain = 2.0 / l.contraction_half_flops_per_unit;
        assert_eq!(r.tap_seconds(&cpu), Some(chain.max(line)));
        assert_eq!(
            LoopContraction::of(&m, m.entry_id(), m.instr("o").unwrap().id()),
            None
        );
    }
}
