//! Manual regions nested in manual ones, in Shardy's form. A `shard_map` over the
//! automatic axes inside a partially manual one (and JAX's `axis_index` there) is a
//! `call` of a body whose boundaries (`xla.sdy.GlobalToLocalShape` /
//! `xla.sdy.LocalToGlobalShape`) name only the nested region's own manual axes: the
//! enclosing region's manual axes are implied by where the call sits. The partitioner
//! inlines every call first, which loses that, so [`mark`] runs before inlining and
//! writes the enclosing manual axes onto each nested boundary (frontend attribute
//! [`ENCLOSING`]). [`tilings`] then reads such a boundary as `manual_nested.rs` reads
//! GSPMD's manual subgroups: its global side is the enclosing region's value, tiled by
//! the boundary's sharding within each coordinate of the enclosing manual axes. Without
//! this a nested region looked like a partially manual region of its own (manual on the
//! inner axes, the enclosing ones automatic), whose values lost the enclosing region's
//! coordinates: the next constraint in the enclosing body gathered them whole, and the
//! Shardy form of a nested `shard_map` moved three times the bytes of GSPMD's form.

use std::collections::HashMap;

use hlo::attrs::TextValue;
use hlo::sharding::ShardingKind;
use hlo::{AttrName, AttrValue, CompId, Instruction, Module, Opcode};

use crate::context::Ctx;
use crate::error::SpmdError;
use crate::manual_ops::{enters, leaves};
use crate::manual_partial;
use crate::tiling::Tiling;
use hlo::sdy;

/// The frontend attribute [`mark`] writes on a nested Shardy boundary: the manual axes of
/// every region enclosing it, as `#sdy<manual_axes{"a", ...}>`.
pub(crate) const ENCLOSING: &str = "hloc.sdy.enclosing_manual_axes";

/// Whether `instr` is a Shardy region boundary.
fn shardy_boundary(instr: &Instruction) -> bool {
    (enters(instr) || leaves(instr))
        && instr
            .custom_call_target()
            .is_some_and(|t| t.starts_with("xla.sdy."))
}

/// The frontend attribute `key` of `instr`, as text.
fn attr(instr: &Instruction, key: &str) -> Option<String> {
    instr
        .frontend_attributes()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str().to_string())
}

/// The manual axes a Shardy boundary names.
fn manual_of(instr: &Instruction) -> Result<Vec<String>, SpmdError> {
    let text = attr(instr, "xla.sdy.manual_axes").ok_or_else(|| {
        SpmdError::invalid(instr.name(), "no frontend attribute xla.sdy.manual_axes")
    })?;
    sdy::manual_axes(&text).map_err(|e| SpmdError::unsupported(instr, e))
}

/// The manual axes of the region whose body `call` (an instruction of `comp`) runs: those
/// of a Shardy boundary it reads or that reads it; `None` for any other op.
fn region_axes(
    m: &Module,
    comp: CompId,
    call: hlo::InstrId,
) -> Result<Option<Vec<String>>, SpmdError> {
    let c = m.computation(comp);
    let instr = c.instr(call);
    if instr.opcode() != Opcode::Call {
        return Ok(None);
    }
    let boundary = instr
        .operands()
        .iter()
        .chain(c.users(call))
        .map(|&b| c.instr(b))
        .find(|b| shardy_boundary(b));
    boundary.map(manual_of).transpose()
}

/// Writes [`ENCLOSING`] on every Shardy boundary inside a region's body (a computation a
/// region's `call` runs, or one such a body calls: a loop's). Fails where one body is
/// reached under two different sets of enclosing axes.
pub(crate) fn mark(m: &mut Module) -> Result<(), SpmdError> {
    let mut seen: HashMap<CompId, Vec<String>> = HashMap::new();
    let mut work = vec![(m.entry_id(), Vec::<String>::new())];
    let mut tags: Vec<(CompId, hlo::InstrId, Vec<String>)> = Vec::new();
    while let Some((comp, enclosing)) = work.pop() {
        match seen.get(&comp) {
            Some(before) if *before == enclosing => continue,
            Some(_) => {
                return Err(SpmdError::invalid(
                    m.computation(comp).name(),
                    "a computation called both inside and outside a manual region",
                ))
            }
            None => {
                seen.insert(comp, enclosing.clone());
            }
        }
        let c = m.computation(comp);
        for (id, instr) in c.instructions() {
            if shardy_boundary(instr) && !enclosing.is_empty() {
                tags.push((comp, id, enclosing.clone()));
            }
            let mut inner = enclosing.clone();
            if let Some(axes) = region_axes(m, comp, id)? {
                inner.extend(axes.into_iter().filter(|a| !enclosing.contains(a)));
            }
            for callee in instr.called_computations_iter() {
                work.push((callee, inner.clone()));
            }
        }
    }
    for (comp, id, axes) in tags {
        let quoted: Vec<String> = axes.iter().map(|a| format!("\"{a}\"")).collect();
        let value = TextValue::Quoted(format!("#sdy<manual_axes{{{}}}>", quoted.join(", ")));
        let instr = m.computation_mut(comp).instr_mut(id);
        let mut attrs = instr.frontend_attributes().to_vec();
        attrs.retain(|(k, _)| k != ENCLOSING);
        attrs.push((ENCLOSING.to_string(), value));
        instr.set_attr(
            AttrName::FrontendAttributes,
            AttrValue::FrontendAttributes(attrs),
        );
    }
    Ok(())
}

