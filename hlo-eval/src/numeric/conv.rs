//! `convolution` with any dimension labels, strides, padding, lhs (base) and rhs
//! (window) dilation, window reversal, feature groups and batch groups.
//!
//! Operands are transposed to `[batch, spatial..., feature]` and
//! `[out_feature, spatial..., in_feature]`; chunks of output positions become patch
//! matrices multiplied by the kernel matrix with `dot`'s cache-friendly matmul. The
//! result is built as `[batch, spatial..., feature]` and scattered into the output's
//! dimension order.

use super::dot::batched_matmul;
use super::util::{dims_of, elem_type, next_index, operand, product, strides};
use super::widen::{load, permuted_offsets, store, Buf, Domain, Num};
use super::KernelError;
use hlo::attrs::Window;
use hlo::{Instruction, Literal};

/// Per spatial dimension and output coordinate: (kernel index, input index) pairs.
type Taps = Vec<Vec<Vec<(usize, usize)>>>;

/// Sizes of a convolution, after grouping.
struct Geometry {
    in_batch: usize,
    in_features: usize,
    in_spatial: Vec<usize>,
    out_batch: usize,
    out_features: usize,
    out_spatial: Vec<usize>,
    kernel_spatial: Vec<usize>,
    /// Input features per feature group (the kernel's input feature size).
    group_features: usize,
    feature_groups: usize,
    batch_groups: usize,
    /// Per spatial dimension and output coordinate: (kernel index, input index) pairs.
    taps: Taps,
}

fn taps(window: &Window, g: &Geometry) -> Result<Taps, KernelError> {
    let mut all = Vec::with_capacity(g.in_spatial.len());
    for (d, w) in window.dims.iter().enumerate() {
        if w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1 {
            return Err(KernelError::Invalid(format!(
                "convolution: bad window in spatial dimension {d}"
            )));
        }
        let size = g.kernel_spatial[d] as i64;
        if w.size != size {
            return Err(KernelError::Invalid(format!(
                "convolution: window size {} differs from kernel size {size}",
                w.size
            )));
        }
        let n = g.in_spatial[d] as i64;
        let mut per_out = Vec::with_capacity(g.out_spatial[d]);
        for o in 0..g.out_spatial[d] as i64 {
            let mut list = Vec::new();
            for k in 0..size {
                let pos = o
                    .checked_mul(w.stride)
                    .and_then(|p| p.checked_add(k.checked_mul(w.window_dilation)?))
                    .and_then(|p| p.checked_sub(w.padding_low))
                    .ok_or_else(|| {
                        KernelError::Invalid("convolution: window position overflows".into())
                    })?;
                if pos < 0 || pos % w.base_dilation != 0 || pos / w.base_dilation >= n {
                    continue;
                }
                let kk = if w.reversal { size - 1 - k } else { k };
                list.push((kk as usize, (pos / w.base_dilation) as usize));
            }
            per_out.push(list);
        }
        all.push(per_out);
    }
    Ok(all)
}

