//! The GPU select-and-scatter emitter's decision: which form a max-pool gradient runs in
//! on a GPU, and the thread maps from a thread's coordinates to the element of the
//! iteration space it handles (`(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id]
//! -> (index)`).
//!
//! Every form writes each output element from exactly one thread, so none needs an atomic
//! nor depends on the threads' order:
//! - **tiled** (the windows tile the operand, [`crate::select_scatter`]'s tiled form): a
//!   thread per window (source element); it runs the select over its taps and writes each
//!   of them once. The map's results are the source's index, consecutive threads on the
//!   source's minor-most physical dimension (their taps `stride` elements apart in the
//!   operand and the output).
//! - **gather** (gaps between the windows but no overlap: every operand element in at
//!   most one window): a thread per operand element; it runs the select of the window
//!   that may cover it and keeps the source value if that window chose it. The map's
//!   results are the output's index, consecutive threads on its minor-most physical
//!   dimension, so the stores coalesce.
//! - **two launches** (overlapping windows: `covering` windows per dimension may cover an
//!   element): one launch would re-run every covering window's select in each element's
//!   thread (3x3 windows of stride 2: 4 windows of 9 taps, 36 selects per element), so
//!   the select runs once per window instead. Launch 1, a thread per window (the tiled
//!   map), writes the chosen tap's number (row-major over the window, `s32`) into a
//!   scratch array laid out like the source; launch 2, a thread per operand element (the
//!   gather map), reads the chosen taps of the windows covering it, in the source's
//!   row-major order, and folds the source values of those that chose it. The fold's
//!   order and operands are the sequential definition's (the evaluator's), whatever the
//!   combiner, so the result is bit for bit the one-launch gather's.
//!
//! Not taken: a thread per window scattering with atomics where windows overlap. A float
//! add (the gradient's combiner) would then depend on the threads' timing, which hloc
//! refuses (ARCHITECTURE.md's GPU section: outputs never depend on the schedule), and the
//! output would need its init stored by a launch of its own first.
//!
//! A thread computes one element (no unroll): no form's accesses are contiguous runs a
//! vector load could take.

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
    /// Grid, block and thread map (results: the iteration space's logical index); in
    /// the two-launch form, the second launch's (a thread per operand element).
    pub launch: Launch,
    /// The two-launch form's first launch: a thread per window (results: the source's
    /// logical index), writing the chosen taps; `None` in the one-launch forms.
    pub choose: Option<Launch>,
}

impl SelectScatterLaunch {
    /// Windows that may cover one operand element (the product of `covering`).
    pub fn covering_windows(&self) -> i64 {
        self.plan.covering.iter().product()
    }

    /// Select evaluations (comparisons of two taps) one thread of the (last) launch runs
    /// at most: the window's taps, times the covering windows in the gather form, none
    /// in the two-launch form's second launch (it reads the chosen taps).
    pub fn selects_per_thread(&self) -> i64 {
        match (self.plan.form, &self.choose) {
            (_, Some(_)) => 0,
            (SasForm::Tiled, None) => self.plan.taps,
            (SasForm::Gather, None) => self.plan.taps * self.covering_windows(),
        }
    }

    /// The kernels the form launches in order: one, or two (choose, then gather).
    pub fn launches(&self) -> Vec<&Launch> {
        self.choose.iter().chain([&self.launch]).collect()
    }

    /// The launch line of launch `pass` (0 or 1 in the two-launch form, 0 otherwise),
    /// with the reason for two launches under the first: `select-and-scatter (FORM)
    /// emitter: blocks=B threads=T ...` (dumps and kernel comments).
    pub fn pass_text(&self, pass: usize) -> String {
        let Some(choose) = &self.choose else {
            return self.dims_text();
        };
        let c = self.covering_windows();
        if pass == 0 {
            format!(
                "select-and-scatter (two launches, 1 of 2: a thread per window) emitter: \
                 blocks={} threads={} selects/thread={}\n\
                 why two launches: the windows overlap (up to {c} cover an operand element): \
                 each window's select runs once here, not once per element it covers ({} \
                 selects per element in one launch)",
                choose.blocks,
                choose.threads,
                self.plan.taps,
                c * self.plan.taps
            )
        } else {
            format!(
                "select-and-scatter (two launches, 2 of 2: a thread per operand element) \
                 emitter: blocks={} threads={} chosen taps/thread={c}",
                self.launch.blocks, self.launch.threads
            )
        }
    }

