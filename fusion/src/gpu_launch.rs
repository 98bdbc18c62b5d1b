//! Which GPU emitter a kernel gets, its launch dimensions, and its thread map: the map from
//! a thread's coordinates to the output elements it computes, as an indexing map in XLA's
//! form `(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> (output index)` with
//! its domain. The kernel's loops and indices are this map composed with the fusion's
//! output-to-operand maps (`codegen` builds them), and `hloc indexing --coalescing` counts
//! the first warp's memory transactions through the same map, so the code and the analysis
//! cannot disagree. Decided here, beside the hero analysis, from the device description.

use std::fmt;

use affine::{Expr, IndexingMap, Interval, Var};
use device::Device;

/// Threads per warp on every NVIDIA GPU.
pub const WARP: i64 = 32;

/// Threads per block of the loop emitter (XLA's default too: four warps, so small kernels
/// still spread over many SMs).
pub const LOOP_THREADS: i64 = 128;

/// Bytes one thread loads at once at most (a 16-byte vector access).
pub const VECTOR_BYTES: i64 = 16;

/// Most elements one thread of the loop emitter computes in a row.
pub const MAX_UNROLL: i64 = 4;

/// The GPU emitter kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuEmitter {
    /// One output element per (thread, unroll step), consecutive threads on consecutive
    /// elements in the output's physical order.
    Loop,
    /// A reduction over the input's minor-most physical dimensions: `lanes` consecutive
    /// threads (at most a warp) per row stride through the row together, then combine
    /// their partial results by warp shuffles; the thread map goes to the reduction's
    /// input ([`crate::gpu_row_reduction`]).
    RowReduction {
        /// Threads per row: a power of two, at most [`WARP`], or a block of several warps.
        lanes: i64,
    },
    /// A reduction over dimensions with kept dimensions minor to them: a block's threads
    /// cover a tile of `columns` consecutive columns by `parts` rows, fold their column's
    /// rows `parts` apart, and combine the partials through a transposed shared tile and
    /// warp shuffles ([`crate::gpu_column_reduction`]).
    ColumnReduction {
        /// Consecutive columns per tile: a power of two, at most [`WARP`].
        columns: i64,
        /// Rows of the tile: the partials each column combines, a power of two.
        parts: i64,
    },
    /// A hero that moves data across physical dimensions: a block reads a tile along the
    /// operand's minor dimension into shared memory and writes it along the output's
    /// ([`crate::gpu_transpose`]).
    Transpose,
}

impl fmt::Display for GpuEmitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuEmitter::Loop => f.write_str("loop"),
            GpuEmitter::RowReduction { lanes } => write!(f, "row-reduction ({lanes} lanes/row)"),
            GpuEmitter::ColumnReduction { columns, parts } => {
                write!(
                    f,
                    "column-reduction ({columns} columns x {parts} rows/tile)"
                )
            }
            GpuEmitter::Transpose => f.write_str("transpose (32x32 shared tile)"),
        }
    }
}

/// A kernel's GPU launch: emitter kind, grid, block and thread map.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The emitter.
    pub emitter: GpuEmitter,
    /// Blocks along x (y and z are 1).
    pub blocks: i64,
    /// Threads per block along x (y and z are 1).
    pub threads: i64,
    /// Output elements one thread computes in a row (`unroll_id`'s extent).
    pub unroll: i64,
    /// `(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> (index)`, with the
    /// domain of the threads that compute something: the output's logical index for the
    /// loop emitter, the reduction input's for a reduction emitter (what each thread reads).
    pub thread_map: IndexingMap,
}

/// Positions of the thread map's dimension variables.
pub mod coords {
    /// Thread x.
    pub const TH_X: u32 = 0;
    /// Block x.
    pub const BL_X: u32 = 3;
    /// The chunk (range variable 0).
    pub const CHUNK: u32 = 0;
    /// The unroll step (range variable 1).
    pub const UNROLL: u32 = 1;
}

/// Names of the thread map's variables in XLA's text form.
const DIM_NAMES: [&str; 6] = ["th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z"];
const RANGE_NAMES: [&str; 2] = ["chunk_id", "unroll_id"];

impl Launch {
    /// The thread map in XLA's text form, with its variables named as XLA names them.
    pub fn thread_map_text(&self) -> String {
        rename_variables(&self.thread_map.to_string())
    }

    /// `blocks=B threads=T unroll=U` (the launch line of dumps and kernel comments).
    pub fn dims_text(&self) -> String {
        format!(
            "{} emitter: blocks={} threads={} unroll={}",
            self.emitter, self.blocks, self.threads, self.unroll
        )
    }
}

/// `text` (a map printed by `affine`) with `d0..d5` and `s0, s1` named `th_x..bl_z`,
/// `chunk_id, unroll_id`; other identifiers unchanged. The parser reads any identifier,
/// so the renamed text still parses to the same map.
fn rename_variables(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !(c.is_ascii_alphabetic() || c == '_') {
            out.push(c);
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, n)) = chars.peek() {
            if n.is_ascii_alphanumeric() || n == '_' {
                end = i + n.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let word = &text[start..end];
        let renamed = word
            .strip_prefix('d')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| DIM_NAMES.get(i))
            .or_else(|| {
                word.strip_prefix('s')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|i| RANGE_NAMES.get(i))
            });
        out.push_str(renamed.copied().unwrap_or(word));
    }
    out
}

