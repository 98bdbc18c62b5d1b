//! The cost model as the tile-size search's cost function: [`DeviceTileCost`] prices a
//! candidate tiling of a fused kernel for a [`Device`], and [`best_tiling`] asks
//! `tiling::search` for the cheapest (the tiling crate takes the cost as a trait object, so
//! it does not depend on this one).
//!
//! - **CPU** (the kernel is a C function over a range of programs, split by the runtime into
//!   about four chunks per thread): a tile is a contiguous run of the output in its physical
//!   order (whole along the dimensions minor to one, cut along that one, one element thick
//!   along the rest) whose sizes divide their dimensions, so each program writes one
//!   contiguous block and its loops keep constant bounds. The best has the number of
//!   programs closest to [`CPU_TARGET_PROGRAMS`] (on a log scale; fewer on a tie) without
//!   programs of less than [`CPU_MIN_WORK`] elements of work (its largest tile), and
//!   runs that stay inside one quotient of every division in the instructions' indices
//!   unless that costs more than [`CPU_DIVIDED_RUN_PENALTY`] (`runs`).
//! - **GPU**: programs run in waves of one per streaming multiprocessor; each program moves
//!   its tiles' bytes at its share of the DRAM bandwidth; tiles must fit the shared memory
//!   of one multiprocessor. Time = waves × per-program time + launch.

use device::{Device, DeviceKind};
use tiling::search::{search, Budget, Candidate, SearchResult, TileCost};
use tiling::{SymbolicTileAnalysis, TilingError};

mod runs;

/// Programs a large CPU kernel is cut into: with the runtime's four chunks per thread,
/// enough for sixteen threads.
pub const CPU_TARGET_PROGRAMS: i64 = 64;

/// Fewest elements of work per CPU program: below it the per-program loop overhead and
/// short innermost loops cost more than the parallelism gains.
pub const CPU_MIN_WORK: i64 = 4096;

/// Added to a CPU tiling's cost (log2 programs from the wanted number) when its innermost
/// run crosses a division boundary of an instruction's index (`runs`): the innermost loop
/// then divides per element and stays scalar (a `[128, 4096]` log-softmax reshaped to
/// `[16, 32768]` ran 3.8 ms per call at tiles of 8192 against 0.33 ms with the loop cut at
/// 4096, gcc -O2 on one core), so up to eight times the programs is cheaper.
pub const CPU_DIVIDED_RUN_PENALTY: f64 = 3.0;

/// The device's cost of a candidate tiling of one fused kernel.
#[derive(Clone, Debug)]
pub struct DeviceTileCost<'d> {
    device: &'d Device,
    /// The root's dimensions in physical order, most major first.
    order: Vec<usize>,
    /// The root's dimensions.
    dims: Vec<i64>,
}

