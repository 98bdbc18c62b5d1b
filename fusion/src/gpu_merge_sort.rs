//! The GPU sort of rows longer than a block's shared memory holds (the bitonic emitter's
//! limit, [`crate::gpu_sort`]): a merge sort in global memory, one launch per pass.
//!
//! Pass `p` merges the sorted runs of `w = 2^p` elements of every row into runs of `2w`,
//! reading one set of buffers and writing another (the operands, then the outputs and a
//! scratch copy of them in turn, arranged so that the last pass writes the outputs).
//! A thread per element: it finds where its element lands by a binary search in the run
//! it is merged with — an element of the left run goes after the right run's elements that
//! are strictly before it, one of the right run after the left run's elements it is not
//! strictly before — and stores it there. Ties keep the left run first, so the merge is
//! stable and the result is the stable sort's (the evaluator's) for any comparator that
//! is a strict weak order; no positions are needed, and no two threads write one element.
//! `ceil(log2 n)` passes of `log2(2w)` comparator calls per element.
//!
//! Only sorts (a top-k's long rows stay on the library routine: its outputs are `k`
//! wide, too narrow to merge in).

use affine::Expr;
use hlo::{CompId, InstrId, Opcode};

use crate::gpu_launch::{element_launch, Launch};

/// A long sort's launch, the same for every pass.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeSortLaunch {
    /// The comparator computation.
    pub comparator: CompId,
    /// The sorted logical dimension.
    pub dim: usize,
    /// The operands' logical dimensions.
    pub dims: Vec<i64>,
    /// Row length.
    pub n: i64,
    /// A thread per element of the outputs, in the first output's physical order (the
    /// thread map's results: the element's logical index, read at the same index and
    /// stored at its merged position along `dim`).
    pub launch: Launch,
}

impl MergeSortLaunch {
    /// The passes' run widths in order: 1, 2, 4, .. (below `n`).
    pub fn widths(&self) -> Vec<i64> {
        let mut w = 1;
        let mut out = Vec::new();
        while w < self.n {
            out.push(w);
            w *= 2;
        }
        out
    }

    /// Whether pass `p` of `passes` writes the scratch buffers (else the outputs): the
    /// last pass writes the outputs, and each pass writes what the next one reads.
    pub fn writes_scratch(pass: usize, passes: usize) -> bool {
        (passes - 1 - pass) % 2 == 1
    }

    /// Comparator calls of one binary search in a pass merging runs of `w`.
    pub fn search_steps(w: i64) -> i64 {
        i64::from(64 - (w as u64).leading_zeros())
    }

    /// `sort (merge pass W of P, global memory) emitter: blocks=B threads=T steps=S`
    /// (the launch line of pass `p`'s kernel comment).
    pub fn dims_text(&self, pass: usize) -> String {
        let widths = self.widths();
        let w = widths.get(pass).copied().unwrap_or(0);
        format!(
            "sort (merge pass {} of {}: runs of {w}, global memory) emitter: blocks={} threads={} \
             search steps={}",
            pass + 1,
            widths.len(),
            self.launch.blocks,
            self.launch.threads,
            Self::search_steps(w)
        )
    }
}

