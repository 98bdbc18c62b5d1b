//! The parameters the emitters generate code for, as one value: how wide a reduction's
//! partial accumulators are, how large a cache-blocked transpose's tiles are, below what
//! size a kernel counts as small, and the device description the tile-size search costs
//! root tilings against. A backend builds one ([`EmitTarget::cpu`] for the C backend) and
//! hands it to every emitter, so no emitter reads a constant of another crate or loads a
//! description of its own.

use device::Device;

/// What the emitters generate code for.
#[derive(Clone, Debug, PartialEq)]
pub struct EmitTarget {
    /// Partial accumulators of a reduction's innermost loop (twice as many for a float
    /// max/min): independent chains of adds that hide the adder's latency.
    pub lanes: i64,
    /// Elements per side of a cache-blocked transpose's tile.
    pub transpose_tile: i64,
    /// Kernels whose largest buffer has fewer elements count as small: a multi-output
    /// kernel of several output shapes then runs its loop nests in turn in one block
    /// instead of dealing blocks out to them. It is the threshold at which the backend's
    /// printer switches to its vector math (a small kernel is not worth the threads).
    pub small_kernel_elements: i64,
    /// The description whose cost model chooses a fusion's root tiling (the tile-size
    /// search of `fusion::tile_cost`). Generated code must not depend on the machine that
    /// compiles it, so this is a shipped description, not a probed one.
    pub device: Device,
    /// Threads per block of the kernels handed to the backend: 1 on the CPU; more for a
    /// GPU, whose kernels then run each emitted block as one thread of a larger block
    /// ([`crate::kir::blocks_as_threads`]) until the emitters give them thread maps.
    pub threads_per_block: i64,
    /// Whether the GPU emitters build the kernels they cover from their thread maps
    /// (`fusion::gpu_launch`; the loop emitter so far); the other kernels run each emitted
    /// block as a thread ([`Self::threads_per_block`]).
    pub gpu_emitters: bool,
    /// How the scan emitter tiles the lanes it carries along the scanned dimension.
    pub scan: ScanLanes,
    /// The column emitter's tiles.
    pub column: ColumnTiles,
}

/// The scan emitter's lane tiles: a contiguous lane dimension runs as a loop over a local
/// array of accumulators, a strided one as a few independent chains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanLanes {
    /// Most lanes of a contiguous tile.
    pub max_lanes: i64,
    /// Fewest lanes of a contiguous tile when the extent has more.
    pub min_lanes: i64,
    /// Lines of a strided tile (or of a contiguous one of fewer than twice as many
    /// lanes): independent chains of the reducer, one variable each.
    pub strided_lanes: i64,
    /// Blocks a scan kernel prefers (to split across threads), within `min_lanes`.
    pub min_blocks: i64,
}

impl ScanLanes {
    /// The C backend's scan lanes:
    /// - `max_lanes` 1024: the accumulators stay in L1 (4 KiB of `f32`);
    /// - `min_lanes` 256: a tile reads a short run of each of many rows far apart, and
    ///   hardware prefetchers follow runs within a page (a 4096² `f32` column cumsum, one
    ///   thread: 1024 lanes 17-22 ms, 512 25-34, 256 27-39, 64 25-32);
    /// - `strided_lanes` 4: four chains hide the latency of an add; eight lines of a
    ///   power-of-two length share L1 sets (a 4096² row cumsum, one thread: 1 line 20 ms,
    ///   4 lines 16 ms, 8 lines 43-63 ms, 16 lines 133 ms);
    /// - `min_blocks` 4.
    pub fn cpu() -> ScanLanes {
        ScanLanes {
            max_lanes: 1024,
            min_lanes: 256,
            strided_lanes: 4,
            min_blocks: 4,
        }
    }
}

/// The column emitter's tiles: a tile of consecutive outputs of the minor-most dimension
/// keeps its accumulators in a local array while the rows stream past.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnTiles {
    /// Most outputs of one tile.
    pub max_tile: i64,
    /// Rows of a tile's reduction combined per load and store of its accumulators.
    pub rows: i64,
    /// Tiles a column kernel prefers (blocks to split across threads).
    pub min_tiles: i64,
    /// Fewest outputs of a tile worth the local arrays.
    pub min_tile: i64,
}

impl ColumnTiles {
    /// The C backend's column tiles:
    /// - `max_tile` 2048: the accumulators stay in L1 (8 KiB of `f32`);
    /// - `rows` 4: each accumulator loaded and stored once per four rows;
    /// - `min_tiles` 4, `min_tile` 64.
    pub fn cpu() -> ColumnTiles {
        ColumnTiles {
            max_tile: 2048,
            rows: 4,
            min_tiles: 4,
            min_tile: 64,
        }
    }
}

impl EmitTarget {
    /// The C backend's target on the shipped `cpu` description:
    /// - `lanes` 32: two AVX-512 vectors of `f32`, so two independent chains of adds hide
    ///   their latency (measured: a 4096² row sum 1.25 -> 1.04 ms against 16);
    /// - `transpose_tile` 32: 32 x 32 `f32` is 4 KiB read and 4 KiB written, both in L1;
    /// - `small_kernel_elements` 16384: the C printer's scalar-math threshold
    ///   (`backend_cpu::c::SMALL_KERNEL_ELEMENTS`, which it must equal: a test there checks);
    /// - `device`: the shipped `cpu` description;
    /// - `scan`: [`ScanLanes::cpu`];
    /// - `column`: [`ColumnTiles::cpu`].
    pub fn cpu() -> EmitTarget {
        EmitTarget {
            lanes: 32,
            transpose_tile: 32,
            small_kernel_elements: 16384,
            device: device::load("cpu").expect("the shipped `cpu` description parses"),
            threads_per_block: 1,
            gpu_emitters: false,
            scan: ScanLanes::cpu(),
            column: ColumnTiles::cpu(),
        }
    }

    /// The CPU's emitters with their blocks run as the threads of blocks of 128 (the CUDA
    /// host emulation's and, until GPU emitters exist, the GPU's kernels).
    pub fn cpu_blocks_as_threads() -> EmitTarget {
        EmitTarget {
            threads_per_block: 128,
            ..EmitTarget::cpu()
        }
    }
}

impl EmitTarget {
    /// A GPU of description `device` (`h100`, `h200`): the GPU emitters where they apply,
    /// blocks of 128 threads elsewhere; the CPU's lanes and transpose tiles for the
    /// emitters not rewritten for the GPU yet.
    pub fn gpu(device: Device) -> EmitTarget {
        EmitTarget {
            device,
            gpu_emitters: true,
            ..EmitTarget::cpu_blocks_as_threads()
        }
    }
}

impl Default for EmitTarget {
    /// [`EmitTarget::cpu`].
    fn default() -> EmitTarget {
        EmitTarget::cpu()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_target_is_the_shipped_cpu() {
        let t = EmitTarget::cpu();
        assert_eq!(t.device.name, "cpu");
        assert!(t.lanes > 0 && t.transpose_tile > 0);
    }
}
