//! From a description's text to a [`Device`]. The `toml` crate reads the text into
//! sections of values, each value keeping its byte span; then every field is checked for
//! kind and range, and the first bad one is reported with its file, line and field.

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use crate::{
    Cache, Compute, Device, DeviceError, DeviceKind, Elementwise, KernelLimits, Library, Loops,
    Memory,
};

/// Fields descriptions once held that belong to the code generator, with where they went:
/// a description that writes one gets that answer instead of "unknown field".
const MOVED: &[(&str, &str)] = &[(
    "kernel.hoists_invariant_values",
    "fusion::EmitterRules::hoists_invariant_values",
)];

/// One `[section]`: `key -> value`, each value with its byte span in the text.
type Section = BTreeMap<String, Spanned<toml::Value>>;

/// A whole description: `section -> keys`, each section with the span TOML gives it.
type Document = BTreeMap<String, Spanned<Section>>;

/// Reads one description (named `file` in errors), checking every field's kind and range
/// and refusing unknown ones.
pub(crate) fn parse(file: &str, text: &str) -> Result<Device, DeviceError> {
    let doc: Document = toml::from_str(text).map_err(|e| DeviceError::Syntax {
        file: file.to_string(),
        // The toml crate gives every error a span; line 1 should one come without.
        line: e.span().map_or(1, |span| line_at(text, span.start)),
        message: e.message().trim_end().to_string(),
    })?;
    let mut r = Reader {
        file,
        text,
        doc: &doc,
        used: BTreeSet::new(),
    };
    let device = Device {
        name: r.string("device.name")?,
        kind: match r.string("device.kind")?.as_str() {
            "cpu" => DeviceKind::Cpu,
            "gpu" => DeviceKind::Gpu,
            other => return Err(r.bad("device.kind", format!("`{other}` is not `cpu` or `gpu`"))),
        },
        compute: Compute {
            units: r.count("compute.units")?,
            f32_flops_per_unit: r.positive("compute.f32_flops_per_unit")?,
            bf16_flops_per_unit: r.positive("compute.bf16_flops_per_unit")?,
        },
        memory: Memory {
            dram_peak_bytes_per_s: r.positive("memory.dram_peak_bytes_per_s")?,
            dram_bytes_per_s: r.positive("memory.dram_bytes_per_s")?,
        },
        cache: Cache {
            l1_bytes: r.bytes("cache.l1_bytes")?,
            l1_bytes_per_s: r.non_negative("cache.l1_bytes_per_s")?,
            l2_bytes: r.bytes("cache.l2_bytes")?,
            l2_bytes_per_s: r.non_negative("cache.l2_bytes_per_s")?,
            l3_bytes: r.bytes("cache.l3_bytes")?,
            l3_bytes_per_s: r.non_negative("cache.l3_bytes_per_s")?,
            shared_memory_per_unit: r.bytes("cache.shared_memory_per_unit")?,
        },
        kernel: KernelLimits {
            launch_s: r.non_negative("kernel.launch_s")?,
        },
        library: None,
        loops: None,
        elementwise: None,
    };
    // An optional section, but whole when written: every field required.
    let device = if doc.contains_key("library") {
        Device {
            library: Some(Library {
                call_s: r.non_negative("library.call_s")?,
                gemm_f32_flops_per_unit: r.positive("library.gemm_f32_flops_per_unit")?,
                gemm_f64_flops_per_unit: r.positive("library.gemm_f64_flops_per_unit")?,
                gemm_bf16_flops_per_unit: r.positive("library.gemm_bf16_flops_per_unit")?,
                gemm_s8_ops_per_unit: r.positive("library.gemm_s8_ops_per_unit")?,
                gemm_s8_portable_ops_per_unit: r
                    .positive("library.gemm_s8_portable_ops_per_unit")?,
                half_on_tiles: r.boolean("library.half_on_tiles")?,
                half_on_registers: r.boolean("library.half_on_registers")?,
                gemm_bf16_registers_flops_per_unit: r
                    .positive("library.gemm_bf16_registers_flops_per_unit")?,
                s8_on_tiles: r.boolean("library.s8_on_tiles")?,
                gemv_flops_per_unit: r.positive("library.gemv_flops_per_unit")?,
                lapack_flops_per_unit: r.positive("library.lapack_flops_per_unit")?,
                lapack_full_order: r.positive("library.lapack_full_order")?,
                lapack_matrix_s: r.non_negative("library.lapack_matrix_s")?,
                lapack_unblocked_flops_per_unit: r
                    .positive("library.lapack_unblocked_flops_per_unit")?,
                lapack_unblocked_cols: r.positive("library.lapack_unblocked_cols")?,
                fft_flops_per_unit: r.positive("library.fft_flops_per_unit")?,
                sort_compares_per_unit: r.positive("library.sort_compares_per_unit")?,
                topk_elements_per_unit: r.positive("library.topk_elements_per_unit")?,
            }),
            ..device
        }
    } else {
        device
    };
    // Optional too, and whole when written.
    let device = if doc.contains_key("loops") {
        Device {
            loops: Some(Loops {
                contraction_f32_flops_per_unit: r
                    .positive("loops.contraction_f32_flops_per_unit")?,
                contraction_f64_flops_per_unit: r
                    .positive("loops.contraction_f64_flops_per_unit")?,
                contraction_half_flops_per_unit: r
                    .positive("loops.contraction_half_flops_per_unit")?,
                contraction_int_flops_per_unit: r
                    .positive("loops.contraction_int_flops_per_unit")?,
                far_tap_s: r.non_negative("loops.far_tap_s")?,
                far_operand_bytes: r.bytes("loops.far_operand_bytes")?,
            }),
            ..device
        }
    } else {
        device
    };
    // Optional too, and whole when written.
    let device = if doc.contains_key("elementwise") {
        Device {
            elementwise: Some(Elementwise {
                transcendental_f32_s: r.positive("elementwise.transcendental_f32_s")?,
                transcendental_f64_s: r.positive("elementwise.transcendental_f64_s")?,
            }),
            ..device
        }
    } else {
        device
    };
    for (field, rule) in MOVED {
        if r.entry(field).is_some() {
            return Err(r.bad(
                field,
                format!("a switch of the code generator, not of the machine: it moved to `{rule}`"),
            ));
        }
    }
    if device.memory.dram_bytes_per_s > device.memory.dram_peak_bytes_per_s {
        return Err(r.bad(
            "memory.dram_bytes_per_s",
            "the measured bandwidth exceeds the peak".into(),
        ));
    }
    r.refuse_unknown()?;
    Ok(device)
}

