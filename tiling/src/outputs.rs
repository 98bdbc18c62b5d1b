//! Outputs of a multi-output fusion whose shape differs from the first root's.
//!
//! The tile sizes tile the first root. A root of another shape is written by the programs
//! through the tile of it they read for the first root (it must be read by it): for the
//! given sizes, every program's tile of it must hold exactly the elements its positions
//! read (no masked element of another program), and the programs' tiles must partition the
//! output (every element written once). Checked by enumeration, within a budget.

use std::collections::HashSet;

use affine::Point;

use crate::analysis::{SymbolicTileAnalysis, TiledInstruction};
use crate::TilingError;

/// Element positions the check may enumerate.
const BUDGET: i64 = 1 << 22;

/// Whether program `origins` → tiles of `ti` (a tile of an extra root) partition it.
fn partitions(
    ti: &TiledInstruction,
    dims: &[i64],
    sizes: &[i64],
    origins: &[Vec<i64>],
    root_dims: &[i64],
) -> Result<bool, TilingError> {
    let m = &ti.map.map;
    if !m.ranges().is_empty() || !m.runtimes().is_empty() {
        return Ok(false);
    }
    let concrete = ti.tile.evaluate(sizes, &[])?;
    let mut written: HashSet<Vec<i64>> = HashSet::new();
    for origin in origins {
        let offsets = m.evaluate(&Point {
            dims: origin,
            ranges: &[],
            runtimes: &[],
        })?;
        // The tile's elements inside the output.
        let mut tile: HashSet<Vec<i64>> = HashSet::new();
        let boxes: Vec<affine::Interval> = concrete
            .sizes
            .iter()
            .map(|&n| affine::Interval::new(0, n - 1))
            .collect();
        affine::enumerate::for_each_in_box(&boxes, |k| {
            let v: Vec<i64> = offsets
                .iter()
                .zip(&concrete.strides)
                .zip(k)
                .map(|((o, s), k)| o + k * s)
                .collect();
            if v.iter().zip(dims).all(|(&x, &d)| (0..d).contains(&x)) {
                tile.insert(v);
            }
            true
        });
        // What the program's positions read of the output.
        let local: Vec<affine::Interval> = origin
            .iter()
            .zip(sizes)
            .zip(root_dims)
            .map(|((&o, &s), &d)| affine::Interval::new(o, (o + s).min(d) - 1))
            .collect();
        let mut read: HashSet<Vec<i64>> = HashSet::new();
        let mut failed = None;
        affine::enumerate::for_each_in_box(&local, |p| {
            match m.evaluate(&Point {
                dims: p,
                ranges: &[],
                runtimes: &[],
            }) {
                Ok(v) => {
                    read.insert(v);
                    true
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        if read != tile || tile.iter().any(|v| written.contains(v)) {
            return Ok(false);
        }
        written.extend(tile);
    }
    Ok(written.len() as i64 == dims.iter().product::<i64>())
}

impl SymbolicTileAnalysis {
    /// Checks that every extra root is written once by the programs of `sizes` (program
    /// origins in `origins`, one per program id).
    pub(crate) fn check_extra_outputs(
        &self,
        sizes: &[i64],
        origins: &[Vec<i64>],
    ) -> Result<(), TilingError> {
        for e in &self.extra {
            let total: i64 = self.root_dims.iter().product::<i64>().max(1);
            if total > BUDGET {
                return Err(TilingError::NotTileable(format!(
                    "the output `{}` differs in shape from the first: too large to check that \
                     the programs' tiles partition it",
                    e.name
                )));
            }
            let mut ok = false;
            for ti in self.instructions.iter().filter(|t| t.id == e.id) {
                if partitions(ti, &e.dims, sizes, origins, &self.root_dims)? {
                    ok = true;
                    break;
                }
            }
            if !ok {
                return Err(TilingError::NotTileable(format!(
                    "the output `{}` differs in shape from the first, and for these tile sizes \
                     its tiles do not partition it (a program would write what another writes, \
                     or a masked position)",
                    e.name
                )));
            }
        }
        Ok(())
    }
}