impl<'d> DeviceTileCost<'d> {
    /// The cost on `device` of tiling a root of `dims` whose physical order (most major
    /// first) is `order`.
    pub fn new(device: &'d Device, dims: &[i64], order: &[usize]) -> DeviceTileCost<'d> {
        DeviceTileCost {
            device,
            order: order.to_vec(),
            dims: dims.to_vec(),
        }
    }

    /// The limits a tiling must fit on the device.
    pub fn budget(&self) -> Budget {
        match self.device.kind {
            DeviceKind::Cpu => Budget::default(),
            DeviceKind::Gpu => Budget {
                max_footprint_bytes: Some(self.device.cache.shared_memory_per_unit as i64),
                ..Budget::default()
            },
        }
    }

    /// Whether `sizes` is a contiguous run of the root in its physical order, each size
    /// dividing its dimension.
    fn contiguous(&self, sizes: &[i64]) -> bool {
        if sizes.len() != self.dims.len() {
            return false;
        }
        if sizes
            .iter()
            .zip(&self.dims)
            .any(|(&s, &d)| s < 1 || d % s != 0)
        {
            return false;
        }
        // From the minor end: whole dimensions, then at most one cut one, then ones.
        let mut state = 0; // 0: whole so far, 1: cut seen, ones from here on
        for &d in self.order.iter().rev() {
            let (s, n) = (sizes[d], self.dims[d]);
            match state {
                0 if s == n => {}
                0 => state = 1,
                _ if s == 1 => {}
                _ => return false,
            }
        }
        true
    }

    fn cpu(&self, c: &Candidate<'_>) -> Option<f64> {
        let work = c.tile_elements.iter().copied().max().unwrap_or(1).max(1);
        let p = c.num_programs.max(1);
        let want = cpu_wanted_programs(work.saturating_mul(p));
        if p > 1 && work < CPU_MIN_WORK && p > want {
            return None;
        }
        let distance = ((p as f64).log2() - (want as f64).log2()).abs();
        let minor = self.order.last().copied();
        let divided = minor.is_some_and(|m| {
            let t = c.tile_sizes.get(m).copied().unwrap_or(1);
            runs::run_crosses_division(c.analysis, m, t)
        });
        let penalty = if divided {
            CPU_DIVIDED_RUN_PENALTY
        } else {
            0.0
        };
        // Ties go to fewer programs: the distance moves in steps of at least 2^-20 here.
        Some(distance + penalty + p as f64 * 1e-12)
    }

    fn gpu(&self, c: &Candidate<'_>) -> Option<f64> {
        let d = self.device;
        let units = d.compute.units.max(1) as f64;
        let waves = (c.num_programs as f64 / units).ceil();
        let per_unit_bytes_per_s = d.memory.dram_bytes_per_s / units;
        let per_program_s = c.footprint_bytes as f64 / per_unit_bytes_per_s;
        Some(waves * per_program_s + d.kernel.launch_s)
    }
}

impl TileCost for DeviceTileCost<'_> {
    fn cost(&self, c: &Candidate<'_>) -> Option<f64> {
        match self.device.kind {
            DeviceKind::Cpu => self.cpu(c),
            DeviceKind::Gpu => self.gpu(c),
        }
    }

    fn admits(&self, sizes: &[i64]) -> bool {
        match self.device.kind {
            DeviceKind::Cpu => self.contiguous(sizes),
            DeviceKind::Gpu => true,
        }
    }
}

/// The number of programs a CPU kernel of `total_work` elements of work (its largest
/// tensor) is best cut into: one per [`CPU_MIN_WORK`] elements, at most
/// [`CPU_TARGET_PROGRAMS`].
pub fn cpu_wanted_programs(total_work: i64) -> i64 {
    (total_work / CPU_MIN_WORK).clamp(1, CPU_TARGET_PROGRAMS)
}

/// The work of a whole kernel: the elements of the largest tile of `analysis` at tile
/// sizes equal to the root's dimensions (a row reduction's input, not its few outputs).
/// `None` when a tile cannot be evaluated or overflows.
pub fn total_work(analysis: &SymbolicTileAnalysis) -> Option<i64> {
    let (elements, _) = tiling::search::footprint(analysis, analysis.root_dims())?;
    Some(elements.into_iter().max().unwrap_or(1).max(1))
}

