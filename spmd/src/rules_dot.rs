//! Propagation of `dot`: each device multiplies its blocks when both operands split their
//! batch and contracting dimensions alike (the same tiles on every device); the result
//! keeps the batch tiles and each operand's free-dimension tiles, and a split contracting
//! dimension leaves partial sums that an all-reduce over the devices splitting it
//! completes. When the operands do not agree, one is resharded to the other's batch and
//! contracting tiles (its free dimensions whole): the one whose move, with the all-reduce
//! of any partial sums the plan leaves (counted twice: a reduce-scatter and an
//! all-gather), costs less traffic (`reshard_cost.rs`); on a tie the less split one.

use hlo::Instruction;

use crate::context::{text, Ctx};
use crate::decision::{Decision, PartialSums, ValueTiling};
use crate::emit::local_shape;
use crate::error::SpmdError;
use crate::reshard_cost::reshard_bytes;
use crate::rules_reduce::groups_text;
use crate::tiling::{zip_groups, Tiling};

/// The dimensions of one dot operand by role.
pub(crate) struct Roles {
    pub batch: Vec<usize>,
    pub contracting: Vec<usize>,
    pub free: Vec<usize>,
}

impl Roles {
    fn new(rank: usize, batch: &[i64], contracting: &[i64]) -> Roles {
        let batch: Vec<usize> = batch.iter().map(|&d| d as usize).collect();
        let contracting: Vec<usize> = contracting.iter().map(|&d| d as usize).collect();
        let free = (0..rank)
            .filter(|d| !batch.contains(d) && !contracting.contains(d))
            .collect();
        Roles {
            batch,
            contracting,
            free,
        }
    }

    /// Batch then contracting dimensions, the ones both operands must split alike.
    fn paired(&self) -> Vec<usize> {
        self.batch
            .iter()
            .chain(&self.contracting)
            .copied()
            .collect()
    }
}

/// The local result's tiling and the partial-sum groups, when `l` and `r` split their
/// paired dimensions alike.
pub(crate) fn plan(
    l: &Tiling,
    r: &Tiling,
    lr: &Roles,
    rr: &Roles,
) -> Option<(Tiling, Option<Vec<Vec<i64>>>)> {
    for (&a, &b) in lr.paired().iter().zip(&rr.paired()) {
        if l.tiles[a] != r.tiles[b]
            || l.of_device
                .iter()
                .zip(&r.of_device)
                .any(|(x, y)| x[a] != y[b])
        {
            return None;
        }
    }
    let pick =
        |t: &Tiling, dims: &[usize], idx: &[i64], out: &mut Vec<i64>, tiles: &mut Vec<i64>| {
            for &d in dims {
                out.push(idx[d]);
                tiles.push(t.tiles[d]);
            }
        };
    let mut tiles = Vec::new();
    let mut of_device = Vec::new();
    for (x, y) in l.of_device.iter().zip(&r.of_device) {
        let mut idx = Vec::new();
        tiles.clear();
        pick(l, &lr.batch, x, &mut idx, &mut tiles);
        pick(l, &lr.free, x, &mut idx, &mut tiles);
        pick(r, &rr.free, y, &mut idx, &mut tiles);
        of_device.push(idx);
    }
    let out = Tiling { tiles, of_device };
    out.check().ok()?;
    let split: Vec<usize> = lr
        .contracting
        .iter()
        .copied()
        .filter(|&d| l.tiles[d] > 1)
        .collect();
    if split.is_empty() {
        return Some((out, None));
    }
    let keyed: Vec<(Vec<i64>, i64)> = out
        .of_device
        .iter()
        .zip(&l.of_device)
        .map(|(o, x)| {
            let sub = split.iter().fold(0, |acc, &d| acc * l.tiles[d] + x[d]);
            (o.clone(), sub)
        })
        .collect();
    let buckets = split.iter().map(|&d| l.tiles[d]).product();
    let groups = zip_groups(&keyed, buckets).ok()?;
    Some((out, Some(groups)))
}