/// The 1-based line of byte `offset` of `text`.
fn line_at(text: &str, offset: usize) -> usize {
    let before = &text.as_bytes()[..offset.min(text.len())];
    before.iter().filter(|&&b| b == b'\n').count() + 1
}

/// A value as errors show it: `Number(1.0)`, `Str("two")`, `Bool(true)`, `Array`, ...
fn found(value: &toml::Value) -> String {
    match value {
        toml::Value::Integer(i) => format!("Number({i}.0)"),
        toml::Value::Float(f) => format!("Number({f:?})"),
        toml::Value::String(s) => format!("Str({s:?})"),
        toml::Value::Boolean(b) => format!("Bool({b})"),
        toml::Value::Datetime(d) => format!("Datetime({d})"),
        toml::Value::Array(_) => "Array".to_string(),
        toml::Value::Table(_) => "Table".to_string(),
    }
}

/// Reads fields by their `section.key` name, remembering which were read.
struct Reader<'a> {
    file: &'a str,
    text: &'a str,
    doc: &'a Document,
    used: BTreeSet<(&'a str, &'a str)>,
}

impl<'a> Reader<'a> {
    /// The value of `field` and its span, if written.
    fn entry(&self, field: &str) -> Option<(&'a str, &'a str, &'a Spanned<toml::Value>)> {
        let (section, key) = field.split_once('.')?;
        let (section, keys) = self.doc.get_key_value(section)?;
        let (key, value) = keys.get_ref().get_key_value(key)?;
        Some((section, key, value))
    }

