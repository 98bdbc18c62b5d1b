//! The roles of `ragged-dot`'s dimensions (XLA's `RaggedDotDimensionNumbers`), shared by
//! the verifier's shape rule, the evaluator and the expansion into a dense dot, so that all
//! three read the one definition.
//!
//! `ragged-dot(lhs, rhs, group_sizes)` is a dot whose lhs dimension `lhs_ragged_dims={r}`
//! is split into consecutive groups by `group_sizes`: group `i` covers the coordinates
//! `[sum(sizes[..i]), sum(sizes[..=i]))` along `r` (positions past the last group belong to
//! none). Which dot dimension `r` is decides the mode (JAX's `RaggedDotMode`):
//!
//! 1. **non-contracting** `r`: the rhs has one group dimension (`rhs_group_dims={d}`, of
//!    size `g`, neither batch nor contracting); lhs positions of group `i` are multiplied by
//!    `rhs[.., i, ..]`, the group dimension does not appear in the result:
//!    `[b,m,k] x [g,b,k,n] -> [b,m,n]`;
//! 2. **contracting** `r`: no rhs group dimension; group `i` contracts only over its own
//!    range of `r`, and the result gets a leading group dimension:
//!    `[b,m,k] x [b,k,n] -> [g,b,m,n]`;
//! 3. **batch** `r`: no rhs group dimension; every batch pairs with its own rhs batch, so
//!    the groups change nothing: the result is the plain dot `[b,m,k] x [b,k,n] -> [b,m,n]`.
//!
//! `group_sizes` is `[g]` (the same sizes everywhere) or `[p..., g]`, one row of sizes per
//! coordinate of the "prefix" lhs dimensions ([`RaggedDims::lhs_prefix`]): the lhs batch
//! dimensions, then (mode 1) the non-contracting dimensions before `r` or (mode 2) the
//! contracting dimensions listed before `r`; (mode 3) the batch dimensions listed before `r`.

use crate::attrs::{AttrName, AttrValue, DotDimensionNumbers};
use crate::Instruction;

/// Which dot dimension the lhs ragged dimension is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaggedMode {
    /// A free lhs dimension; the rhs has a group dimension.
    NonContracting,
    /// A contracting dimension; the result has a leading group dimension.
    Contracting,
    /// A batch dimension; the result is the plain dot.
    Batch,
}

/// The dimension roles of one `ragged-dot`, checked against the operand ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaggedDims {
    /// The mode, from the role of [`RaggedDims::lhs_ragged`].
    pub mode: RaggedMode,
    /// The lhs ragged dimension.
    pub lhs_ragged: usize,
    /// The rhs group dimension (mode 1 only).
    pub rhs_group: Option<usize>,
    /// The rhs dimension paired with the ragged one (its contracting or batch partner;
    /// `None` in mode 1).
    pub rhs_ragged: Option<usize>,
    /// The lhs dimensions whose coordinates pick a row of a batched `group_sizes`, in the
    /// order of `group_sizes`' leading dimensions.
    pub lhs_prefix: Vec<usize>,
    /// The rhs dimensions paired with [`RaggedDims::lhs_prefix`] (modes 2 and 3, where
    /// every prefix dimension is a batch or contracting one); empty in mode 1.
    pub rhs_prefix: Vec<usize>,
}

fn int_list(instr: &Instruction, name: AttrName) -> &[i64] {
    match instr.attr(&name) {
        Some(AttrValue::IntList(v)) => v,
        _ => &[],
    }
}

fn in_range(ds: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, String> {
    ds.iter()
        .map(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&u| u < rank)
                .ok_or_else(|| format!("{what} {d} is out of range for rank {rank}"))
        })
        .collect()
}

fn position(list: &[usize], d: usize) -> Option<usize> {
    list.iter().position(|&x| x == d)
}

/// The dimension roles of `instr` (a `ragged-dot`) for operands of ranks `lhs_rank` and
/// `rhs_rank`; errors name the broken rule (XLA's and JAX's shape rules).
pub fn ragged_dims(
    instr: &Instruction,
    lhs_rank: usize,
    rhs_rank: usize,
) -> Result<RaggedDims, String> {
    dims_of(
        &instr.dot_dimension_numbers(),
        int_list(instr, AttrName::LhsRaggedDims),
        int_list(instr, AttrName::RhsGroupDims),
        lhs_rank,
        rhs_rank,
    )
}

