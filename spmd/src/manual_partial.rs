//! Partially manual regions split over their automatic axes too (as XLA's partitioner
//! does): a `shard_map(..., axis_names={...})` body runs per manual coordinate, and
//! within each manual coordinate its values are tiled over the automatic axes like any
//! other value. Such a body value is a [`ValueTiling::Array`] whose tiling `B` is over
//! the body's (per manual coordinate) shape, the same on every manual coordinate; which
//! manual coordinate a device serves is its *key* (`keys[device]`).
//!
//! At the entry, the input's global tiling `T` refines the region's manual split `M`
//! (the dimensions `M` splits are split by the manual axes first, the automatic ones
//! within), so that a device's piece under `T` is its piece under `B` of its manual
//! coordinate's value: `B.tiles = T.tiles / M.tiles`, `B.index = T.index % B.tiles`. At
//! the exit the global tiling is composed back from the output's manual split and `B`.
//! Where the input's tiling does not refine `M` the input is resharded to `M` (the body
//! value whole on each device, `B` replicated), and where an output's `B` does not
//! compose it is gathered whole first. Every tiling `B` must tile each manual
//! coordinate's devices evenly ([`covers`]); the body's own collectives keep their
//! operands' `B` only where each group's members hold the same tile (else the operand is
//! gathered whole first), and a collective the partitioner adds inside the region must
//! pair devices of one manual coordinate ([`check_groups`]).

use hlo::collective_groups::{device_groups, permute_pairs, Grid};
use hlo::sharding::{Sharding, ShardingKind, SubgroupKind};
use hlo::{Instruction, Opcode, Shape};

use crate::context::{text, Ctx};
use crate::decision::Decision;
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The manual coordinate each device serves in the region that enter op `instr` opens,
/// or `None` where the region is fully manual. `shardings` are its boundary shardings
/// (Shardy's named ones carry the mesh), `manual` the manual axes (Shardy's form).
pub(crate) fn keys(
    instr: &Instruction,
    shardings: &[Sharding],
    manual: Option<&[String]>,
    devices: usize,
) -> Option<Vec<i64>> {
    if let Some(manual) = manual {
        let ShardingKind::Named(n) = &shardings.first()?.kind else {
            return None;
        };
        if n.mesh
            .iter()
            .all(|(a, size)| *size <= 1 || manual.contains(a))
        {
            return None;
        }
        let total: i64 = n.mesh.iter().map(|(_, s)| s).product();
        if total != devices as i64 {
            return None;
        }
        let mut keys = vec![0; devices];
        for position in 0..total {
            let device = n
                .mesh_devices
                .as_ref()
                .map_or(position, |d| d[position as usize]);
            // The position's coordinates, row-major over the mesh; the key ravels the
            // manual axes' coordinates.
            let mut rest = position;
            let mut coords = vec![0; n.mesh.len()];
            for (k, (_, size)) in n.mesh.iter().enumerate().rev() {
                coords[k] = rest % size;
                rest /= size;
            }
            let key = n
                .mesh
                .iter()
                .zip(&coords)
                .filter(|((a, _), _)| manual.contains(a))
                .fold(0, |acc, ((_, size), c)| acc * size + c);
            *keys.get_mut(device as usize)? = key;
        }
        return Some(keys);
    }
    // GSPMD's form: the enter op's own sharding, tiles then a `manual` subgroup and
    // (partially manual) others; a device's key is its index in the manual subgroup.
    let s = instr.sharding()?;
    let ShardingKind::Tiled(t) = &s.kind else {
        return None;
    };
    let at = t
        .subgroups
        .iter()
        .position(|k| *k == SubgroupKind::Manual)?;
    if t.subgroups.len() < 2 {
        return None;
    }
    let rank = t.tiles.dims().len() - t.subgroups.len();
    (0..devices as i64)
        .map(|d| t.index_of(d).and_then(|i| i.get(rank + at).copied()))
        .collect()
}

/// Whether `b` tiles the devices of every manual coordinate evenly (each coordinate's
/// devices hold every tile, equally often).
pub(crate) fn covers(b: &Tiling, keys: &[i64]) -> bool {
    let n = b.tile_count().max(1) as usize;
    let mut per_key: Vec<(i64, Vec<usize>)> = Vec::new();
    for (d, idx) in b.of_device.iter().enumerate() {
        let tile = idx
            .iter()
            .zip(&b.tiles)
            .fold(0, |acc, (&i, &t)| acc * t + i) as usize;
        let Some(&key) = keys.get(d) else {
            return false;
        };
        match per_key.iter_mut().find(|(k, _)| *k == key) {
            Some((_, counts)) => counts[tile] += 1,
            None => {
                let mut counts = vec![0; n];
                counts[tile] += 1;
                per_key.push((key, counts));
            }
        }
    }
    let first = per_key.first().map_or(0, |(_, c)| c[0]);
    first > 0 && per_key.iter().all(|(_, c)| c.iter().all(|&x| x == first))
}

