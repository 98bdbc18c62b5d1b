//! `ragged-dot(lhs, rhs, group_sizes)`: the dot's rule plus the groups' (the modes and
//! dimension roles are [`crate::ragged_dot`]). The result is the dot's dimensions without
//! the rhs group dimension (mode 1), with a leading group dimension (mode 2, one partial
//! contraction per group), or the plain dot's (mode 3).

use super::dot_conv::{dot_dims, operand_type, result_type};
use super::{array, Ctx, Inferred, R};
use crate::ragged_dot::{ragged_dims, RaggedMode};

pub(super) fn ragged_dot(ctx: &Ctx<'_>) -> R {
    ctx.arity(3)?;
    let (lhs, rhs) = (ctx.array(0)?, ctx.array(1)?);
    let gs = ctx.array(2)?;
    if !gs.element_type().is_integral() {
        return Err("ragged-dot group sizes must be integers".into());
    }
    let t = result_type(ctx, operand_type(lhs, rhs)?)?;
    let rd = ragged_dims(ctx.instr, lhs.dims().len(), rhs.dims().len())?;
    let groups = rd.group_count(lhs.dims(), gs.dims())?;
    let excluded: Vec<i64> = rd.rhs_group.iter().map(|&d| d as i64).collect();
    if let Some(d) = rd.rhs_group {
        if rhs.dims()[d] != groups {
            return Err(format!(
                "the rhs group dimension {d} has size {} but group_sizes has {groups} groups",
                rhs.dims()[d]
            ));
        }
    }
    let mut dims = dot_dims(ctx, lhs, rhs, &excluded)?;
    if rd.mode == RaggedMode::Contracting {
        dims.insert(0, groups);
    }
    Ok(Inferred::Shape(array(t, dims)))
}
