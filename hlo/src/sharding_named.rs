//! The named-mesh form of a sharding as tiles: the mesh's devices are reshaped into the
//! pieces its axes and sub-axes cut it into, transposed so that each array dimension's
//! pieces come first (in order), then the unreduced pieces, then the rest (replicated),
//! and read as a tiled sharding. This is what XLA does when it turns a `NamedSharding`
//! into an `HloSharding`.

use crate::sharding_types::{
    iota_devices, AxisRef, NamedSharding, SubgroupKind, TileAssignment, TiledSharding,
};

/// One mesh axis cut at every boundary its sub-axes name: `(start, end)` pre-size
/// boundaries of each piece, major piece first.
struct AxisPieces {
    name: String,
    /// Boundaries, descending (the axis size first, 1 last).
    bounds: Vec<i64>,
}

/// The pieces of every mesh axis, or why the sub-axes do not cut it cleanly.
fn pieces(named: &NamedSharding) -> Result<Vec<AxisPieces>, String> {
    let refs: Vec<&AxisRef> = named
        .dims
        .iter()
        .flatten()
        .chain(&named.replicated)
        .chain(&named.unreduced)
        .collect();
    let mut out = Vec::new();
    for (name, size) in &named.mesh {
        let mut bounds = vec![1, *size];
        for r in refs.iter().filter(|r| r.name == *name) {
            if let Some((pre, sub)) = r.sub {
                let end = pre.checked_mul(sub).unwrap_or(0);
                if pre < 1 || sub < 2 || end == 0 || size % end != 0 || sub >= *size {
                    return Err(format!(
                        "sub-axis {name}:({pre}){sub} does not fit axis `{name}` of size {size}"
                    ));
                }
                bounds.push(pre);
                bounds.push(end);
            }
        }
        bounds.sort_unstable_by(|a, b| b.cmp(a));
        bounds.dedup();
        if bounds.windows(2).any(|w| w[0] % w[1] != 0) {
            return Err(format!("the sub-axes of `{name}` overlap without nesting"));
        }
        out.push(AxisPieces {
            name: name.clone(),
            bounds,
        });
    }
    Ok(out)
}

/// Global piece numbers of `r` (major first), given each axis's first piece number.
fn ref_pieces(r: &AxisRef, axes: &[AxisPieces], first: &[usize]) -> Vec<usize> {
    let Some(a) = axes.iter().position(|p| p.name == r.name) else {
        return Vec::new();
    };
    let b = &axes[a].bounds;
    let (lo, hi) = match r.sub {
        Some((pre, size)) => (pre, pre.saturating_mul(size)),
        None => (1, b[0]),
    };
    // Piece k spans (bounds[k+1], bounds[k]).
    (0..b.len() - 1)
        .filter(|&k| b[k + 1] >= lo && b[k] <= hi)
        .map(|k| first[a] + k)
        .collect()
}

/// Checks that the axes are known, sub-axes fit and no piece of the mesh is used twice.
pub(crate) fn check(named: &NamedSharding) -> Result<(), String> {
    to_tiled(named).map(|_| ())
}

/// The tiled sharding a named sharding means.
pub fn to_tiled(named: &NamedSharding) -> Result<TiledSharding, String> {
    if named.mesh.is_empty() {
        return Err("a mesh needs at least one axis".to_string());
    }
    let axes = pieces(named)?;
    let mut first = Vec::new();
    let mut sizes = Vec::new();
    for a in &axes {
        first.push(sizes.len());
        sizes.extend(a.bounds.windows(2).map(|w| w[0] / w[1]));
    }
    let mut used = vec![false; sizes.len()];
    let mut take = |r: &AxisRef, order: &mut Vec<usize>| -> Result<(), String> {
        for p in ref_pieces(r, &axes, &first) {
            if std::mem::replace(&mut used[p], true) {
                return Err(format!("axis `{}` is used twice in the sharding", r.name));
            }
            order.push(p);
        }
        Ok(())
    };
    let mut perm = Vec::new();
    let mut dims = Vec::new();
    for d in &named.dims {
        let before = perm.len();
        for r in d {
            take(r, &mut perm)?;
        }
        dims.push(perm[before..].iter().map(|&p| sizes[p]).product::<i64>());
    }
    let mut subgroups = Vec::new();
    let before = perm.len();
    for r in &named.unreduced {
        take(r, &mut perm)?;
    }
    if perm.len() > before {
        dims.push(perm[before..].iter().map(|&p| sizes[p]).product::<i64>());
        subgroups.push(SubgroupKind::Unreduced);
    }
    for r in &named.replicated {
        let mut scratch = Vec::new();
        take(r, &mut scratch)?;
    }
    let rest: Vec<usize> = (0..sizes.len()).filter(|&p| !perm.contains(&p)).collect();
    let replicated: i64 = rest.iter().map(|&p| sizes[p]).product();
    perm.extend(rest);
    if replicated > 1 {
        dims.push(replicated);
        subgroups.push(SubgroupKind::Replicated);
    }
    if dims.is_empty() {
        dims.push(1);
    }
    let reshape = if sizes.is_empty() { vec![1] } else { sizes };
    let perm: Vec<i64> = if perm.is_empty() {
        vec![0]
    } else {
        perm.iter().map(|&p| p as i64).collect()
    };
    let identity = perm.iter().enumerate().all(|(i, &p)| p == i as i64);
    let tiles = match &named.mesh_devices {
        None => TileAssignment::Iota {
            dims,
            reshape,
            transpose: (!identity).then_some(perm),
        },
        Some(ids) => {
            let devices = iota_devices(&reshape, Some(&perm))
                .into_iter()
                .map(|i| ids.get(i as usize).copied().unwrap_or(-1))
                .collect();
            TileAssignment::List { dims, devices }
        }
    };
    Ok(TiledSharding {
        last_tile_dim_replicate: subgroups == [SubgroupKind::Replicated],
        tiles,
        subgroups,
    })
}
