//! # device — the machines hloc compiles for, as data
//!
//! A [`Device`] is a small description of a target: compute units and their f32/bf16 rates,
//! DRAM bandwidth (peak and measured), the cache levels with their sizes and bandwidths,
//! and the cost of launching one kernel: facts of the hardware. The cost model of fusion
//! and the tile-size search read the same numbers. What a code generator emits (which
//! fusions, how large) is not the hardware's: it comes with the code generator
//! (`fusion::EmitterRules`).
//!
//! The last such switch, `kernel.hoists_invariant_values`, moved there too
//! (`fusion::EmitterRules::hoists_invariant_values`); a description that still writes it
//! is refused with a message that says where it went.
//!
//! Three descriptions ship with hloc, embedded at build time from `descriptions/*.toml`:
//! `cpu` (measured defaults for the machine class hloc is developed on; [`probe_cpu`]
//! measures the machine it runs on), `h100` (one NVIDIA H100 80GB HBM3) and `h200` (one
//! NVIDIA H200, 141 GB HBM3e).
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
//! A description is TOML (read by the `toml` crate): one `[section]` per struct below,
//! `key = value` per field. Every field is required, checked for kind and range, and
//! unknown fields are errors, so a typo cannot silently fall back to a default. The three
//! optional sections, `[library]` (the measured rates of the runtime's library calls:
//! GEMM per operand type, LAPACK, FFT, sort), `[loops]` (contractions the code
//! generator runs as loops) and `[elementwise]` (what a transcendental costs per element),
//! are each whole when written.

mod describe;
mod error;
mod probe;
mod types;

pub use error::DeviceError;
pub use probe::{probe_cpu, probe_cpu_with, ProbeOptions};
pub use types::{
    Cache, Compute, Device, DeviceKind, Elementwise, KernelLimits, Library, Loops, Memory,
};

/// The descriptions shipped with hloc: `(name, text)`.
pub const SHIPPED: &[(&str, &str)] = &[
    ("cpu", include_str!("../descriptions/cpu.toml")),
    ("h100", include_str!("../descriptions/h100.toml")),
    ("h200", include_str!("../descriptions/h200.toml")),
];

