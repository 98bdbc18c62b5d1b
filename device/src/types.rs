//! The description's data: what kind of machine, its compute, memory and caches, the
//! limits of one kernel, and the bandwidth a working set of a given size sees.

/// What kind of machine a description is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A multicore CPU: units are cores.
    Cpu,
    /// A GPU: units are streaming multiprocessors.
    Gpu,
}

/// Arithmetic throughput.
#[derive(Clone, Debug, PartialEq)]
pub struct Compute {
    /// Cores or SMs.
    pub units: u32,
    /// f32 flops per second of one unit (an FMA counts two).
    pub f32_flops_per_unit: f64,
    /// bf16 flops per second of one unit.
    pub bf16_flops_per_unit: f64,
}

/// Main memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    /// Peak bandwidth in bytes per second.
    pub dram_peak_bytes_per_s: f64,
    /// Measured (copy kernel) bandwidth in bytes per second: what the cost model uses.
    pub dram_bytes_per_s: f64,
}

/// Cache levels. A level of size 0 does not exist.
#[derive(Clone, Debug, PartialEq)]
pub struct Cache {
    /// L1 data cache per unit.
    pub l1_bytes: u64,
    /// L1 bandwidth of the whole device, bytes per second.
    pub l1_bytes_per_s: f64,
    /// L2 (per core on a CPU, shared on a GPU).
    pub l2_bytes: u64,
    /// L2 bandwidth of the whole device.
    pub l2_bytes_per_s: f64,
    /// L3 (shared on a CPU; 0 on a GPU).
    pub l3_bytes: u64,
    /// L3 bandwidth.
    pub l3_bytes_per_s: f64,
    /// Shared memory one block may use on one SM (0 on a CPU).
    pub shared_memory_per_unit: u64,
}

/// What one kernel costs the machine to start. What a code generator emits and how (its
/// switches) is the code generator's (`fusion::EmitterRules`), not the machine's.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLimits {
    /// Seconds to launch (or, on the CPU, to call) one kernel.
    pub launch_s: f64,
}

/// A target machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    /// The description's name (`cpu`, `h100`).
    pub name: String,
    /// CPU or GPU.
    pub kind: DeviceKind,
    /// Arithmetic.
    pub compute: Compute,
    /// Main memory.
    pub memory: Memory,
    /// Caches.
    pub cache: Cache,
    /// Kernel launch and fusion limits.
    pub kernel: KernelLimits,
}

impl Device {
    /// f32 flops per second of the whole device.
    pub fn f32_flops_per_s(&self) -> f64 {
        self.compute.f32_flops_per_unit * f64::from(self.compute.units)
    }

    /// bf16 flops per second of the whole device.
    pub fn bf16_flops_per_s(&self) -> f64 {
        self.compute.bf16_flops_per_unit * f64::from(self.compute.units)
    }

    /// The bandwidth at which data of `bytes` is re-read once it was read: the fastest
    /// cache level it fits in, else DRAM.
    pub fn reread_bytes_per_s(&self, bytes: u64) -> f64 {
        let c = &self.cache;
        [
            (c.l1_bytes, c.l1_bytes_per_s),
            (c.l2_bytes, c.l2_bytes_per_s),
            (c.l3_bytes, c.l3_bytes_per_s),
        ]
        .into_iter()
        .find(|&(size, bw)| size > 0 && bw > 0.0 && bytes <= size)
        .map_or(self.memory.dram_bytes_per_s, |(_, bw)| bw)
    }
}