/// The loop emitter's launch for an output of logical `dims` laid out by `minor_to_major`
/// (empty: row-major) with `elem_bytes`-byte elements on `device`:
/// - a thread computes `unroll` consecutive elements (up to 16 bytes, at most 4) when the
///   element count divides evenly and the device still gets a full block per SM, so its
///   loads and stores can become vector accesses;
/// - blocks of 128 threads (fewer, rounded up to a warp, for tiny outputs);
/// - element `((bl_x * threads + th_x) * unroll + unroll_id)` in physical order, so the
///   threads of a warp touch consecutive addresses of the output.
pub fn loop_launch(
    dims: &[i64],
    minor_to_major: &[i64],
    elem_bytes: i64,
    device: &Device,
) -> Result<Launch, affine::MapError> {
    let n: i64 = dims.iter().product::<i64>().max(1);
    let per_access = (VECTOR_BYTES / elem_bytes.max(1)).clamp(1, MAX_UNROLL);
    let units = i64::from(device.compute.units).max(1);
    let unroll = if n % per_access == 0 && n / per_access >= units * LOOP_THREADS {
        per_access
    } else {
        1
    };
    let per_thread = n / unroll;
    let threads = LOOP_THREADS.min((per_thread + WARP - 1) / WARP * WARP);
    let blocks = (per_thread + threads - 1) / threads;
    let linear = (Expr::var(Var::dim(coords::BL_X)) * Expr::constant(threads)
        + Expr::var(Var::dim(coords::TH_X)))
        * Expr::constant(unroll)
        + Expr::var(Var::range(coords::UNROLL));
    let results = delinearize(linear, dims, minor_to_major);
    let constraints = if blocks * threads * unroll > n {
        vec![(linear, Interval::new(0, n - 1))]
    } else {
        vec![]
    };
    let thread_map = thread_map((blocks, threads), (1, unroll), results, constraints)?;
    Ok(Launch {
        emitter: GpuEmitter::Loop,
        blocks,
        threads,
        unroll,
        thread_map,
    })
}

/// A thread per element of logical `dims` laid out by `minor_to_major` (empty:
/// row-major), no unroll: blocks of [`LOOP_THREADS`] (fewer, rounded up to a warp, for
/// tiny spaces), element `bl_x * threads + th_x` in physical order. For kernels whose
/// element is too much work, or whose accesses too scattered, for the loop emitter's
/// vector unroll (select-and-scatter, a merge pass of a sort).
pub fn element_launch(dims: &[i64], minor_to_major: &[i64]) -> Result<Launch, affine::MapError> {
    let n: i64 = dims.iter().product::<i64>().max(1);
    let threads = LOOP_THREADS.min((n + WARP - 1) / WARP * WARP);
    let blocks = (n + threads - 1) / threads;
    let linear = Expr::var(Var::dim(coords::BL_X)) * Expr::constant(threads)
        + Expr::var(Var::dim(coords::TH_X));
    let results = delinearize(linear, dims, minor_to_major);
    let constraints = if blocks * threads > n {
        vec![(linear, Interval::new(0, n - 1))]
    } else {
        vec![]
    };
    let thread_map = thread_map((blocks, threads), (1, 1), results, constraints)?;
    Ok(Launch {
        emitter: GpuEmitter::Loop,
        blocks,
        threads,
        unroll: 1,
        thread_map,
    })
}

/// The thread map of a launch of `blocks` blocks of `threads` threads, with `chunks`
/// chunk steps and `unroll` unroll steps per thread: `results` over the launch's
/// coordinates, under `constraints`, simplified.
pub(crate) fn thread_map(
    (blocks, threads): (i64, i64),
    (chunks, unroll): (i64, i64),
    results: Vec<Expr>,
    constraints: Vec<(Expr, Interval)>,
) -> Result<IndexingMap, affine::MapError> {
    let mut domain = vec![Interval::new(0, 0); 6];
    domain[coords::TH_X as usize] = Interval::new(0, threads - 1);
    domain[coords::BL_X as usize] = Interval::new(0, blocks - 1);
    let ranges = vec![Interval::new(0, chunks - 1), Interval::new(0, unroll - 1)];
    let mut map = IndexingMap::new(domain, ranges, vec![], results, constraints)?;
    map.simplify();
    Ok(map)
}

/// The dimensions of a rank-`rank` array in physical order, minor-most first, from its
/// `minor_to_major` layout (row-major when empty).
pub(crate) fn physical_order(rank: usize, minor_to_major: &[i64]) -> Vec<usize> {
    if minor_to_major.len() == rank {
        minor_to_major.iter().map(|&d| d as usize).collect()
    } else {
        (0..rank).rev().collect()
    }
}