    fn get(&mut self, field: &str) -> Result<&'a toml::Value, DeviceError> {
        let (section, key, value) = self.entry(field).ok_or_else(|| DeviceError::Missing {
            file: self.file.to_string(),
            field: field.to_string(),
        })?;
        self.used.insert((section, key));
        Ok(value.get_ref())
    }

    fn bad(&self, field: &str, message: String) -> DeviceError {
        DeviceError::Field {
            file: self.file.to_string(),
            line: self
                .entry(field)
                .map_or(1, |(_, _, v)| line_at(self.text, v.span().start)),
            field: field.to_string(),
            message,
        }
    }

    fn number(&mut self, field: &str) -> Result<f64, DeviceError> {
        let v = match self.get(field)? {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            other => {
                return Err(self.bad(field, format!("expected a number, found {}", found(other))))
            }
        };
        if v.is_finite() {
            Ok(v)
        } else {
            let found = self.shown(field);
            Err(self.bad(field, format!("must be a finite number, found {found}")))
        }
    }

    fn string(&mut self, field: &str) -> Result<String, DeviceError> {
        match self.get(field)? {
            toml::Value::String(s) => Ok(s.clone()),
            other => Err(self.bad(field, format!("expected a string, found {}", found(other)))),
        }
    }

    fn boolean(&mut self, field: &str) -> Result<bool, DeviceError> {
        match self.get(field)? {
            toml::Value::Boolean(b) => Ok(*b),
            other => Err(self.bad(
                field,
                format!("expected true or false, found {}", found(other)),
            )),
        }
    }

    /// The value of `field` as written, for range errors (integers exactly).
    fn shown(&self, field: &str) -> String {
        match self.entry(field).map(|(_, _, v)| v.get_ref()) {
            Some(toml::Value::Integer(i)) => i.to_string(),
            Some(toml::Value::Float(f)) => format!("{f:?}"),
            Some(other) => found(other),
            None => "nothing".to_string(),
        }
    }

    fn positive(&mut self, field: &str) -> Result<f64, DeviceError> {
        let v = self.number(field)?;
        if v > 0.0 {
            Ok(v)
        } else {
            let found = self.shown(field);
            Err(self.bad(field, format!("must be positive, found {found}")))
        }
    }

    fn non_negative(&mut self, field: &str) -> Result<f64, DeviceError> {
        let v = self.number(field)?;
        if v >= 0.0 {
            Ok(v)
        } else {
            let found = self.shown(field);
            Err(self.bad(field, format!("must not be negative, found {found}")))
        }
    }

    /// A whole number in `[min, 9e15]` (integers that large are exact in an f64).
    fn whole(&mut self, field: &str, min: u64) -> Result<u64, DeviceError> {
        let v = self.number(field)?;
        if v.fract() == 0.0 && v >= min as f64 && v <= 9.0e15 {
            Ok(v as u64)
        } else {
            let found = self.shown(field);
            Err(self.bad(
                field,
                format!("must be a whole number >= {min}, found {found}"),
            ))
        }
    }

    fn count(&mut self, field: &str) -> Result<u32, DeviceError> {
        let v = self.whole(field, 1)?;
        u32::try_from(v).map_err(|_| self.bad(field, format!("{v} is too large")))
    }

    fn bytes(&mut self, field: &str) -> Result<u64, DeviceError> {
        self.whole(field, 0)
    }

    /// The first (in the text) field that was not read, or section that holds no field
    /// that was, as an error.
    fn refuse_unknown(&self) -> Result<(), DeviceError> {
        let known_sections: BTreeSet<&str> = self.used.iter().map(|&(s, _)| s).collect();
        let mut unknown = Vec::new();
        for (section, keys) in self.doc {
            if keys.get_ref().is_empty() && !known_sections.contains(section.as_str()) {
                unknown.push((section.clone(), keys.span().start));
            }
            for (key, value) in keys.get_ref() {
                if !self.used.contains(&(section.as_str(), key.as_str())) {
                    unknown.push((format!("{section}.{key}"), value.span().start));
                }
            }
        }
        match unknown.into_iter().min_by_key(|&(_, start)| start) {
            Some((field, start)) => Err(DeviceError::UnknownField {
                file: self.file.to_string(),
                line: line_at(self.text, start),
                field,
            }),
            None => Ok(()),
        }
    }
}