fn dims_of(
    dn: &DotDimensionNumbers,
    ragged: &[i64],
    group: &[i64],
    lhs_rank: usize,
    rhs_rank: usize,
) -> Result<RaggedDims, String> {
    let [r] = ragged else {
        return Err(format!(
            "ragged-dot needs exactly one lhs_ragged_dims entry (has {})",
            ragged.len()
        ));
    };
    let r = in_range(&[*r], lhs_rank, "lhs ragged dimension")?[0];
    let lb = in_range(&dn.lhs_batch_dims, lhs_rank, "lhs batch dimension")?;
    let lc = in_range(
        &dn.lhs_contracting_dims,
        lhs_rank,
        "lhs contracting dimension",
    )?;
    let rb = in_range(&dn.rhs_batch_dims, rhs_rank, "rhs batch dimension")?;
    let rc = in_range(
        &dn.rhs_contracting_dims,
        rhs_rank,
        "rhs contracting dimension",
    )?;
    let group = in_range(group, rhs_rank, "rhs group dimension")?;
    let free: Vec<usize> = (0..lhs_rank)
        .filter(|d| !lb.contains(d) && !lc.contains(d))
        .collect();
    let (mode, rhs_ragged, mut lhs_prefix, mut rhs_prefix) = if let Some(i) = position(&lc, r) {
        let partner = rc.get(i).copied();
        let mut lp = lb.clone();
        lp.extend(&lc[..i]);
        let mut rp = rb.clone();
        rp.extend(rc.iter().take(i));
        (RaggedMode::Contracting, partner, lp, rp)
    } else if let Some(i) = position(&lb, r) {
        let rp = rb.iter().take(i).copied().collect();
        (RaggedMode::Batch, rb.get(i).copied(), lb[..i].to_vec(), rp)
    } else {
        let mut lp = lb.clone();
        lp.extend(free.iter().take_while(|&&d| d != r));
        (RaggedMode::NonContracting, None, lp, Vec::new())
    };
    let rhs_group = match (mode, group.as_slice()) {
        (RaggedMode::NonContracting, [g]) => {
            if rb.contains(g) || rc.contains(g) {
                return Err(format!(
                    "the rhs group dimension {g} is also a batch or contracting dimension"
                ));
            }
            Some(*g)
        }
        (RaggedMode::NonContracting, _) => {
            return Err(format!(
                "ragged-dot with a non-contracting ragged dimension needs exactly one rhs_group_dims entry (has {})",
                group.len()
            ))
        }
        (_, []) => None,
        (_, _) => {
            return Err(
                "ragged-dot with a contracting or batch ragged dimension takes no rhs_group_dims"
                    .into(),
            )
        }
    };
    if mode != RaggedMode::NonContracting && rhs_ragged.is_none() {
        // The batch or contracting lists differ in length (the dot rule reports it).
        lhs_prefix.clear();
        rhs_prefix.clear();
    }
    Ok(RaggedDims {
        mode,
        lhs_ragged: r,
        rhs_group,
        rhs_ragged,
        lhs_prefix,
        rhs_prefix,
    })
}

impl RaggedDims {
    /// Checks `group_sizes`' dimensions against the lhs's: `[g]`, or the prefix
    /// dimensions' sizes then `g`. Returns the group count `g`.
    pub fn group_count(&self, lhs: &[i64], group_sizes: &[i64]) -> Result<i64, String> {
        let Some((&g, rows)) = group_sizes.split_last() else {
            return Err("ragged-dot group_sizes must have rank 1 or more".into());
        };
        if rows.is_empty() {
            return Ok(g);
        }
        let want: Vec<i64> = self.lhs_prefix.iter().map(|&d| lhs[d]).collect();
        if rows != want.as_slice() {
            let show = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
            return Err(format!(
                "ragged-dot group_sizes has shape [{}] but [{}] or [{}] is required (the lhs prefix dimensions, then the groups)",
                show(group_sizes),
                show(&[g]),
                show(&[want.as_slice(), &[g]].concat())
            ));
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dn(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> DotDimensionNumbers {
        DotDimensionNumbers {
            lhs_contracting_dims: lc.to_vec(),
            rhs_contracting_dims: rc.to_vec(),
            lhs_batch_dims: lb.to_vec(),
            rhs_batch_dims: rb.to_vec(),
        }
    }

    #[test]
    fn modes_and_prefixes_follow_the_ragged_dimension_role() {
        // [b, x, m, k] x [g, b, k, n]: the ragged m is free; prefix = batch, then x.
        let d = dims_of(&dn(&[0], &[1], &[3], &[2]), &[2], &[0], 4, 4).unwrap();
        assert_eq!(d.mode, RaggedMode::NonContracting);
        assert_eq!(
            (d.lhs_prefix.as_slice(), d.rhs_group),
            (&[0, 1][..], Some(0))
        );
        assert_eq!(d.group_count(&[2, 3, 5, 7], &[2, 3, 4]), Ok(4));
        assert_eq!(d.group_count(&[2, 3, 5, 7], &[4]), Ok(4));
        assert!(d.group_count(&[2, 3, 5, 7], &[3, 2, 4]).is_err());
        // [m, k1, k2] x [k1, k2, n], ragged k2: prefix = the contracting k1 on both sides.
        let d = dims_of(&dn(&[], &[], &[1, 2], &[0, 1]), &[2], &[], 3, 3).unwrap();
        assert_eq!(d.mode, RaggedMode::Contracting);
        assert_eq!(
            (d.lhs_prefix, d.rhs_prefix, d.rhs_ragged),
            (vec![1], vec![0], Some(1))
        );
        // Ragged second batch dimension: the first batch dimension is the prefix.
        let d = dims_of(&dn(&[1, 0], &[0, 1], &[2], &[2]), &[0], &[], 3, 3).unwrap();
        assert_eq!(d.mode, RaggedMode::Batch);
        assert_eq!(
            (d.lhs_prefix, d.rhs_prefix, d.rhs_ragged),
            (vec![1], vec![0], Some(1))
        );
    }

    #[test]
    fn group_dimension_rules() {
        let mode1 = dn(&[], &[], &[1], &[1]);
        assert!(dims_of(&mode1, &[0], &[], 2, 3).is_err());
        assert!(
            dims_of(&mode1, &[0], &[1], 2, 3).is_err(),
            "group dim contracting"
        );
        assert!(
            dims_of(&mode1, &[0], &[3], 2, 3).is_err(),
            "group dim out of range"
        );
        assert!(
            dims_of(&mode1, &[1], &[0], 2, 3).is_err(),
            "contracting takes none"
        );
        assert!(dims_of(&mode1, &[0, 1], &[0], 2, 3).is_err());
        assert!(dims_of(&mode1, &[2], &[0], 2, 3).is_err());
    }
}