/// The convolution on transposed operands; result `[out_batch, out_spatial..., O]`.
///
/// Per group (feature or batch group), output positions are processed in chunks: the
/// chunk's patches are gathered into a `[rows, taps * Cg]` matrix (zeros where the window
/// falls into padding or between dilated elements) and multiplied by the group's kernel
/// as a `[taps * Cg, O / groups]` matrix with the i-k-j matmul of `dot`.
fn conv_core<T: Num>(a: &[T], b: &[T], g: &Geometry) -> Vec<T> {
    const CHUNK: usize = 256;
    let rank = g.in_spatial.len();
    let cg = g.group_features;
    let taps = product(&g.kernel_spatial);
    let kc = taps * cg;
    let groups = g.feature_groups.max(g.batch_groups);
    let og = g.out_features / groups;
    let positions = product(&g.out_spatial);
    let in_positions = product(&g.in_spatial);
    let rows_total = g.out_batch * positions;
    let mut out = vec![T::default(); rows_total * g.out_features];
    if out.is_empty() || kc == 0 {
        return out;
    }
    // For each output position: (tap index, input spatial offset) of every valid tap.
    let k_strides = strides(&g.kernel_spatial);
    let i_strides = strides(&g.in_spatial);
    let mut taps_at: Vec<Vec<(usize, usize)>> = Vec::with_capacity(positions);
    let mut os = vec![0usize; rank];
    for _ in 0..positions {
        let lists: Vec<&Vec<(usize, usize)>> = (0..rank).map(|d| &g.taps[d][os[d]]).collect();
        let mut here = Vec::new();
        if lists.iter().all(|l| !l.is_empty()) {
            let lens: Vec<usize> = lists.iter().map(|l| l.len()).collect();
            let mut pos = vec![0usize; rank];
            loop {
                let (mut t, mut sp) = (0, 0);
                for d in 0..rank {
                    let (k, i) = lists[d][pos[d]];
                    t += k * k_strides[d];
                    sp += i * i_strides[d];
                }
                here.push((t, sp));
                if !next_index(&mut pos, &lens) {
                    break;
                }
            }
        }
        taps_at.push(here);
        next_index(&mut os, &g.out_spatial);
    }
    for q in 0..groups {
        let fg = if g.feature_groups > 1 { q } else { 0 };
        let bg = if g.batch_groups > 1 { q } else { 0 };
        let o0 = q * og;
        let mut kernel = vec![T::default(); kc * og];
        for oo in 0..og {
            let src = &b[(o0 + oo) * kc..(o0 + oo + 1) * kc];
            for (r, &v) in src.iter().enumerate() {
                kernel[r * og + oo] = v;
            }
        }
        for start in (0..rows_total).step_by(CHUNK) {
            let rows = CHUNK.min(rows_total - start);
            let mut patches = vec![T::default(); rows * kc];
            for r in 0..rows {
                let (n, pos) = ((start + r) / positions, (start + r) % positions);
                let nin = bg * g.out_batch + n;
                for &(t, sp) in &taps_at[pos] {
                    let src = (nin * in_positions + sp) * g.in_features + fg * cg;
                    let dst = r * kc + t * cg;
                    patches[dst..dst + cg].copy_from_slice(&a[src..src + cg]);
                }
            }
            let c = batched_matmul(&patches, &kernel, 1, rows, kc, og);
            for r in 0..rows {
                let dst = (start + r) * g.out_features + o0;
                out[dst..dst + og].copy_from_slice(&c[r * og..(r + 1) * og]);
            }
        }
    }
    out
}