/// The global tiling of an input that keeps `now`'s split where it refines the manual
/// split `m`, and its body tiling `B`; `None` where no dimension of `now` refines `m`
/// usefully or the result would not tile each manual coordinate evenly.
pub(crate) fn refine(m: &Tiling, now: &Tiling, keys: &[i64]) -> Option<(Tiling, Tiling)> {
    let rank = m.tiles.len();
    if now.tiles.len() != rank || now.devices() != m.devices() {
        return None;
    }
    let mut tiles = m.tiles.clone();
    let mut of_device = m.of_device.clone();
    for k in 0..rank {
        let (mt, nt) = (m.tiles[k], now.tiles[k]);
        let refines = nt % mt == 0
            && (0..m.devices()).all(|d| now.of_device[d][k] / (nt / mt) == m.of_device[d][k]);
        if refines {
            tiles[k] = nt;
            for (d, idx) in of_device.iter_mut().enumerate() {
                idx[k] = now.of_device[d][k];
            }
        }
    }
    let t = Tiling { tiles, of_device };
    t.check().ok()?;
    let b = body_tiling(&t, m);
    covers(&b, keys).then_some((t, b))
}

/// The body tiling of a global tiling `t` that refines manual split `m`.
fn body_tiling(t: &Tiling, m: &Tiling) -> Tiling {
    let tiles: Vec<i64> = t.tiles.iter().zip(&m.tiles).map(|(a, b)| a / b).collect();
    let of_device = t
        .of_device
        .iter()
        .map(|idx| idx.iter().zip(&tiles).map(|(i, n)| i % n).collect())
        .collect();
    Tiling { tiles, of_device }
}

/// The global tiling of an output whose manual split is `m` and body tiling `b`, `None`
/// where they do not compose into a tiling.
pub(crate) fn compose(m: &Tiling, b: &Tiling, keys: &[i64]) -> Option<Tiling> {
    if m.tiles.len() != b.tiles.len() || m.devices() != b.devices() || !covers(b, keys) {
        return None;
    }
    let tiles: Vec<i64> = m.tiles.iter().zip(&b.tiles).map(|(x, y)| x * y).collect();
    let of_device = (0..m.devices())
        .map(|d| {
            (0..tiles.len())
                .map(|k| m.of_device[d][k] * b.tiles[k] + b.of_device[d][k])
                .collect()
        })
        .collect();
    let t = Tiling { tiles, of_device };
    t.check().ok()?;
    Some(t)
}

/// The global tiling an input of a partially manual region takes (its manual split `m`
/// refined by its current tiling `now` where that keeps the pieces' shapes) and the body
/// value's tiling over the automatic axes (replicated where `now` does not refine `m`).
pub(crate) fn input(
    m: &Tiling,
    now: &Tiling,
    keys: &[i64],
    global: &Shape,
    piece: &Shape,
) -> (Tiling, Tiling) {
    if let Some((t, b)) = refine(m, now, keys) {
        if same_pieces(global, &t, piece, &b) {
            return (t, b);
        }
    }
    (m.clone(), Tiling::replicated(m.tiles.len(), m.devices()))
}

/// The global tiling of an output of manual split `m` whose body value is tiled `b`, and
/// the tiling its body value is resharded to first (`None`: as it is): `b` composed
/// with `m` where it composes (a partially manual region, `keys` given), else the body
/// value made whole and `m` as it is.
pub(crate) fn output(
    m: &Tiling,
    b: &Tiling,
    keys: Option<&[i64]>,
    global: &Shape,
    piece: &Shape,
) -> (Tiling, Option<Tiling>) {
    if b.is_replicated() {
        return (m.clone(), None);
    }
    let composed = keys
        .and_then(|k| compose(m, b, k))
        .filter(|t| same_pieces(global, t, piece, b));
    match composed {
        Some(t) => (t, None),
        None => (
            m.clone(),
            Some(Tiling::replicated(b.tiles.len(), b.devices())),
        ),
    }
}

/// Whether a device's piece of `global` under `t` is its piece of the body value
/// `piece` under `b`: both split evenly (no padding) into pieces of one shape.
fn same_pieces(global: &Shape, t: &Tiling, piece: &Shape, b: &Tiling) -> bool {
    let even = |dims: &[i64], tiles: &[i64]| {
        dims.len() == tiles.len() && dims.iter().zip(tiles).all(|(n, k)| n % k == 0)
    };
    even(global.dims(), &t.tiles)
        && even(piece.dims(), &b.tiles)
        && t.shard_dims(global.dims()) == b.shard_dims(piece.dims())
}

