//! The CPU probe: refines the shipped `cpu` description on the machine it runs on.
//! Cores come from the standard library, cache sizes from Linux's
//! `/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`, and two short
//! measurements give the DRAM copy bandwidth (one thread copying a buffer much larger
//! than the last cache level, times the cores, capped by nothing: a lower bound) and the
//! f32 multiply-add rate of one core (sixteen independent accumulators, which the
//! compiler keeps in vector registers). Whatever cannot be read keeps the shipped value.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use crate::{Device, DeviceError};

/// What the probe measures and where it reads cache sizes.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// The cache directory of one CPU (`/sys/devices/system/cpu/cpu0/cache`).
    pub cache_dir: PathBuf,
    /// Bytes of the buffer copied to measure bandwidth (0 skips the measurement).
    pub copy_bytes: usize,
    /// Multiply-adds per accumulator for the FMA measurement (0 skips it).
    pub fma_iterations: u64,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            cache_dir: PathBuf::from("/sys/devices/system/cpu/cpu0/cache"),
            copy_bytes: 256 << 20,
            fma_iterations: 20_000_000,
        }
    }
}

/// The shipped `cpu` description refined by probing this machine (about half a second).
pub fn probe_cpu() -> Result<Device, DeviceError> {
    probe_cpu_with(&ProbeOptions::default())
}

/// [`probe_cpu`] with explicit options.
pub fn probe_cpu_with(options: &ProbeOptions) -> Result<Device, DeviceError> {
    let mut d = crate::load("cpu")?;
    if let Ok(n) = std::thread::available_parallelism() {
        d.compute.units = u32::try_from(n.get()).unwrap_or(u32::MAX);
    }
    for (level, bytes) in read_caches(options) {
        match level {
            1 => d.cache.l1_bytes = bytes,
            2 => d.cache.l2_bytes = bytes,
            3 => d.cache.l3_bytes = bytes,
            _ => {}
        }
    }
    if options.copy_bytes > 0 {
        let per_thread = copy_bandwidth(options.copy_bytes);
        if per_thread > 0.0 {
            let total = per_thread * f64::from(d.compute.units);
            d.memory.dram_bytes_per_s = total.min(d.memory.dram_peak_bytes_per_s.max(total));
            d.memory.dram_peak_bytes_per_s = d.memory.dram_peak_bytes_per_s.max(total);
        }
    }
    if options.fma_iterations > 0 {
        let rate = fma_rate(options.fma_iterations);
        if rate > 0.0 {
            d.compute.f32_flops_per_unit = rate;
            d.compute.bf16_flops_per_unit = rate;
        }
    }
    Ok(d)
}

/// `(level, bytes)` of every data or unified cache listed under the cache directory.
fn read_caches(options: &ProbeOptions) -> Vec<(u32, u64)> {
    let Ok(entries) = std::fs::read_dir(&options.cache_dir) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, u64)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
            let kind = read("type")?;
            if kind.trim() == "Instruction" {
                return None;
            }
            let level = read("level")?.trim().parse().ok()?;
            Some((level, parse_size(read("size")?.trim())?))
        })
        .collect();
    out.sort_unstable();
    out
}

/// `48K`, `2048K`, `32M`, `1G` or a plain byte count.
fn parse_size(s: &str) -> Option<u64> {
    let (num, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = num.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Bytes read plus written per second of one thread copying `bytes` (best of 3).
fn copy_bandwidth(bytes: usize) -> f64 {
    let n = bytes / 8;
    let src: Vec<u64> = (0..n as u64).collect();
    let mut dst = vec![0u64; n];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        best = best.min(t.elapsed().as_secs_f64());
    }
    if best > 0.0 {
        (2 * n * 8) as f64 / best
    } else {
        0.0
    }
}

/// f32 flops per second of one thread: 16 independent multiply-add chains.
fn fma_rate(iterations: u64) -> f64 {
    let mut acc = black_box([1.0f32; 16]);
    let (a, b) = (black_box(0.999_999f32), black_box(1.0e-7f32));
    let t = Instant::now();
    for _ in 0..iterations {
        for x in acc.iter_mut() {
            *x = *x * a + b;
        }
    }
    black_box(acc);
    let s = t.elapsed().as_secs_f64();
    if s > 0.0 {
        (iterations * 16 * 2) as f64 / s
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("3X"), None);
        assert_eq!(parse_size("K"), None);
    }

    #[test]
    fn reads_a_cache_directory() {
        let dir = std::env::temp_dir().join(format!("hloc-probe-{}", std::process::id()));
        for (i, (level, kind, size)) in [
            (1, "Data", "32K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "2048K"),
        ]
        .iter()
        .enumerate()
        {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        let options = ProbeOptions {
            cache_dir: dir.clone(),
            copy_bytes: 1 << 20,
            fma_iterations: 1000,
        };
        let d = probe_cpu_with(&options).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(d.cache.l1_bytes, 32 * 1024);
        assert_eq!(d.cache.l2_bytes, 2 << 20);
        assert_eq!(d.cache.l3_bytes, crate::load("cpu").unwrap().cache.l3_bytes);
        assert!(d.compute.units >= 1);
        assert!(d.memory.dram_bytes_per_s > 0.0);
        assert!(d.memory.dram_bytes_per_s <= d.memory.dram_peak_bytes_per_s);
        assert!(d.compute.f32_flops_per_unit > 0.0);
    }
}
