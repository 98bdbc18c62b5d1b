//! Which reduction emitter a GPU kernel gets: one decision, asked by the code generator
//! and by `hloc indexing --coalescing`, so the code and the analysis cannot disagree. The
//! hero is a reduce (alone, or a fusion's root, or read by an elementwise epilogue at the
//! output index; a variadic one through a tuple root); its reducer must be one the lanes
//! may reassociate; the launch is the row emitter's or the column emitter's, by which
//! physical dimensions are reduced.

use device::Device;
use hlo::{InstrId, Opcode};

use crate::gpu_column_reduction::column_reduction_launch;
use crate::gpu_hero::hero_under_epilogue;
use crate::gpu_launch::Launch;
use crate::gpu_row_reduction::row_reduction_launch;
use crate::gpu_variadic::{reassociable_variadic, tuple_hero};

/// The reduction emitter's choice for the kernel rooted at `root` of `comp` (`fused`:
/// `comp` is a fusion's computation; otherwise the kernel is `root` alone, its operands
/// other kernels' results): its hero (a single-input reduce, the root itself or, in a
/// fusion, read by elementwise ops at their own index, see [`hero_under_epilogue`]) and the
/// launch — the row emitter's over the input's minor-most physical dimensions, the column
/// emitter's over dimensions with kept ones minor to them — when the reducer is one associative and commutative op the lanes may reassociate
/// (`hlo::ir::reducer`) on a type of 32 bits or more, or a max or min of narrower floats
/// (exact in any order; a 16-bit float sum keeps its in-order loop). A variadic reduce
/// (an argmax) takes the same launches when its reducer is one the lanes may reassociate
/// ([`reassociable_variadic`]); in a fusion its hero is found from a tuple root by
/// [`tuple_hero`]. The code generator and `hloc indexing --coalescing` both ask this, so
/// they cannot disagree.
pub fn reduction_of(
    module: &hlo::Module,
    comp: &hlo::Computation,
    root: InstrId,
    fused: bool,
    device: &Device,
) -> Option<(InstrId, Launch)> {
    use hlo::ir::reducer::{classify, Reducer};
    let tuple_root = comp.instr(root).shape().is_tuple();
    let hero = match (fused, tuple_root) {
        (true, false) => hero_under_epilogue(comp, root, |i| i.opcode() == Opcode::Reduce)?,
        (true, true) => tuple_hero(comp, root)?,
        (false, _) => root,
    };
    let instr = comp.instr(hero);
    let n = instr.operands().len() / 2;
    if instr.opcode() != Opcode::Reduce || n == 0 || instr.operands().len() != 2 * n {
        return None;
    }
    if n == 1 {
        let kind = classify(module, instr.to_apply()?)?;
        let ty = instr.shape().element_type()?;
        let exact_in_any_order = matches!(kind, Reducer::Max | Reducer::Min);
        let narrow = ty.byte_width().is_some_and(|w| w < 4);
        if ty.is_complex() || (ty.is_float() && narrow && !exact_in_any_order) {
            return None;
        }
    } else if !reassociable_variadic(module, instr.to_apply()?, n) {
        return None;
    }
    let input = comp.instr(instr.operands()[0]).shape().as_array()?;
    let m2m = input
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_default();
    let reduced = instr.dimensions()?;
    let launch = match row_reduction_launch(input.dims(), &m2m, reduced, device).ok()? {
        Some(l) => l,
        None => column_reduction_launch(input.dims(), &m2m, reduced, device).ok()??,
    };
    Some((hero, launch))
}

/// Elements each thread of a reduction folds serially below which a small grid is left
/// alone: splitting would add a kernel to save little.
pub const SPLIT_MIN_SERIAL: i64 = 64;