/// `other` resharded to `driver`'s tiles on the paired dimensions, its free ones whole.
pub(crate) fn follow(driver: &Tiling, dr: &Roles, other: &Tiling, or: &Roles) -> Tiling {
    let rank = other.tiles.len();
    let mut from: Vec<Option<usize>> = vec![None; rank];
    for (&a, &b) in dr.paired().iter().zip(&or.paired()) {
        from[b] = Some(a);
    }
    driver.remap(&from)
}

/// The decision for dot `instr`.
pub(crate) fn dot(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let dn = instr.dot_dimension_numbers();
    let l = ctx.operand_array(instr, 0)?;
    let r = ctx.operand_array(instr, 1)?;
    let lr = Roles::new(l.tiles.len(), &dn.lhs_batch_dims, &dn.lhs_contracting_dims);
    let rr = Roles::new(r.tiles.len(), &dn.rhs_batch_dims, &dn.rhs_contracting_dims);
    let (operands, planned, how) = match plan(l, r, &lr, &rr) {
        Some(p) => (
            vec![None, None],
            p,
            "operands split batch and contracting dimensions alike".to_string(),
        ),
        None => {
            let global = |i: usize| ctx.comp.instr(instr.operands()[i]).shape();
            let option = |lhs_leads: bool| {
                let (nl, nr) = match lhs_leads {
                    true => (l.clone(), follow(l, &lr, r, &rr)),
                    false => (follow(r, &rr, l, &lr), r.clone()),
                };
                let p = plan(&nl, &nr, &lr, &rr)?;
                let moved = match lhs_leads {
                    true => reshard_bytes(global(1), r, &nr)?,
                    false => reshard_bytes(global(0), l, &nl)?,
                };
                // An all-reduce moves its buffer twice (a reduce-scatter, then an
                // all-gather), where a gather or an all-to-all moves its result once.
                let sums = match &p.1 {
                    Some(_) => {
                        2 * local_shape(instr.shape(), &p.0, instr.name())
                            .ok()?
                            .byte_size()
                            .ok()? as u64
                    }
                    None => 0,
                };
                Some((nl, nr, p, moved + sums))
            };
            // Reshard the operand whose move (with the all-reduce of any partial sums it
            // leaves) costs less traffic; on a tie the more split operand leads.
            let by_tiles = l.tile_count() >= r.tile_count();
            let (lhs_leads, (nl, nr, p, cost)) = match (option(by_tiles), option(!by_tiles)) {
                (Some(a), Some(b)) if b.3 < a.3 => (!by_tiles, b),
                (Some(a), _) => (by_tiles, a),
                (None, Some(b)) => (!by_tiles, b),
                (None, None) => {
                    return Err(SpmdError::unsupported(
                        instr,
                        "no per-device plan for these operand shardings",
                    ))
                }
            };
            let (which, to) = match lhs_leads {
                true => ("rhs", text(&nr)),
                false => ("lhs", text(&nl)),
            };
            let operands = match lhs_leads {
                true => vec![None, Some(nr)],
                false => vec![Some(nl), None],
            };
            (
                operands,
                p,
                format!(
                    "{which} resharded to {to} to split batch and contracting dimensions alike ({cost} bytes of traffic, the cheaper operand)"
                ),
            )
        }
    };
    let (out, groups) = planned;
    let why = match &groups {
        None => format!("dot: {how}"),
        Some(g) => format!(
            "dot: {how}; contracting dimension split: partial sums all-reduced over {}",
            groups_text(g)
        ),
    };
    Ok(Decision {
        out: ValueTiling::Array(out.clone()),
        local: ValueTiling::Array(out),
        operands,
        partial: groups.map(|groups| PartialSums { groups }),
        tuple_operands: Vec::new(),
        window: None,
        halos: Vec::new(),
        called: Vec::new(),
        why,
    })
}
