//! From a parsed description ([`crate::toml::Table`]) to a [`Device`], field by field,
//! with the file, line and field of the first bad value.

use std::collections::BTreeSet;

use crate::toml::{Table, Value};
use crate::{
    Cache, Compute, Device, DeviceError, DeviceKind, FusionKindName, KernelLimits, Memory,
};

/// Reads one description, checking every field's kind and range and refusing unknown ones.
pub fn from_table(file: &str, table: &Table) -> Result<Device, DeviceError> {
    let mut r = Reader {
        file,
        table,
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
            max_fusion_operands: r.count("kernel.max_fusion_operands")?,
            max_fusion_instructions: r.count("kernel.max_fusion_instructions")?,
            reduction_fusion_kind: match r.string("kernel.reduction_fusion_kind")?.as_str() {
                "kLoop" => FusionKindName::Loop,
                "kInput" => FusionKindName::Input,
                other => {
                    return Err(r.bad(
                        "kernel.reduction_fusion_kind",
                        format!("`{other}` is not `kLoop` or `kInput`"),
                    ))
                }
            },
            multi_output_fusion: r.boolean("kernel.multi_output_fusion")?,
            one_transpose_kind_per_fusion: r.boolean("kernel.one_transpose_kind_per_fusion")?,
        },
    };
    if device.memory.dram_bytes_per_s > device.memory.dram_peak_bytes_per_s {
        return Err(r.bad(
            "memory.dram_bytes_per_s",
            "the measured bandwidth exceeds the peak".into(),
        ));
    }
    if let Some((field, entry)) = table.iter().find(|(k, _)| !r.used.contains(k.as_str())) {
        return Err(DeviceError::UnknownField {
            file: file.to_string(),
            line: entry.line,
            field: field.clone(),
        });
    }
    Ok(device)
}

struct Reader<'a> {
    file: &'a str,
    table: &'a Table,
    used: BTreeSet<&'a str>,
}

impl<'a> Reader<'a> {
    fn get(&mut self, field: &'static str) -> Result<&'a Value, DeviceError> {
        let entry = self.table.get(field).ok_or_else(|| DeviceError::Missing {
            file: self.file.to_string(),
            field: field.to_string(),
        })?;
        self.used.insert(field);
        Ok(&entry.value)
    }

    fn bad(&self, field: &str, message: String) -> DeviceError {
        DeviceError::Field {
            file: self.file.to_string(),
            line: self.table.get(field).map_or(0, |e| e.line),
            field: field.to_string(),
            message,
        }
    }

    fn number(&mut self, field: &'static str) -> Result<f64, DeviceError> {
        match self.get(field)? {
            Value::Number(v) => Ok(*v),
            other => Err(self.bad(field, format!("expected a number, found {other:?}"))),
        }
    }

    fn string(&mut self, field: &'static str) -> Result<String, DeviceError> {
        match self.get(field)? {
            Value::Str(s) => Ok(s.clone()),
            other => Err(self.bad(field, format!("expected a string, found {other:?}"))),
        }
    }

    fn boolean(&mut self, field: &'static str) -> Result<bool, DeviceError> {
        match self.get(field)? {
            Value::Bool(b) => Ok(*b),
            other => Err(self.bad(field, format!("expected true or false, found {other:?}"))),
        }
    }

    fn positive(&mut self, field: &'static str) -> Result<f64, DeviceError> {
        let v = self.number(field)?;
        if v > 0.0 {
            Ok(v)
        } else {
            Err(self.bad(field, format!("must be positive, found {v}")))
        }
    }

    fn non_negative(&mut self, field: &'static str) -> Result<f64, DeviceError> {
        let v = self.number(field)?;
        if v >= 0.0 {
            Ok(v)
        } else {
            Err(self.bad(field, format!("must not be negative, found {v}")))
        }
    }

    fn whole(&mut self, field: &'static str, min: f64) -> Result<u64, DeviceError> {
        let v = self.number(field)?;
        if v.fract() == 0.0 && v >= min && v <= 9.0e15 {
            Ok(v as u64)
        } else {
            Err(self.bad(field, format!("must be a whole number >= {min}, found {v}")))
        }
    }

    fn count(&mut self, field: &'static str) -> Result<u32, DeviceError> {
        let v = self.whole(field, 1.0)?;
        u32::try_from(v).map_err(|_| self.bad(field, format!("{v} is too large")))
    }

    fn bytes(&mut self, field: &'static str) -> Result<u64, DeviceError> {
        self.whole(field, 0.0)
    }
}