    /// `select-and-scatter (FORM) emitter: blocks=B threads=T selects/thread=S` (the
    /// launch line of a one-launch form's dumps and kernel comments).
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
/// Overlapping windows (more than one may cover an element) take two launches, unless a
/// window's tap number would not fit the scratch array's `s32`.
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
    let overlap = plan.covering.iter().product::<i64>() > 1;
    let choose = if plan.form == SasForm::Gather && overlap && plan.taps <= i64::from(i32::MAX) {
        Some(element_launch(source, source_m2m)?)
    } else {
        None
    };
    Ok(Some(SelectScatterLaunch {
        plan,
        space: space.to_vec(),
        launch,
        choose,
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

    /// Overlapping windows take two launches, the first a thread per window over the
    /// source's physical order; windows that leave gaps without overlapping take one.
    #[test]
    fn overlapping_windows_take_two_launches() {
        let w = [dim(3, 2, 1), dim(1, 1, 0)];
        let l = select_scatter_launch(&w, (&[9, 5], &[0, 1]), (&[5, 5], &[0, 1]))
            .unwrap()
            .unwrap();
        let choose = l.choose.as_ref().expect("two launches");
        assert_eq!(l.launches().len(), 2);
        let mut seen = [0; 25];
        crate::gpu_launch::for_each_thread_point(&choose.thread_map, |flat, idx| {
            // Column-major source: element (i, j) is number j * 5 + i.
            let phys = idx[1] * 5 + idx[0];
            assert_eq!(phys, flat[3] * choose.threads + flat[0]);
            seen[phys as usize] += 1;
        });
        assert!(seen.iter().all(|&s| s == 1), "{seen:?}");
        // Gaps, no overlap (a 2-wide window of stride 3): one launch.
        let gaps = select_scatter_launch(&[dim(2, 3, 0)], (&[9], &[]), (&[3], &[]))
            .unwrap()
            .unwrap();
        assert_eq!(gaps.plan.form, SasForm::Gather);
        assert!(gaps.choose.is_none());
        assert_eq!(gaps.launches().len(), 1);
    }

    #[test]
    fn launch_lines_count_the_selects_per_thread() {
        // 3x3 windows of stride 2: up to 2x2 covering windows of 9 taps each.
        let w = [dim(3, 2, 1), dim(3, 2, 1)];
        let l = select_scatter_launch(&w, (&[8, 8], &[]), (&[4, 4], &[]))
            .unwrap()
            .unwrap();
        assert_eq!(
            l.pass_text(0),
            "select-and-scatter (two launches, 1 of 2: a thread per window) emitter: \
             blocks=1 threads=32 selects/thread=9\n\
             why two launches: the windows overlap (up to 4 cover an operand element): \
             each window's select runs once here, not once per element it covers (36 \
             selects per element in one launch)"
        );
        assert_eq!(
            l.pass_text(1),
            "select-and-scatter (two launches, 2 of 2: a thread per operand element) \
             emitter: blocks=1 threads=64 chosen taps/thread=4"
        );
        // Windows with gaps: one launch of a thread per element, one select each.
        let g = select_scatter_launch(&[dim(2, 3, 0)], (&[9], &[]), (&[3], &[]))
            .unwrap()
            .unwrap();
        assert_eq!(
            g.pass_text(0),
            "select-and-scatter (a thread per operand element) emitter: blocks=1 \
             threads=32 selects/thread=2"
        );
        // Dilated windows are the library's.
        let mut d = dim(2, 2, 0);
        d.window_dilation = 2;
        assert!(select_scatter_launch(&[d], (&[8], &[]), (&[3], &[]))
            .unwrap()
            .is_none());
    }
}
