//! The GPU select-and-scatter emitter's decision: which of the two forms of
//! [`crate::select_scatter`] a max-pool gradient runs in on a GPU, and its thread map
//! from a thread's coordinates to the element of the iteration space it handles
//! (`(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> (index)`).
//!
//! Both forms write every output element from exactly one thread, so neither needs an
//! atomic nor depends on the threads' order:
//! - **tiled** (the windows tile the operand): a thread per window (source element); it
//!   runs the select over its taps and writes each of them once. The map's results are
//!   the source's index, consecutive threads on the source's minor-most physical
//!   dimension (their taps `stride` elements apart in the operand and the output).
//! - **gather** (overlapping windows, or gaps between them): a thread per operand element;
//!   it runs the select of every window that may cover it (`covering` per dimension, in
//!   the source's row-major order) and folds the source values of those that chose it.
//!   The map's results are the output's index, consecutive threads on its minor-most
//!   physical dimension: the stores coalesce, and the windows a warp re-selects overlap,
//!   so their taps come from L1. Each target sees exactly the updates, in exactly the
//!   order, of the sequential definition (the evaluator's), whatever the combiner.
//!
//! Not taken: a thread per window scattering with atomics where windows overlap. A float
//! add (the gradient's combiner) would then depend on the threads' timing, which hloc
//! refuses (ARCHITECTURE.md's GPU section: outputs never depend on the schedule), and the
//! output would need its init stored by a launch of its own first. Its price, `covering`
//! times fewer selects per element than the gather form, is left to a two-launch form
//! (the chosen tap per window, then the gather over those) that needs a scratch buffer.
//!
//! A thread computes one element (no unroll): neither form's accesses are contiguous
//! runs a vector load could take.

use std::fmt;

use hlo::attrs::WindowDim;

use crate::gpu_launch::{element_launch, Launch};
use crate::select_scatter::{plan, SasForm, SasPlan};

/// A select-and-scatter's GPU launch.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectScatterLaunch {
    /// The form and its window counts.
    pub plan: SasPlan,
    /// The iteration space's logical dimensions: the source's (tiled) or the operand's
    /// (gather).
    pub space: Vec<i64>,
    /// Grid, block and thread map (results: the iteration space's logical index).
    pub launch: Launch,
}

impl SelectScatterLaunch {
    /// Select evaluations (comparisons of two taps) one thread runs at most: the window's
    /// taps, times the covering windows in the gather form.
    pub fn selects_per_thread(&self) -> i64 {
        match self.plan.form {
            SasForm::Tiled => self.plan.taps,
            SasForm::Gather => self.plan.taps * self.plan.covering.iter().product::<i64>(),
        }
    }

    /// `select-and-scatter (FORM) emitter: blocks=B threads=T selects/thread=S` (the
    /// launch line of dumps and kernel comments).
    pub fn dims_text(&self) -> String {
        format!(
            "select-and-scatter ({}) emitter: blocks={} threads={} selects/thread={}",
            FormText(self.plan.form),
            self.launch.blocks,
            self.launch.threads,
            self.selects_per_thread()
        )
    }
}

/// A form's name in the launch line.
struct FormText(SasForm);

impl fmt::Display for FormText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            SasForm::Tiled => "a thread per window",
            SasForm::Gather => "a thread per operand element",
        })
    }
}

/// The GPU launch of a select-and-scatter over `window`, whose operand has logical
/// dimensions `operand` and the result the layout `result_m2m`, and whose source has
/// `source` laid out by `source_m2m` (empty: row-major), on any GPU (the form and
/// the map depend on the window and the layouts only); `None` where
/// [`crate::select_scatter::plan`] refuses the window (the library routine runs it).
pub fn select_scatter_launch(
    window: &[WindowDim],
    (operand, result_m2m): (&[i64], &[i64]),
    (source, source_m2m): (&[i64], &[i64]),
) -> Result<Option<SelectScatterLaunch>, affine::MapError> {
    let Some(plan) = plan(window, operand, source) else {
        return Ok(None);
    };
    let (space, m2m) = match plan.form {
        SasForm::Tiled => (source, source_m2m),
        SasForm::Gather => (operand, result_m2m),
    };
    let launch = element_launch(space, m2m)?;
    Ok(Some(SelectScatterLaunch {
        plan,
        space: space.to_vec(),
        launch,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(size: i64, stride: i64, padding_low: i64) -> WindowDim {
        WindowDim {
            size,
            stride,
            padding_low,
            padding_high: 0,
            window_dilation: 1,
            base_dilation: 1,
            reversal: false,
        }
    }

    /// Every element of the iteration space is handled by exactly one thread (by
    /// enumeration), consecutive threads on consecutive elements of its physical order.
    #[test]
    fn thread_maps_cover_the_space_once_in_physical_order() {
        // A 2x2 pool of stride 2 over NHWC (tiled: the source's space, layout {3,2,1,0}),
        // and a 3-wide window of stride 2 over a column-major operand (gather).
        let tiled = [dim(1, 1, 0), dim(2, 2, 0), dim(2, 2, 0), dim(1, 1, 0)];
        let gather = [dim(3, 2, 1), dim(1, 1, 0)];
        // (window, (operand, result layout), (source, source layout), form)
        type Case<'a> = (
            &'a [WindowDim],
            (&'a [i64], &'a [i64]),
            (&'a [i64], &'a [i64]),
        );
        let cases: [(Case<'_>, SasForm); 2] = [
            (
                (
                    &tiled,
                    (&[2, 6, 6, 3], &[3, 2, 1, 0]),
                    (&[2, 3, 3, 3], &[3, 2, 1, 0]),
                ),
                SasForm::Tiled,
            ),
            (
                (&gather, (&[9, 5], &[0, 1]), (&[5, 5], &[])),
                SasForm::Gather,
            ),
        ];
        for ((w, (op, rm), (src, sm)), form) in cases {
            let l = select_scatter_launch(w, (op, rm), (src, sm))
                .unwrap()
                .expect("a launch");
            assert_eq!(l.plan.form, form);
            let space = if form == SasForm::Tiled { src } else { op };
            let order = crate::gpu_launch::physical_order(
                space.len(),
                if form == SasForm::Tiled { sm } else { rm },
            );
            let n: i64 = space.iter().product();
            let mut seen = vec![0; n as usize];
            crate::gpu_launch::for_each_thread_point(&l.launch.thread_map, |flat, idx| {
                // The physical position of idx must be the thread's linear number.
                let mut phys = 0;
                for &d in order.iter().rev() {
                    phys = phys * space[d] + idx[d];
                }
                assert_eq!(phys, flat[3] * l.launch.threads + flat[0], "{form:?}");
                seen[phys as usize] += 1;
            });
            assert!(seen.iter().all(|&s| s == 1), "{form:?}: {seen:?}");
        }
    }

    #[test]
    fn launch_lines_count_the_selects_per_thread() {
        // 3x3 windows of stride 2: up to 2x2 covering windows of 9 taps each.
        let w = [dim(3, 2, 1), dim(3, 2, 1)];
        let l = select_scatter_launch(&w, (&[8, 8], &[]), (&[4, 4], &[]))
            .unwrap()
            .unwrap();
        assert_eq!(
            l.dims_text(),
            "select-and-scatter (a thread per operand element) emitter: blocks=1 \
             threads=64 selects/thread=36"
        );
        // Dilated windows are the library's.
        let mut d = dim(2, 2, 0);
        d.window_dilation = 2;
        assert!(select_scatter_launch(&[d], (&[8], &[]), (&[3], &[]))
            .unwrap()
            .is_none());
    }
}