/// The decision for a collective of the body (one array operand tiled `b`): it keeps `b`
/// where every group's members hold the same tile and no dimension it gathers, scatters
/// or exchanges is split; else its operand is gathered whole first.
pub(crate) fn collective(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    b: &Tiling,
) -> Result<Decision, SpmdError> {
    let grid = Grid {
        replicas: 1,
        partitions: ctx.devices as i64,
    };
    let groups = match instr.opcode() {
        Opcode::CollectivePermute => permute_pairs(instr, grid)
            .map(|(_, pairs)| pairs.into_iter().map(|(s, t)| vec![s, t]).collect()),
        _ => device_groups(instr, grid),
    }
    .map_err(|e| SpmdError::invalid(instr.name(), e))?;
    let same_tile = groups.iter().all(|g| {
        g.windows(2)
            .all(|w| b.of_device.get(w[0] as usize) == b.of_device.get(w[1] as usize))
    });
    let dims: Vec<usize> = match instr.opcode() {
        Opcode::AllGather | Opcode::ReduceScatter | Opcode::AllToAll => instr
            .dimensions()
            .unwrap_or_default()
            .iter()
            .map(|&d| d as usize)
            .collect(),
        _ => Vec::new(),
    };
    let unsplit = dims.iter().all(|&d| b.tiles.get(d) == Some(&1));
    let (keep, operand, why) = match same_tile && unsplit {
        true => (
            b.clone(),
            None,
            format!(
                "partially manual region: collective kept on its operand's {}",
                text(b)
            ),
        ),
        false => {
            let whole = Tiling::replicated(b.tiles.len(), ctx.devices);
            (
                whole.clone(),
                Some(whole),
                "partially manual region: operand gathered whole for the collective".into(),
            )
        }
    };
    Ok(crate::context::simple(keep, vec![operand], why))
}

/// Fails where a collective the partitioner emitted (`added`) for instruction `of`, a
/// partially manual region's, pairs devices of different manual coordinates.
pub(crate) fn check_groups(
    module_devices: usize,
    added: &[&Instruction],
    keys: &[i64],
    of: &Instruction,
) -> Result<(), SpmdError> {
    let grid = Grid {
        replicas: 1,
        partitions: module_devices as i64,
    };
    for i in added {
        let groups = match i.opcode() {
            Opcode::AllReduce | Opcode::AllGather | Opcode::ReduceScatter | Opcode::AllToAll => {
                device_groups(i, grid).map_err(|e| SpmdError::invalid(i.name(), e))?
            }
            Opcode::CollectivePermute => permute_pairs(i, grid)
                .map_err(|e| SpmdError::invalid(i.name(), e))?
                .1
                .into_iter()
                .map(|(s, t)| vec![s, t])
                .collect(),
            _ => continue,
        };
        let crosses = groups.iter().any(|g| {
            g.windows(2)
                .any(|w| keys.get(w[0] as usize) != keys.get(w[1] as usize))
        });
        if crosses {
            return Err(SpmdError::unsupported(
                of,
                format!(
                    "resharding inside a partially manual region would make `{}` exchange between manual coordinates",
                    i.name()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiling(tiles: Vec<i64>, of_device: Vec<Vec<i64>>) -> Tiling {
        Tiling { tiles, of_device }
    }

    #[test]
    fn refines_and_composes_on_a_2x2_mesh() {
        // Devices data*2 + model; manual on model. Input split on rows by data, the
        // manual split on columns by model.
        let keys = vec![0, 1, 0, 1];
        let now = tiling(
            vec![2, 1],
            vec![vec![0, 0], vec![0, 0], vec![1, 0], vec![1, 0]],
        );
        let m = tiling(
            vec![1, 2],
            vec![vec![0, 0], vec![0, 1], vec![0, 0], vec![0, 1]],
        );
        let (t, b) = refine(&m, &now, &keys).expect("refines");
        assert_eq!(t.tiles, vec![2, 2]);
        assert_eq!(b.tiles, vec![2, 1]);
        assert_eq!(b.of_device, now.of_device);
        assert_eq!(compose(&m, &b, &keys), Some(t));
        // Rows split by the manual axis itself do not tile a manual coordinate's devices.
        let by_model = tiling(
            vec![2, 1],
            vec![vec![0, 0], vec![1, 0], vec![0, 0], vec![1, 0]],
        );
        assert!(!covers(&by_model, &keys));
        assert!(refine(&m, &by_model, &keys).is_none());
    }
}
