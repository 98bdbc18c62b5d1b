//! Shardy's wrapper custom calls (`xla.sdy.*`, what JAX writes around a `shard_map` body
//! by default) with their global meaning, on the devices of an N-device run of an
//! unpartitioned module. Outside a manual region every device holds the value of its
//! enclosing region (the global value at the top level); inside a region manual on axes
//! `M`, each device holds its piece. So:
//! - `xla.sdy.GlobalToLocalShape` gives each operand's piece of this device by the
//!   region's `xla.sdy.in_shardings` (each dimension split over the mesh axes it names,
//!   this device's coordinates on them choosing the piece);
//! - `xla.sdy.LocalToGlobalShape` assembles each operand's value from the pieces of the
//!   devices that differ from this one only on the axes its `xla.sdy.out_shardings` names:
//!   a region nested in a manual one (whose boundaries name only its own axes) so
//!   assembles its enclosing region's value for this device's coordinate there, and an
//!   axis the sharding leaves out keeps this device's own value (as XLA's partitioned
//!   program does);
//! - `xla.sdy.FuncResultSharding` annotates its operand and returns it.
//!
//! A boundary sharding that names a mesh axis outside the region's manual axes (which JAX
//! does not write) is refused, and so is any other `xla.sdy.*` call.

use hlo::sharding::{Sharding, ShardingKind};
use hlo::{Instruction, Literal, Module, Shape};

use crate::control::zeros;
use crate::data::array;
use crate::device::Device;
use crate::error::EvalError;
use crate::multi_device_shards::{put_shard, take_shard};

/// Whether `target` is a Shardy call [`evaluate`] handles.
pub(crate) fn handles(target: Option<&str>) -> bool {
    matches!(
        target,
        Some(
            "xla.sdy.GlobalToLocalShape"
                | "xla.sdy.LocalToGlobalShape"
                | "xla.sdy.FuncResultSharding"
        )
    )
}

/// Evaluates Shardy call `instr` of `module` on this device.
pub(crate) fn evaluate(
    dev: &mut Device,
    module: &Module,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let target = instr.custom_call_target();
    if target == Some("xla.sdy.FuncResultSharding") {
        let [v] = vals else {
            return Err(EvalError::invalid(what, "takes one operand"));
        };
        return Ok((*v).clone());
    }
    let enter = target == Some("xla.sdy.GlobalToLocalShape");
    let key = match enter {
        true => "xla.sdy.in_shardings",
        false => "xla.sdy.out_shardings",
    };
    let meshes = hlo::sdy::meshes(module).map_err(|m| EvalError::invalid(what, m))?;
    let shardings = hlo::sdy::sharding_per_value(attr(instr, key)?, &meshes)
        .map_err(|m| EvalError::invalid(what, m))?;
    let manual = hlo::sdy::manual_axes(attr(instr, "xla.sdy.manual_axes")?)
        .map_err(|m| EvalError::invalid(what, m))?;
    let shapes = match instr.shape().is_tuple() {
        true => instr.shape().tuple_shapes().to_vec(),
        false => vec![instr.shape().clone()],
    };
    if shardings.len() != vals.len() || shapes.len() != vals.len() {
        return Err(EvalError::invalid(
            what,
            format!(
                "{} operands, {} shardings, {} results",
                vals.len(),
                shardings.len(),
                shapes.len()
            ),
        ));
    }
    let mut regions = Vec::with_capacity(vals.len());
    for s in &shardings {
        regions.push(Region::of(s, &manual, dev.grid.partitions, instr)?);
    }
    let mut out = Vec::with_capacity(vals.len());
    if enter {
        for ((r, v), shape) in regions.iter().zip(vals).zip(&shapes) {
            out.push(r.piece(dev.partition, v, shape, what)?);
        }
    } else {
        let scope: Vec<i64> = (0..dev.grid.partitions)
            .map(|p| dev.replica * dev.grid.partitions + p)
            .collect();
        let mine = Literal::Tuple(vals.iter().map(|v| (*v).clone()).collect());
        let all = dev.exchange(&scope, mine, what)?;
        for (i, (r, shape)) in regions.iter().zip(&shapes).enumerate() {
            let pieces: Vec<&Literal> = all
                .iter()
                .map(|t| match t {
                    Literal::Tuple(parts) => parts.get(i),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| EvalError::invalid(what, "a device sent no piece"))?;
            out.push(r.assemble(dev.partition, &pieces, shape, what)?);
        }
    }
    Ok(match instr.shape().is_tuple() {
        true => Literal::Tuple(out),
        false => out.remove(0),
    })
}

/// The text of `instr`'s frontend attribute `key`.
fn attr<'a>(instr: &'a Instruction, key: &str) -> Result<&'a str, EvalError> {
    instr
        .frontend_attributes()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| EvalError::invalid(instr.name(), format!("no frontend attribute {key}")))
}