/// Evaluates `convolution`.
pub(crate) fn convolution(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    const W: &str = "convolution";
    let lhs = operand(operands, 0, W)?;
    let rhs = operand(operands, 1, W)?;
    let dn = instr
        .conv_dimension_numbers()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing dim_labels")))?;
    let ld = dims_of(lhs.shape(), W)?;
    let rd = dims_of(rhs.shape(), W)?;
    let od = dims_of(instr.shape(), W)?;
    let check = |d: i64, rank: usize| super::util::dim(d, rank, "convolution dim_labels");
    let (ib, ifeat) = (
        check(dn.input_batch_dimension, ld.len())?,
        check(dn.input_feature_dimension, ld.len())?,
    );
    let isp = super::util::dim_list(&dn.input_spatial_dimensions, ld.len(), W)?;
    let (ki, ko) = (
        check(dn.kernel_input_feature_dimension, rd.len())?,
        check(dn.kernel_output_feature_dimension, rd.len())?,
    );
    let ksp = super::util::dim_list(&dn.kernel_spatial_dimensions, rd.len(), W)?;
    let (ob, of) = (
        check(dn.output_batch_dimension, od.len())?,
        check(dn.output_feature_dimension, od.len())?,
    );
    let osp = super::util::dim_list(&dn.output_spatial_dimensions, od.len(), W)?;
    if isp.len() != ksp.len() || isp.len() != osp.len() {
        return Err(KernelError::Invalid(format!("{W}: spatial ranks differ")));
    }
    let window = match instr.window() {
        Some(w) => w.clone(),
        None if isp.is_empty() => Window::default(),
        None => return Err(KernelError::Invalid(format!("{W}: missing window"))),
    };
    if window.dims.len() != isp.len() {
        return Err(KernelError::Invalid(format!(
            "{W}: window rank differs from the spatial rank"
        )));
    }
    let fgc = usize::try_from(instr.feature_group_count())
        .ok()
        .filter(|&g| g >= 1);
    let bgc = usize::try_from(instr.batch_group_count())
        .ok()
        .filter(|&g| g >= 1);
    let (Some(fgc), Some(bgc)) = (fgc, bgc) else {
        return Err(KernelError::Invalid(format!(
            "{W}: group counts must be positive"
        )));
    };
    let mut g = Geometry {
        in_batch: ld[ib],
        in_features: ld[ifeat],
        in_spatial: isp.iter().map(|&d| ld[d]).collect(),
        out_batch: od[ob],
        out_features: od[of],
        out_spatial: osp.iter().map(|&d| od[d]).collect(),
        kernel_spatial: ksp.iter().map(|&d| rd[d]).collect(),
        group_features: rd[ki],
        feature_groups: fgc,
        batch_groups: bgc,
        taps: Vec::new(),
    };
    if g.in_features != g.group_features * fgc
        || rd[ko] != g.out_features
        || !g.out_features.is_multiple_of(fgc)
        || !g.out_features.is_multiple_of(bgc)
        || g.in_batch != g.out_batch * bgc
    {
        return Err(KernelError::Invalid(format!(
            "{W}: feature/batch sizes do not agree with feature_group_count={fgc}, batch_group_count={bgc}"
        )));
    }
    g.taps = taps(&window, &g)?;
    let out_ty = elem_type(instr.shape(), W)?;
    let domain = Domain::of(&[lhs.element_type(), rhs.element_type(), out_ty]);
    let lperm: Vec<usize> = std::iter::once(ib)
        .chain(isp.iter().copied())
        .chain(std::iter::once(ifeat))
        .collect();
    let rperm: Vec<usize> = std::iter::once(ko)
        .chain(ksp.iter().copied())
        .chain(std::iter::once(ki))
        .collect();
    let operm: Vec<usize> = std::iter::once(ob)
        .chain(osp.iter().copied())
        .chain(std::iter::once(of))
        .collect();
    let a = load(domain, lhs, "convolution lhs")?.pick(&permuted_offsets(&ld, &lperm));
    let b = load(domain, rhs, "convolution rhs")?.pick(&permuted_offsets(&rd, &rperm));
    let out_offsets = permuted_offsets(&od, &operm);
    fn place<T: Num>(canonical: Vec<T>, offsets: &[usize]) -> Vec<T> {
        let mut out = vec![T::default(); canonical.len()];
        for (v, &o) in canonical.into_iter().zip(offsets) {
            out[o] = v;
        }
        out
    }
    let result = match (&a, &b) {
        (Buf::Int(x), Buf::Int(y)) => Buf::Int(place(conv_core(x, y, &g), &out_offsets)),
        (Buf::F32(x), Buf::F32(y)) => Buf::F32(place(conv_core(x, y, &g), &out_offsets)),
        (Buf::F64(x), Buf::F64(y)) => Buf::F64(place(conv_core(x, y, &g), &out_offsets)),
        (Buf::C64(x), Buf::C64(y)) => Buf::C64(place(conv_core(x, y, &g), &out_offsets)),
        (Buf::C128(x), Buf::C128(y)) => Buf::C128(place(conv_core(x, y, &g), &out_offsets)),
        _ => {
            return Err(KernelError::Invalid(format!(
                "{W}: operands in different domains"
            )))
        }
    };
    store(result, instr.shape(), W)
}