/// The shipped description called `name` (`cpu`, `h100` or `h200`).
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
    describe::parse(file, text)
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
        let h200 = load("h200").unwrap();
        assert_eq!(h200.kind, DeviceKind::Gpu);
        assert_eq!(h200.compute.units, 132);
        assert_eq!(h200.memory.dram_peak_bytes_per_s, 4.8e12);
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
            "unknown device `tpu` (known: cpu, h100, h200)"
        );
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.starts_with(needle)).unwrap() + 1
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let t = cpu_text().replace("dram_bytes_per_s = 8e9", "dram_bytes_per_s = -1");
        let line = line_of(&t, "dram_bytes_per_s");
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            format!("x.toml:{line}: field `memory.dram_bytes_per_s`: must be positive, found -1")
        );
        // A code generator's switch a description once held names where it went.
        let t = cpu_text().replace("[kernel]", "[kernel]\nhoists_invariant_values = true");
        let line = line_of(&t, "hoists_invariant_values");
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            format!("x.toml:{line}: field `kernel.hoists_invariant_values`: a switch of the code generator, not of the machine: it moved to `fusion::EmitterRules::hoists_invariant_values`")
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
            format!("x.toml:{line}: unknown field `elementwise.speed`")
        );
        // The `[library]` section is optional, but whole when written.
        let lib = cpu_text().find("[library]").unwrap();
        let without = parse("x.toml", &cpu_text()[..lib]).unwrap();
        assert_eq!(without.library, None);
        assert!(parse("x.toml", cpu_text()).unwrap().library.is_some());
        let loops = cpu_text().find("[loops]").unwrap();
        let without = parse("x.toml", &cpu_text()[..loops]).unwrap();
        assert_eq!(without.loops, None);
        assert!(parse("x.toml", cpu_text()).unwrap().loops.is_some());
        let t = cpu_text().replace("far_tap_s = ", "far_tap = ");
        assert_eq!(err(&t), "x.toml: missing field `loops.far_tap_s`");
        let ew = cpu_text().find("[elementwise]").unwrap();
        let without = parse("x.toml", &cpu_text()[..ew]).unwrap();
        assert_eq!(without.elementwise, None);
        let with = parse("x.toml", cpu_text()).unwrap().elementwise.unwrap();
        assert!(with.transcendental_f64_s > with.transcendental_f32_s);
        let t = cpu_text().replace("transcendental_f64_s = ", "transcendental_f64 = ");
        assert_eq!(
            err(&t),
            "x.toml: missing field `elementwise.transcendental_f64_s`"
        );
        let t = cpu_text().replace("fft_flops_per_unit = 10e9", "");
        assert_eq!(
            parse("x.toml", &t).unwrap_err().to_string(),
            "x.toml: missing field `library.fft_flops_per_unit`"
        );
        let t = cpu_text().replace("units = 2", "units = 2.5");
        assert!(parse("x.toml", &t)
            .unwrap_err()
            .to_string()
            .contains("field `compute.units`: must be a whole number >= 1, found 2.5"));
        let t = cpu_text().replace("dram_bytes_per_s = 8e9", "dram_bytes_per_s = 90e9");
        assert!(parse("x.toml", &t)
            .unwrap_err()
            .to_string()
            .contains("the measured bandwidth exceeds the peak"));
    }

    fn err(text: &str) -> String {
        parse("x.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn syntax_errors_name_the_line() {
        assert_eq!(
            err("[compute]\nunits 2"),
            "x.toml:2: key with no value, expected `=`"
        );
        assert_eq!(err("[compute\n"), "x.toml:1: unclosed table, expected `]`");
        assert_eq!(
            err("[device]\nname = \"open\n"),
            "x.toml:2: invalid basic string, expected `\"`"
        );
        assert_eq!(err("[a]\nx = 1\nx = 2"), "x.toml:3: duplicate key");
        // A section written twice: the line of the second header.
        let line = line_of(cpu_text(), "[kernel]");
        let t = cpu_text().replace("[kernel]", "[device]");
        assert_eq!(err(&t), format!("x.toml:{line}: duplicate key"));
        // A key before any [section] is not a section.
        let t = format!("speed = 3\n{}", cpu_text());
        assert_eq!(
            err(&t),
            "x.toml:1: invalid type: integer `3`, expected a map"
        );
    }

    #[test]
    fn every_error_kind_names_file_line_and_field() {
        // Wrong type: a string where a number goes, a number where a string goes.
        let t = cpu_text().replace("units = 2", "units = \"two\"");
        let line = line_of(&t, "units");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `compute.units`: expected a number, found Str(\"two\")")
        );
        let t = cpu_text().replace("kind = \"cpu\"", "kind = [1]");
        let line = line_of(&t, "kind");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `device.kind`: expected a string, found Array")
        );
        // Out of range: not a known name, too large, not finite, negative.
        let t = cpu_text().replace("kind = \"cpu\"", "kind = \"tpu\"");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `device.kind`: `tpu` is not `cpu` or `gpu`")
        );
        let t = cpu_text().replace("units = 2", "units = 5_000_000_000");
        let line = line_of(&t, "units");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `compute.units`: 5000000000 is too large")
        );
        let t = cpu_text().replace("units = 2", "units = 0");
        let line = line_of(&t, "units");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `compute.units`: must be a whole number >= 1, found 0")
        );
        let t = cpu_text().replace("f32_flops_per_unit = 96e9", "f32_flops_per_unit = inf");
        let line = line_of(&t, "f32_flops_per_unit");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `compute.f32_flops_per_unit`: must be a finite number, found inf")
        );
        let t = cpu_text().replace("launch_s = 1.5e-6", "launch_s = -1.5e-6");
        let line = line_of(&t, "launch_s");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: field `kernel.launch_s`: must not be negative, found -1.5e-6")
        );
        // Missing: a field, a whole section.
        let t = cpu_text().replace("l2_bytes = 2097152", "");
        assert_eq!(err(&t), "x.toml: missing field `cache.l2_bytes`");
        let t = cpu_text().replace("[memory]", "[mem]");
        assert_eq!(
            err(&t),
            "x.toml: missing field `memory.dram_peak_bytes_per_s`"
        );
        // Unknown: a misspelt field is missing under its right name and unknown under its
        // wrong one; an extra field, an extra section, empty or not, and a sub-table.
        let t = format!("{}\n[extra]\n", cpu_text());
        let line = t.lines().count();
        assert_eq!(err(&t), format!("x.toml:{line}: unknown field `extra`"));
        let t = format!("{}\n[cache.l4]\nbytes = 1\n", cpu_text());
        let line = line_of(&t, "[cache.l4]");
        assert_eq!(err(&t), format!("x.toml:{line}: unknown field `cache.l4`"));
        let t = cpu_text().replace("[cache]", "[cache]\nl0_bytes = 1");
        let line = line_of(&t, "l0_bytes");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: unknown field `cache.l0_bytes`")
        );
        // The first unknown field in the text is the one reported.
        let t = cpu_text()
            .replace("[kernel]", "[kernel]\nzz = 1")
            .replace("[compute]", "[compute]\nzz = 1");
        let line = line_of(&t, "zz");
        assert_eq!(
            err(&t),
            format!("x.toml:{line}: unknown field `compute.zz`")
        );
    }

    #[test]
    fn load_file_names_the_file() {
        let dir = std::env::temp_dir().join(format!("device-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mine.toml");
        std::fs::write(&path, SHIPPED[1].1.replace("units = 132", "units = 114")).unwrap();
        assert_eq!(load_file(&path).unwrap().compute.units, 114);
        std::fs::write(&path, "[device]\nname = 1\n").unwrap();
        assert_eq!(
            load_file(&path).unwrap_err().to_string(),
            format!(
                "{}:2: field `device.name`: expected a string, found Number(1.0)",
                path.display()
            )
        );
        let missing = dir.join("absent.toml");
        let got = load_file(&missing).unwrap_err().to_string();
        assert!(
            got.starts_with(&format!("{}: ", missing.display())),
            "{got}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