/// The cheapest tiling of `analysis`'s root (dimensions in physical `order`, most major
/// first) on `device`, by the device's cost; `Ok(None)` when no candidate is admitted.
pub fn best_tiling(
    analysis: &SymbolicTileAnalysis,
    device: &Device,
    order: &[usize],
) -> Result<Option<SearchResult>, TilingError> {
    let cost = DeviceTileCost::new(device, analysis.root_dims(), order);
    search(analysis, &cost.budget(), &cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fusion(dims: &str) -> hlo::Module {
        hlo::parse_module(&format!(
            "HloModule m\nfused {{\n  p = f32[{dims}] parameter(0)\n  ROOT n = f32[{dims}] negate(p)\n}}\nENTRY e {{\n  a = f32[{dims}] parameter(0)\n  ROOT f = f32[{dims}] fusion(a), kind=kLoop, calls=fused\n}}"
        ))
        .unwrap()
    }

    #[test]
    fn cpu_tiles_are_contiguous_dividing_runs() {
        let cpu = device::load("cpu").unwrap();
        let cost = DeviceTileCost::new(&cpu, &[4, 6, 8], &[0, 1, 2]);
        assert!(cost.admits(&[2, 6, 8]));
        assert!(cost.admits(&[1, 2, 8]));
        assert!(cost.admits(&[1, 1, 4]));
        assert!(!cost.admits(&[1, 4, 8]), "4 does not divide 6");
        assert!(!cost.admits(&[2, 2, 8]), "not contiguous");
        let column_major = DeviceTileCost::new(&cpu, &[4, 8], &[1, 0]);
        assert!(column_major.admits(&[4, 2]));
        assert!(!column_major.admits(&[2, 8]));
    }

    #[test]
    fn cpu_best_tiling_has_about_64_programs_of_whole_rows() {
        let m = fusion("16,512,64");
        let analysis = tiling::analyze(&m.instr("f").unwrap()).unwrap();
        let cpu = device::load("cpu").unwrap();
        let best = best_tiling(&analysis, &cpu, &[0, 1, 2]).unwrap().unwrap();
        assert_eq!(best.tile_sizes, vec![1, 128, 64]);
        assert_eq!(best.tiled.num_programs(), 64);
        // A small kernel is one program.
        let m = fusion("8,16");
        let analysis = tiling::analyze(&m.instr("f").unwrap()).unwrap();
        let best = best_tiling(&analysis, &cpu, &[0, 1]).unwrap().unwrap();
        assert_eq!(best.tiled.num_programs(), 1);
    }

    #[test]
    fn cpu_runs_stop_at_a_division_of_an_operand_index() {
        // A [128, 4096] operand read through a root reshaped to [16, 32768]: 64 programs
        // would run 8192 long, across the operand's rows (`d1 floordiv 4096`); runs of
        // 4096 keep the innermost loop affine.
        let m = hlo::parse_module(
            "HloModule m\nfused {\n  p = f32[128,4096] parameter(0)\n  n = f32[128,4096] negate(p)\n  ROOT r = f32[16,32768] reshape(n)\n}\nENTRY e {\n  a = f32[128,4096] parameter(0)\n  ROOT f = f32[16,32768] fusion(a), kind=kLoop, calls=fused\n}",
        )
        .unwrap();
        let analysis = tiling::analyze(&m.instr("f").unwrap()).unwrap();
        let cpu = device::load("cpu").unwrap();
        let best = best_tiling(&analysis, &cpu, &[0, 1]).unwrap().unwrap();
        assert_eq!(best.tile_sizes, vec![1, 4096]);
        // Without a division in the way, the same root keeps about 64 programs.
        let m = fusion("16,32768");
        let analysis = tiling::analyze(&m.instr("f").unwrap()).unwrap();
        let best = best_tiling(&analysis, &cpu, &[0, 1]).unwrap().unwrap();
        assert_eq!(best.tile_sizes, vec![1, 8192]);
    }

    #[test]
    fn gpu_tiles_fit_shared_memory_and_fill_the_multiprocessors() {
        let m = fusion("1024,1024");
        let analysis = tiling::analyze(&m.instr("f").unwrap()).unwrap();
        let h100 = device::load("h100").unwrap();
        let best = best_tiling(&analysis, &h100, &[0, 1]).unwrap().unwrap();
        let elements: i64 = best.tile_sizes.iter().product();
        // Two f32 tiles (operand and result) per program within 228 KiB.
        assert!(elements * 8 <= 233_472, "{:?}", best.tile_sizes);
        assert!(best.tiled.num_programs() >= 132, "{:?}", best.tile_sizes);
    }
}