/// The manual axes of nested Shardy boundary `instr` and of every region enclosing it,
/// where the nested region leaves some mesh axis of more than one device automatic (a
/// partially manual region nested in a partially manual one): its body runs per
/// coordinate of these axes, its values tiled over the others. `None` where every axis
/// is manual there (or `instr` is not a nested boundary).
pub(crate) fn all_manual(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Vec<String>> {
    if !is_nested(instr) {
        return None;
    }
    let mut axes = sdy::manual_axes(&attr(instr, ENCLOSING)?).ok()?;
    for a in manual_of(instr).ok()? {
        if !axes.contains(&a) {
            axes.push(a);
        }
    }
    let meshes = sdy::meshes(ctx.module).ok()?;
    let key = match enters(instr) {
        true => "xla.sdy.in_shardings",
        false => "xla.sdy.out_shardings",
    };
    let shardings = sdy::sharding_per_value(&attr(instr, key)?, &meshes).ok()?;
    let ShardingKind::Named(n) = &shardings.first()?.kind else {
        return None;
    };
    n.mesh
        .iter()
        .any(|(a, size)| *size > 1 && !axes.contains(a))
        .then_some(axes)
}

/// Whether `instr` is a Shardy boundary [`mark`] found inside another region.
pub(crate) fn is_nested(instr: &Instruction) -> bool {
    shardy_boundary(instr) && attr(instr, ENCLOSING).is_some()
}

/// For a nested Shardy boundary of values of `globals` shapes (the enclosing region's
/// values): each value's tiling within each coordinate of the enclosing manual axes, and
/// the coordinate each device serves. Unsupported where its sharding names an axis that is
/// not its own. (A nested region that leaves mesh axes automatic, a partially manual
/// region in a partially manual one, runs per coordinate of [`all_manual`]'s axes.)
pub(crate) fn tilings(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    globals: &[hlo::Shape],
) -> Result<(Vec<Tiling>, Vec<i64>), SpmdError> {
    let bad = |e: String| SpmdError::unsupported(instr, e);
    let enclosing = sdy::manual_axes(&attr(instr, ENCLOSING).unwrap_or_default()).map_err(bad)?;
    let own = manual_of(instr)?;
    let key = match enters(instr) {
        true => "xla.sdy.in_shardings",
        false => "xla.sdy.out_shardings",
    };
    let text = attr(instr, key)
        .ok_or_else(|| SpmdError::invalid(instr.name(), format!("no frontend attribute {key}")))?;
    let meshes = sdy::meshes(ctx.module).map_err(bad)?;
    let shardings = sdy::sharding_per_value(&text, &meshes).map_err(bad)?;
    if shardings.len() != globals.len() {
        return Err(SpmdError::invalid(
            instr.name(),
            format!("{} shardings, {} values", shardings.len(), globals.len()),
        ));
    }
    let mut tilings = Vec::with_capacity(globals.len());
    for (s, global) in shardings.iter().zip(globals) {
        let ShardingKind::Named(n) = &s.kind else {
            return Err(bad(format!("a nested region's boundary sharding {s}")));
        };
        if let Some(a) = n.dims.iter().flatten().find(|a| !own.contains(&a.name)) {
            return Err(bad(format!(
                "a nested region's boundary splits over mesh axis {:?}, not one of its own manual axes",
                a.name
            )));
        }
        let rank = global
            .as_array()
            .ok_or_else(|| bad("a tuple crossing a nested manual region's boundary".into()))?
            .dims()
            .len();
        tilings.push(Tiling::from_sharding(s, rank, ctx.devices).map_err(bad)?);
    }
    let keys = manual_partial::keys(instr, &shardings, Some(&enclosing), ctx.devices)
        .ok_or_else(|| bad("a manual region nested in a fully manual one".into()))?;
    if let Some(t) = tilings.iter().find(|t| !manual_partial::covers(t, &keys)) {
        return Err(bad(format!(
            "{} does not tile each enclosing manual coordinate's devices evenly",
            crate::context::text(t)
        )));
    }
    Ok((tilings, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_only_the_boundaries_inside_a_region() {
        let text = r##"HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["a"=2, "b"=2]>}}

inner {
  ROOT p = f32[2,2] parameter(0)
}

body {
  q = f32[4,2] parameter(0)
  be = f32[2,2] custom-call(q), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"a\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"a\"}>"}
  bc = f32[2,2] call(be), to_apply=inner
  ROOT bl = f32[4,2] custom-call(bc), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"a\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"a\"}>"}
}

ENTRY main {
  x = f32[4,4] parameter(0)
  e = f32[4,2] custom-call(x), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{}, {\"b\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"b\"}>"}
  c = f32[4,2] call(e), to_apply=body
  ROOT l = f32[4,4] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{}, {\"b\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"b\"}>"}
}
"##;
        let mut m = hlo::parse_module(text).expect("parses");
        mark(&mut m).expect("marks");
        let tagged = |comp: &str, name: &str| {
            let (_, c) = m
                .computations()
                .find(|(_, c)| c.name() == comp)
                .expect("computation");
            attr(c.instr(c.find(name).expect("instr")), ENCLOSING)
        };
        assert_eq!(tagged("main", "e"), None);
        assert_eq!(tagged("main", "l"), None);
        let b = Some("#sdy<manual_axes{\"b\"}>".to_string());
        assert_eq!(tagged("body", "be"), b);
        assert_eq!(tagged("body", "bl"), b);
    }
}