/// A rank-`rank` index of an array of logical `dims` whose dimensions fall into `groups`:
/// each group's dimensions (listed minor-most first) hold its linear expression,
/// delinearized over them; dimensions in no group are 0.
pub(crate) fn place_groups(dims: &[i64], groups: &[(&[usize], Expr)]) -> Vec<Expr> {
    let mut results = vec![Expr::constant(0); dims.len()];
    for &(sub, linear) in groups {
        let sub_dims: Vec<i64> = sub.iter().map(|&d| dims[d]).collect();
        // Within the group, physical position p holds its p-th dimension.
        let sub_m2m: Vec<i64> = (0..sub.len() as i64).collect();
        for (p, e) in delinearize(linear, &sub_dims, &sub_m2m)
            .into_iter()
            .enumerate()
        {
            results[sub[p]] = e;
        }
    }
    results
}

/// Every point of `map`'s domain that satisfies its constraints: its coordinates (the six
/// dimensions, then the range variables) and its index, by enumeration (the launch tests'
/// oracle).
#[cfg(test)]
pub(crate) fn for_each_thread_point(map: &IndexingMap, mut f: impl FnMut(&[i64], Vec<i64>)) {
    let bounds: Vec<Interval> = map.dims().iter().chain(map.ranges()).copied().collect();
    affine::enumerate::for_each_in_box(&bounds, |flat| {
        let p = affine::Point {
            dims: &flat[..6],
            ranges: &flat[6..],
            runtimes: &[],
        };
        if map.constraints_satisfied(&p).unwrap() {
            f(flat, map.evaluate(&p).unwrap());
        }
        true
    });
}

/// The logical index of element `linear` of an array of logical `dims` stored in
/// `minor_to_major` order (row-major when empty): the physical position of each dimension
/// is `(linear floordiv stride) mod size`, the most major without the `mod`.
pub(crate) fn delinearize(linear: Expr, dims: &[i64], minor_to_major: &[i64]) -> Vec<Expr> {
    let rank = dims.len();
    let order = physical_order(rank, minor_to_major);
    let mut results = vec![Expr::constant(0); rank];
    let mut stride = 1i64;
    for (pos, &d) in order.iter().enumerate() {
        let q = linear.floor_div(Expr::constant(stride));
        results[d] = if pos + 1 == rank {
            q
        } else {
            q.modulo(Expr::constant(dims[d]))
        };
        stride *= dims[d];
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Device {
        device::load("h100").unwrap()
    }

    #[test]
    fn large_f32_outputs_unroll_by_four_in_physical_order() {
        let l = loop_launch(&[1024, 4096], &[1, 0], 4, &h100()).unwrap();
        assert_eq!((l.blocks, l.threads, l.unroll), (8192, 128, 4));
        assert_eq!(
            l.thread_map_text(),
            "(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> \
             (bl_x floordiv 8, th_x * 4 + unroll_id + (bl_x mod 8) * 512), domain: \
             th_x in [0, 127], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 8191], \
             bl_y in [0, 0], bl_z in [0, 0], chunk_id in [0, 0], unroll_id in [0, 3]"
        );
    }

    #[test]
    fn tiny_outputs_take_one_warp_and_a_guard() {
        let l = loop_launch(&[10], &[], 4, &h100()).unwrap();
        assert_eq!((l.blocks, l.threads, l.unroll), (1, 32, 1));
        assert!(
            l.thread_map_text().contains("th_x in [0, 9]"),
            "{}",
            l.thread_map_text()
        );
    }

    #[test]
    fn column_major_outputs_walk_the_first_dimension_fastest() {
        let l = loop_launch(&[64, 3], &[0, 1], 4, &h100()).unwrap();
        let text = l.thread_map_text();
        assert!(
            text.contains("-> (th_x mod 64, bl_x * 2 + th_x floordiv 64)"),
            "{text}"
        );
    }

    /// Every output element is computed by exactly one (thread, unroll step), and the
    /// warp's threads write consecutive physical addresses (by enumeration).
    #[test]
    fn thread_maps_cover_every_element_once() {
        let cases: [(&[i64], &[i64], i64); 5] = [
            (&[256, 4096], &[1, 0], 4),
            (&[7, 5, 3], &[0, 2, 1], 4),
            (&[300, 130], &[], 2),
            (&[1], &[], 8),
            (&[3001, 129], &[0, 1], 1),
        ];
        for (dims, m2m, bytes) in cases {
            let l = loop_launch(dims, m2m, bytes, &h100()).unwrap();
            let m = &l.thread_map;
            let n: i64 = dims.iter().product();
            let mut seen = vec![0u32; n as usize];
            for_each_thread_point(m, |_, idx| {
                let row_major = idx.iter().zip(dims).fold(0, |acc, (i, d)| acc * d + i);
                seen[row_major as usize] += 1;
            });
            assert!(seen.iter().all(|&c| c == 1), "{dims:?} {m2m:?}");
        }
    }

    #[test]
    fn renaming_leaves_other_identifiers_alone() {
        assert_eq!(
            rename_variables("(d0, d3)[s1] -> (d0 + s1), domain: d10 in [0, 1], rt0"),
            "(th_x, bl_x)[unroll_id] -> (th_x + unroll_id), domain: d10 in [0, 1], rt0"
        );
    }
}
