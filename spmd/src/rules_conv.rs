//! Propagation of `convolution`, read as a dot (`rules_dot.rs`): the input's batch
//! dimension and the kernel's output features are free dimensions (they keep their
//! tiles), the input's features and the kernel's input features contract (split alike,
//! they leave partial sums that an all-reduce completes), and the input's spatial
//! dimensions are free too where each device can compute its output tile from its input
//! tile: a window of one, or a halo from the neighbouring tiles (`halo.rs`). Kernel
//! spatial dimensions, spatial dimensions without a halo plan (base dilation, a halo
//! wider than a tile) and, for grouped convolutions, the feature dimensions are made
//! whole first.

use hlo::Instruction;

use crate::context::{text, Ctx};
use crate::decision::{Decision, Halo, PartialSums, ValueTiling};
use crate::dims_map::trivial;
use crate::error::SpmdError;
use crate::halo::{plan as halo_plan, unpadded};
use crate::rules_dot::{follow, plan, Roles};
use crate::rules_reduce::groups_text;
use crate::tiling::Tiling;

/// The decision for convolution `instr`.
pub(crate) fn convolution(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let dn = instr
        .conv_dimension_numbers()
        .ok_or_else(|| SpmdError::invalid(instr.name(), "a convolution without dim_labels"))?
        .clone();
    let window = instr
        .window()
        .cloned()
        .unwrap_or_else(|| hlo::attrs::Window { dims: Vec::new() });
    let l = ctx.operand_array(instr, 0)?.clone();
    let r = ctx.operand_array(instr, 1)?.clone();
    let in_dims = ctx.operand_dims(instr, 0);
    let out_dims = instr.shape().dims().to_vec();
    if window.dims.len() != dn.input_spatial_dimensions.len() {
        return Err(SpmdError::invalid(
            instr.name(),
            "a window of another rank than the spatial dimensions",
        ));
    }
    let grouped = instr.feature_group_count() != 1 || instr.batch_group_count() != 1;
    let sp = |v: &[i64]| v.iter().map(|&d| d as usize).collect::<Vec<_>>();
    let (in_sp, k_sp, out_sp) = (
        sp(&dn.input_spatial_dimensions),
        sp(&dn.kernel_spatial_dimensions),
        sp(&dn.output_spatial_dimensions),
    );
    let (ib, if_, ki, ko) = (
        dn.input_batch_dimension as usize,
        dn.input_feature_dimension as usize,
        dn.kernel_input_feature_dimension as usize,
        dn.kernel_output_feature_dimension as usize,
    );
    let halo_of = |t: &Tiling, j: usize| {
        let d = in_sp[j];
        let tile_of: Vec<i64> = t.of_device.iter().map(|i| i[d]).collect();
        halo_plan(
            in_dims[d],
            out_dims[out_sp[j]],
            t.tiles[d],
            &tile_of,
            &window.dims[j],
        )
    };
    // Dimensions each operand must hold whole.
    let mut lhs_whole: Vec<usize> = (0..in_sp.len())
        .filter(|&j| l.tiles[in_sp[j]] > 1 && !trivial(&window.dims[j]) && halo_of(&l, j).is_none())
        .map(|j| in_sp[j])
        .collect();
    let mut rhs_whole = k_sp.clone();
    if grouped {
        lhs_whole.push(if_);
        rhs_whole.extend([ki, ko]);
        if instr.batch_group_count() != 1 {
            lhs_whole.push(ib);
        }
    }
    let lg = l.gathered(&lhs_whole);
    let rg = r.gathered(&rhs_whole);
    let mut lhs_free = vec![ib];
    lhs_free.extend(&in_sp);
    let lr = Roles {
        batch: Vec::new(),
        contracting: vec![if_],
        free: lhs_free,
    };
    let rr = Roles {
        batch: Vec::new(),
        contracting: vec![ki],
        free: vec![ko],
    };
    let (nl, nr, planned) = match plan(&lg, &rg, &lr, &rr) {
        Some(p) => (lg, rg, p),
        None => {
            let (nl, nr) = match lg.tile_count() >= rg.tile_count() {
                true => (lg.clone(), follow(&lg, &lr, &rg, &rr)),
                false => (follow(&rg, &rr, &lg, &lr), rg.clone()),
            };
            let p = plan(&nl, &nr, &lr, &rr).ok_or_else(|| {
                SpmdError::unsupported(instr, "no per-device plan for these operand shardings")
            })?;
            (nl, nr, p)
        }
    };
    let (dot_out, groups) = planned;
    // The dot's result order (input batch, input spatial..., kernel output feature) to
    // the convolution's output dimensions.
    let mut from = vec![None; out_dims.len()];
    from[dn.output_batch_dimension as usize] = Some(0);
    for (j, &o) in out_sp.iter().enumerate() {
        from[o] = Some(1 + j);
    }
    from[dn.output_feature_dimension as usize] = Some(1 + in_sp.len());
    let out = dot_out.remap(&from);
    let mut halos = Vec::new();
    let mut local = window.clone();
    for (j, &d) in in_sp.iter().enumerate() {
        if nl.tiles[d] == 1 || trivial(&window.dims[j]) {
            continue;
        }
        let (low, high, offsets, length) = halo_of(&nl, j).ok_or_else(|| {
            SpmdError::invalid(instr.name(), "a split spatial dimension without a halo")
        })?;
        halos.push(Halo {
            operand: 0,
            dim: d,
            low,
            high,
            offsets,
            length,
            fill: None,
        });
        local.dims[j] = unpadded(&window.dims[j]);
    }
    let operands = vec![(nl != l).then(|| nl.clone()), (nr != r).then(|| nr.clone())];
    let mut why = format!("convolution as a dot: result {}", text(&out));
    if operands.iter().any(Option::is_some) {
        why.push_str(
            "; operands resharded (kernel spatial dimensions whole, batch and features as a dot's)",
        );
    }
    if !halos.is_empty() {
        let h: Vec<String> = halos
            .iter()
            .map(|h| format!("dimension {}: {}+{}", h.dim, h.low, h.high))
            .collect();
        why.push_str(&format!("; halos ({})", h.join(", ")));
    }
    if let Some(g) = &groups {
        why.push_str(&format!(
            "; features split: partial sums all-reduced over {}",
            groups_text(g)
        ));
    }
    Ok(Decision {
        out: ValueTiling::Array(out.clone()),
        local: ValueTiling::Array(out),
        operands,
        tuple_operands: Vec::new(),
        partial: groups.map(|groups| PartialSums { groups }),
        window: (!halos.is_empty()).then_some(local),
        halos,
        called: Vec::new(),
        why,
    })
}
