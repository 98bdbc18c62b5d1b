//! Which manual coordinate each device serves in the partially manual region an entry
//! opens, in either form: GSPMD's manual subgroup, or Shardy's manual axes (with those of
//! the regions enclosing a nested one, `sdy_nested.rs`) over its named mesh. Read by the
//! entry's rules (`rules_manual.rs`, `manual_nested.rs`) and by propagation inside the
//! region (`rules_partial.rs`).

use hlo::sdy;
use hlo::Instruction;

use crate::context::Ctx;
use crate::manual_partial;

/// The manual coordinate each device serves in the partially manual region that enter op
/// `instr` opens; `None` for a fully manual one.
pub(crate) fn region_keys(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Vec<i64>> {
    if !instr
        .custom_call_target()
        .is_some_and(|t| t.starts_with("xla.sdy."))
    {
        return manual_partial::keys(instr, &[], None, ctx.devices);
    }
    let attrs = instr.frontend_attributes();
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.as_str().to_string())
    };
    let meshes = sdy::meshes(ctx.module).ok()?;
    let shardings = sdy::sharding_per_value(&get("xla.sdy.in_shardings")?, &meshes).ok()?;
    // A region nested in a partially manual one runs per coordinate of its own and its
    // enclosing regions' manual axes.
    let manual = match crate::sdy_nested::all_manual(ctx, instr) {
        Some(all) => all,
        None => sdy::manual_axes(&get("xla.sdy.manual_axes")?).ok()?,
    };
    manual_partial::keys(instr, &shardings, Some(&manual), ctx.devices)
}