/// One value's boundary: its sharding over the mesh and each partition's mesh coordinates,
/// with the axes the sharding names marked.
struct Region {
    sharding: Sharding,
    /// Per partition, its coordinate on each mesh axis.
    coords: Vec<Vec<i64>>,
    /// Per mesh axis, whether the sharding splits a dimension over it.
    named: Vec<bool>,
}

impl Region {
    fn of(
        s: &Sharding,
        manual: &[String],
        partitions: i64,
        instr: &Instruction,
    ) -> Result<Region, EvalError> {
        let what = instr.name();
        let ShardingKind::Named(n) = &s.kind else {
            return Err(EvalError::invalid(
                what,
                format!("not a mesh sharding: {s}"),
            ));
        };
        let sizes: Vec<i64> = n.mesh.iter().map(|(_, k)| *k).collect();
        let total: i64 = sizes.iter().product();
        if total != partitions {
            return Err(EvalError::invalid(
                what,
                format!("a mesh of {total} devices in a run of {partitions} partitions"),
            ));
        }
        let named: Vec<bool> = n
            .mesh
            .iter()
            .map(|(a, _)| n.dims.iter().flatten().any(|r| r.name == *a))
            .collect();
        if let Some((a, _)) = n
            .mesh
            .iter()
            .zip(&named)
            .find(|((a, _), &is)| is && !manual.contains(a))
            .map(|(a, _)| a)
        {
            return Err(EvalError::Unsupported {
                opcode: instr.opcode(),
                instr: what.to_string(),
                detail: Some(format!(
                    "a manual region's boundary that splits over automatic mesh axis `{a}`"
                )),
            });
        }
        let mut coords = vec![Vec::new(); partitions as usize];
        for position in 0..total {
            let device = n
                .mesh_devices
                .as_ref()
                .map_or(Some(position), |d| d.get(position as usize).copied())
                .filter(|&d| (0..partitions).contains(&d))
                .ok_or_else(|| EvalError::invalid(what, "the mesh's device list is short"))?;
            let mut rest = position;
            let mut c = vec![0; sizes.len()];
            for (k, &size) in sizes.iter().enumerate().rev() {
                c[k] = rest % size.max(1);
                rest /= size.max(1);
            }
            coords[device as usize] = c;
        }
        Ok(Region {
            sharding: s.clone(),
            coords,
            named,
        })
    }

    /// Partition `p`'s piece of `v` (this device's value outside the region).
    fn piece(&self, p: i64, v: &Literal, shape: &Shape, what: &str) -> Result<Literal, EvalError> {
        let dims = array(v, what)?.shape().dims().to_vec();
        let shard = self
            .sharding
            .shard(p, &dims)
            .map_err(|m| EvalError::invalid(what, m))?
            .ok_or_else(|| EvalError::invalid(what, format!("partition {p} holds no piece")))?;
        if shard.shape != shape.dims() {
            return Err(EvalError::invalid(
                what,
                format!(
                    "the piece of {dims:?} is {:?} but the region's value is {shape}",
                    shard.shape
                ),
            ));
        }
        take_shard(v, &shard, shape, what)
    }

    /// The value of `shape` partition `p` holds after the region: assembled from the
    /// pieces (`pieces[q]` partition `q`'s) of the partitions whose coordinates equal
    /// `p`'s on every mesh axis the sharding does not name.
    fn assemble(
        &self,
        p: i64,
        pieces: &[&Literal],
        shape: &Shape,
        what: &str,
    ) -> Result<Literal, EvalError> {
        let dims = shape.dims().to_vec();
        let Literal::Array(mut full) = zeros(shape, what)? else {
            return Err(EvalError::invalid(what, "expects an array"));
        };
        let mine = &self.coords[p as usize];
        for (q, piece) in pieces.iter().enumerate() {
            let theirs = &self.coords[q];
            let same_place = self
                .named
                .iter()
                .zip(mine.iter().zip(theirs))
                .all(|(&named, (a, b))| named || a == b);
            if !same_place {
                continue;
            }
            let shard = self
                .sharding
                .shard(q as i64, &dims)
                .map_err(|m| EvalError::invalid(what, m))?
                .ok_or_else(|| EvalError::invalid(what, format!("partition {q} holds no piece")))?;
            full = put_shard(full, piece, &shard, shape, what)?;
        }
        Ok(Literal::Array(full))
    }
}
