//! # device — the machines hloc compiles for, as data
//!
//! A [`Device`] is a small description of a target: compute units and their f32/bf16 rates,
//! DRAM bandwidth (peak and measured), the cache levels with their sizes and bandwidths,
//! the cost of launching one kernel and the limits of a fused kernel. The cost model of
//! fusion and the tile-size search read the same numbers, so a target differs from another
//! only through its description.
//!
//! Two descriptions ship with hloc, embedded at build time from `descriptions/*.toml`:
//! `cpu` (measured defaults for the machine class hloc is developed on; [`probe_cpu`]
//! measures the machine it runs on) and `h100` (one NVIDIA H100 80GB HBM3).
//!
//! ```
//! let h100 = device::load("h100").unwrap();
//! assert_eq!(h100.compute.units, 132);
//! assert_eq!(h100.cache.l2_bytes, 50 * 1024 * 1024);
//! assert!(h100.memory.dram_bytes_per_s < h100.memory.dram_peak_bytes_per_s);
//! // A bad description names its file, line and field.
//! let text = device::SHIPPED[0].1.replace("units = 2", "units = \"two\"");
//! let err = device::parse("my.toml", &text).unwrap_err().to_string();
//! assert!(err.starts_with("my.toml:"), "{err}");
//! assert!(err.contains("field `compute.units`: expected a number"), "{err}");
//! ```
//!
//! The description format is a TOML subset (sections, `key = number|"string"|bool`, `#`
//! comments); every field is required and unknown fields are errors, so a typo cannot
//! silently fall back to a default.

mod describe;
mod error;
mod probe;
pub mod toml;

pub use error::DeviceError;
pub use probe::{probe_cpu, probe_cpu_with, ProbeOptions};

/// The descriptions shipped with hloc: `(name, text)`.
pub const SHIPPED: &[(&str, &str)] = &[
    ("cpu", include_str!("../descriptions/cpu.toml")),
    ("h100", include_str!("../descriptions/h100.toml")),
];

/// What kind of machine a description is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A multicore CPU: units are cores.
    Cpu,
    /// A GPU: units are streaming multiprocessors.
    Gpu,
}

/// The `kind=` a fusion rooted at a reduction gets on this target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusionKindName {
    /// `kLoop` (XLA:CPU runs reductions in loop fusions).
    Loop,
    /// `kInput` (XLA:GPU's reduction emitter).
    Input,
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

/// Kernel launch cost and the limits of one fused kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLimits {
    /// Seconds to launch (or, on the CPU, to call) one kernel.
    pub launch_s: f64,
    /// Most operands one fused kernel may take.
    pub max_fusion_operands: u32,
    /// Most instructions one fused kernel may hold.
    pub max_fusion_instructions: u32,
    /// `kind=` of a fusion holding a reduction.
    pub reduction_fusion_kind: FusionKindName,
    /// Whether the code generator emits tuple-rooted (multi-output) fusions.
    pub multi_output_fusion: bool,
    /// Whether a fusion may hold transposes of one permutation only (a tiled transpose
    /// emitter) rather than any (a loop emitter indexing each).
    pub one_transpose_kind_per_fusion: bool,
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

/// The shipped description called `name` (`cpu` or `h100`).
pub fn load(name: &str) -> Result<Device, DeviceError> {
    let (file, text) =
        SHIPPED
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| DeviceError::Unknown {
                name: name.to_string(),
                known: SHIPPED
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
    parse(&format!("descriptions/{file}.toml"), text)
}

/// A description from a file on disk.
pub fn load_file(path: &std::path::Path) -> Result<Device, DeviceError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| DeviceError::Io {
        file: file.clone(),
        message: e.to_string(),
    })?;
    parse(&file, &text)
}

/// Parses description `text`, naming it `file` in errors.
pub fn parse(file: &str, text: &str) -> Result<Device, DeviceError> {
    let table = toml::parse(file, text)?;
    describe::from_table(file, &table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_text() -> &'static str {
        SHIPPED[0].1
    }

    #[test]
    fn shipped_descriptions_load() {
        let cpu = load("cpu").unwrap();
        assert_eq!(cpu.kind, DeviceKind::Cpu);
        assert_eq!(cpu.kernel.reduction_fusion_kind, FusionKindName::Loop);
        let h100 = load("h100").unwrap();
        assert_eq!(h100.kind, DeviceKind::Gpu);
        assert_eq!(h100.memory.dram_peak_bytes_per_s, 3.35e12);
        assert_eq!(h100.memory.dram_bytes_per_s, 2.9e12);
        assert_eq!(h100.cache.shared_memory_per_unit, 228 * 1024);
        assert!((h100.f32_flops_per_s() - 67.0e12).abs() < 1e10);
    }

    #[test]
    fn unknown_device() {
        assert_eq!(
            load("tpu").unwrap_err().to_string(),
            "unknown device `tpu` (known: cpu, h100)"
        );
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.starts_with(needle)).unwrap() + 1
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let t = cpu_text().replace("dram_bytes_per_s = 48e9", "dram_bytes_per_s = -1");
        let line = line_of(&t, "dram_bytes_per_s");
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            format!("x.toml:{line}: field `memory.dram_bytes_per_s`: must be positive, found -1")
        );
        let t = cpu_text().replace("multi_output_fusion = false", "multi_output_fusion = 1");
        let line = line_of(&t, "multi_output_fusion");
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            format!("x.toml:{line}: field `kernel.multi_output_fusion`: expected true or false, found Number(1.0)")
        );
        let t = cpu_text().replace("launch_s = 1.5e-6", "");
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            "x.toml: missing field `kernel.launch_s`"
        );
        let t = format!("{}\nspeed = 3\n", cpu_text());
        let line = t.lines().count();
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            format!("x.toml:{line}: unknown field `kernel.speed`")
        );
        let t = cpu_text().replace("units = 2", "units = 2.5");
        assert!(parse("x.toml", &t)
            .unwrap_err()
            .to_string()
            .contains("field `compute.units`: must be a whole number >= 1, found 2.5"));
        let t = cpu_text().replace("dram_bytes_per_s = 48e9", "dram_bytes_per_s = 90e9");
        assert!(parse("x.toml", &t)
            .unwrap_err()
            .to_string()
            .contains("the measured bandwidth exceeds the peak"));
    }

    #[test]
    fn reread_bandwidth_follows_the_cache_level() {
        let cpu = load("cpu").unwrap();
        assert_eq!(cpu.reread_bytes_per_s(1024), cpu.cache.l1_bytes_per_s);
        assert_eq!(cpu.reread_bytes_per_s(512 * 1024), cpu.cache.l2_bytes_per_s);
        assert_eq!(cpu.reread_bytes_per_s(8 << 20), cpu.cache.l3_bytes_per_s);
        assert_eq!(cpu.reread_bytes_per_s(1 << 30), cpu.memory.dram_bytes_per_s);
        let h100 = load("h100").unwrap();
        assert_eq!(h100.reread_bytes_per_s(40 << 20), h100.cache.l2_bytes_per_s);
        assert_eq!(
            h100.reread_bytes_per_s(60 << 20),
            h100.memory.dram_bytes_per_s
        );
    }
}