/// Where the GPU splits reduce `id` of `comp` into two reduces (the tree-reduction
/// rewriting before fusion): `(reduced dimension of its input, parts)`, or `None` when its
/// launch ([`reduction_of`]) already gives every multiprocessor of `device` a block, or
/// leaves each thread little to fold. A long reduction into few outputs (a loss summed over
/// everything, the per-channel sums of a huge batch over few channels) would otherwise run
/// on as many blocks as it has outputs while the other multiprocessors idle. The split
/// dimension is the longest reduced one, cut in about `sqrt(n)` parts (a divisor of `n`
/// where one is near, so that no padding is needed): the first reduce then has
/// `sqrt(n)` times the outputs, enough blocks for the device, and the second reads only
/// those partials.
pub fn split_of(
    module: &hlo::Module,
    comp: &hlo::Computation,
    id: InstrId,
    device: &Device,
) -> Option<(usize, i64)> {
    let instr = comp.instr(id);
    // The tree-reduction rewriter splits single-operand reduces only.
    if instr.operands().len() != 2 {
        return None;
    }
    let (_, launch) = reduction_of(module, comp, id, false, device)?;
    let input = comp.instr(instr.operands()[0]).shape().as_array()?;
    let elements: i64 = input.dims().iter().product();
    let units = i64::from(device.compute.units).max(1);
    let threads = (launch.blocks * launch.threads).max(1);
    if launch.blocks >= units || elements / threads < SPLIT_MIN_SERIAL {
        return None;
    }
    let (dim, n) = instr
        .dimensions()?
        .iter()
        .filter_map(|&r| Some((usize::try_from(r).ok()?, *input.dims().get(r as usize)?)))
        .max_by_key(|&(d, n)| (n, std::cmp::Reverse(d)))?;
    if n < 4 {
        return None;
    }
    Some((dim, split_parts(n)))
}

/// About `sqrt(n)` parts of `n` (`n >= 4`): the largest divisor of `n` from `sqrt(n)` down
/// to half of it, else `ceil(sqrt(n))` (the last part then padded).
fn split_parts(n: i64) -> i64 {
    let mut k = (n as f64).sqrt() as i64;
    while k * k < n {
        k += 1;
    }
    (k / 2..=k)
        .rev()
        .find(|&p| p >= 2 && n % p == 0)
        .unwrap_or(k)
}

#[cfg(test)]
mod tests {
    use super::{split_of, split_parts};

    /// `split_of` of the reduce named `r` in the one-reduce module of input `input`, result
    /// `output`, over `dims`.
    fn split(input: &str, output: &str, dims: &str, ty: &str) -> Option<(usize, i64)> {
        let text = format!(
            "HloModule m\nadd {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT s = {ty}[] add(a, b)\n}}\nENTRY e {{\n  p = {ty}{input} parameter(0)\n  z = {ty}[] constant(0)\n  ROOT r = {ty}{output} reduce(p, z), dimensions={{{dims}}}, to_apply=add\n}}\n"
        );
        let m = hlo::parse_module(&text).unwrap();
        let comp = m.entry();
        let id = comp.instructions().find(|(_, i)| i.name == "r").unwrap().0;
        split_of(&m, comp, id, &device::load("h200").unwrap())
    }

    #[test]
    fn long_reductions_into_few_outputs_split_and_wide_grids_do_not() {
        // One output of 2^24 elements: one block otherwise.
        assert_eq!(split("[16777216]", "[]", "0", "f32"), Some((0, 4096)));
        // Four columns of 2^20 rows: one column tile.
        assert_eq!(split("[1048576,4]", "[4]", "0", "f32"), Some((0, 1024)));
        // Several reduced dimensions: the longest splits.
        assert_eq!(split("[64,4096,9]", "[9]", "0,1", "f32"), Some((1, 64)));
        // A softmax's 4096 rows of 8192: 512 blocks already.
        assert_eq!(split("[4096,8192]", "[4096]", "1", "f32"), None);
        // Little to fold per thread: one block of 3 x 256 threads over 15,000 elements.
        assert_eq!(split("[3,5000]", "[3]", "1", "f32"), None);
        // A 16-bit float sum keeps its in-order loop: no reduction launch, no split.
        assert_eq!(split("[16777216]", "[]", "0", "f16"), None);
    }

    #[test]
    fn split_parts_cover_the_dimension_in_about_sqrt_parts() {
        for n in 4..5000i64 {
            let p = split_parts(n);
            let inner = (n + p - 1) / p;
            assert!(p >= 2 && p < n, "{n} -> {p}");
            assert!(
                p * inner >= n && p * (inner - 1) < n,
                "{n} -> {p} x {inner}"
            );
            let s = (n as f64).sqrt();
            assert!(
                (p as f64) <= s.ceil() && (p as f64) >= s / 2.0 - 1.0,
                "{n} -> {p}"
            );
        }
        assert_eq!(split_parts(16_777_216), 4096);
        assert_eq!(split_parts(1_048_576), 1024);
    }
}