/// The merge sort launch of instruction `id` of `module`'s computation `comp`: a `sort`
/// along one dimension, with a comparator, whose rows do not fit the bitonic emitter's
/// shared memory on `device` (`rows_fit`: [`crate::gpu_sort::sort_launch`] took it);
/// `None` for anything else.
pub fn merge_sort_launch(
    module: &hlo::Module,
    comp: CompId,
    id: InstrId,
    rows_fit: bool,
) -> Result<Option<MergeSortLaunch>, affine::MapError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Sort || rows_fit {
        return Ok(None);
    }
    let (Some([d]), Some(comparator), Some(&first)) = (
        instr.dimensions(),
        instr.to_apply(),
        instr.operands().first(),
    ) else {
        return Ok(None);
    };
    let dims = c.instr(first).shape().dims().to_vec();
    let Some(dim) = usize::try_from(*d).ok().filter(|&d| d < dims.len()) else {
        return Ok(None);
    };
    let n = dims[dim];
    if n < 2 || dims.iter().any(|&e| e <= 0) || n > i64::from(i32::MAX) {
        return Ok(None);
    }
    let leaves: Vec<&hlo::Shape> = if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().iter().collect()
    } else {
        vec![instr.shape()]
    };
    if leaves.len() != instr.operands().len() {
        return Ok(None);
    }
    for (&op, leaf) in instr.operands().iter().zip(&leaves) {
        let s = c.instr(op).shape();
        let typed = s
            .element_type()
            .and_then(hlo::ElementType::byte_width)
            .is_some_and(|w| w > 0);
        if s.dims() != dims.as_slice()
            || leaf.dims() != dims.as_slice()
            || !typed
            || leaf.element_type() != s.element_type()
        {
            return Ok(None);
        }
    }
    let m2m: Vec<i64> = leaves[0]
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_default();
    let launch = element_launch(&dims, &m2m)?;
    Ok(Some(MergeSortLaunch {
        comparator,
        dim,
        dims,
        n,
        launch,
    }))
}

/// The start of the run an element at position `i` along the sorted dimension is merged
/// in, in a pass of width `w`: `(i floordiv 2w) * 2w`.
pub fn merge_base(i: Expr, w: i64) -> Expr {
    i.floor_div(Expr::constant(2 * w)) * Expr::constant(2 * w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(n: i64, layout: &str) -> String {
        format!(
            "HloModule m\n\ncmp {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
             ROOT lt = pred[] compare(a, b), direction=LT\n}}\n\n\
             ENTRY e {{\n  x = f32[3,{n}]{layout} parameter(0)\n  \
             ROOT s = f32[3,{n}]{layout} sort(x), dimensions={{1}}, to_apply=cmp\n}}\n"
        )
    }

    fn launch_of(text: &str, fit: bool) -> Option<MergeSortLaunch> {
        let m = hlo::parse_module(text).unwrap();
        let comp = m.entry_id();
        merge_sort_launch(&m, comp, m.computation(comp).root(), fit).unwrap()
    }

    #[test]
    fn passes_double_the_runs_and_end_in_the_outputs() {
        let l = launch_of(&sort(9000, "{0,1}"), false).unwrap();
        assert_eq!(l.widths().len(), 14);
        assert_eq!(l.widths()[13], 8192);
        assert_eq!((l.launch.threads, l.launch.blocks), (128, 211));
        // 14 passes: the first writes the scratch, the last the outputs, alternating.
        let targets: Vec<bool> = (0..14)
            .map(|p| MergeSortLaunch::writes_scratch(p, 14))
            .collect();
        assert!(targets[0] && !targets[13]);
        assert!(targets.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(MergeSortLaunch::search_steps(1), 1);
        assert_eq!(MergeSortLaunch::search_steps(8192), 14);
        assert!(l
            .dims_text(0)
            .starts_with("sort (merge pass 1 of 14: runs of 1"));
        // The threads walk the column-major output: consecutive threads down a column.
        assert!(
            l.launch
                .thread_map_text()
                .contains("-> ((th_x + bl_x * 2) mod 3, (th_x + bl_x * 128) floordiv 3)"),
            "{}",
            l.launch.thread_map_text()
        );
    }

    #[test]
    fn rows_that_fit_and_top_ks_take_no_merge_sort() {
        assert!(launch_of(&sort(9000, ""), true).is_none());
        let topk = "HloModule m\n\nENTRY e {\n  x = f32[4,20000] parameter(0)\n  \
                    ROOT t = (f32[4,3], s32[4,3]) topk(x), k=3, largest=true\n}\n";
        assert!(launch_of(topk, false).is_none());
    }
}
