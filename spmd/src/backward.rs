//! Backward propagation (XLA's ShardingPropagation runs it after the forward pass): the
//! sharding a value's users want, from the annotations after it — a
//! `with_sharding_constraint`, a `sharding=` on an intermediate or on the root (JAX's
//! `out_shardings`) — carried from users to operands through every op whose rule can
//! say which operand tiles an output tile reads: elementwise ops, broadcasts, transposes,
//! reshapes (dimensions mapped whole), reduces (kept dimensions), dots (batch and free
//! dimensions; contracting ones whole), convolutions (batch, spatial and output feature
//! dimensions), the ops of `dims_map.rs` (the dimensions they leave alone), tuples and
//! their elements.
//!
//! These are hints: forward propagation decides, and takes a hint only where its
//! operands leave a value whole (see `propagate.rs` for the priority). Where several
//! users want different shardings the most split one wins (the first one found, users
//! visited last to first, among equals).

use hlo::sharding::ShardingKind;
use hlo::{Computation, InstrId, Instruction, Opcode};

use crate::tiling::Tiling;

/// A sharding the users of a value want, and the annotation it comes from.
#[derive(Clone, Debug)]
pub(crate) struct Hint {
    /// The wanted tiling.
    pub tiling: Tiling,
    /// The annotation, in words (`the sharding constraint `k``).
    pub origin: String,
}

/// Hints per instruction of the entry computation, one per array leaf (a tuple has one
/// per element).
#[derive(Clone, Debug, Default)]
pub(crate) struct Hints {
    by_id: Vec<Vec<Option<Hint>>>,
}

impl Hints {
    /// The hint for array `id` (its only leaf).
    pub fn array(&self, id: InstrId) -> Option<&Hint> {
        self.by_id
            .get(id.index())
            .and_then(|l| l.first())
            .and_then(Option::as_ref)
    }

    /// Offers `hint` for leaf `leaf` of `id`: kept when no hint is there or it splits
    /// into more tiles than the one there.
    fn offer(&mut self, id: InstrId, leaf: usize, hint: Hint) {
        let Some(slot) = self.by_id.get_mut(id.index()).and_then(|l| l.get_mut(leaf)) else {
            return;
        };
        if slot
            .as_ref()
            .is_none_or(|h| hint.tiling.tile_count() > h.tiling.tile_count())
        {
            *slot = Some(hint);
        }
    }
}

/// The hints of `comp`'s values on `devices` devices.
pub(crate) fn backward(comp: &Computation, devices: usize) -> Hints {
    let mut hints = Hints {
        by_id: comp
            .instrs
            .iter()
            .map(|i| vec![None; i.shape().tuple_shapes().len().max(1)])
            .collect(),
    };
    let order = comp.def_before_use_order();
    for &id in order.iter().rev() {
        let instr = comp.instr(id);
        if instr.opcode() == Opcode::Parameter {
            continue;
        }
        if instr.opcode() == Opcode::CustomCall {
            if instr.custom_call_target() == Some("Sharding") {
                let t = annotated(instr, devices).into_iter().next().flatten();
                if let (Some(t), Some(&op)) = (t, instr.operands().first()) {
                    let origin = format!("the sharding constraint `{}`", instr.name());
                    hints.offer(op, 0, Hint { tiling: t, origin });
                }
            }
            continue;
        }
        let origin = format!("the annotation of `{}`", instr.name());
        for (leaf, t) in annotated(instr, devices).into_iter().enumerate() {
            if let Some(tiling) = t {
                let origin = origin.clone();
                hints.by_id[id.index()][leaf] = Some(Hint { tiling, origin });
            }
        }
        for (leaf, hint) in hints.by_id[id.index()].clone().into_iter().enumerate() {
            let Some(hint) = hint else { continue };
            for (op, want) in operand_hints(comp, instr, leaf, &hint.tiling) {
                let (op_id, op_leaf) = op;
                hints.offer(
                    op_id,
                    op_leaf,
                    Hint {
                        tiling: want,
                        origin: hint.origin.clone(),
                    },
                );
            }
        }
    }
    hints
}

/// `instr`'s own annotation as a tiling per leaf (an array's one, a tuple's elements';
/// `None` where there is none or it does not tile: forward propagation reports those).
fn annotated(instr: &Instruction, devices: usize) -> Vec<Option<Tiling>> {
    let Some(s) = instr.sharding() else {
        return Vec::new();
    };
    let leaf = |s: &hlo::sharding::Sharding, shape: &hlo::Shape| match s.kind {
        ShardingKind::Unknown => None,
        _ if !shape.is_array() => None,
        _ => Tiling::from_sharding(s, shape.dims().len(), devices).ok(),
    };
    match (&s.kind, instr.shape().is_tuple()) {
        (ShardingKind::Tuple(parts), true) => parts
            .iter()
            .zip(instr.shape().tuple_shapes())
            .map(|(p, shape)| leaf(p, shape))
            .collect(),
        (_, false) => vec![leaf(s, instr.shape())],
        _ => Vec::new(),
    }
}

/// What each operand (and its leaf) of `instr` must be for leaf `leaf` of `instr` to be
/// tiled `h` without exchanging data.
pub(crate) fn operand_hints(
    comp: &Computation,
    instr: &Instruction,
    leaf: usize,
    h: &Tiling,
) -> Vec<((InstrId, usize), Tiling)> {
    let ops = instr.operands();
    let rank_of = |i: usize| comp.instr(ops[i]).shape().dims().len();
    let one = |i: usize, from: Vec<Option<usize>>| vec![((ops[i], 0), h.remap(&from))];
    match instr.opcode() {
        Opcode::Tuple => ops
            .get(leaf)
            .filter(|&&o| comp.instr(o).shape().is_array())
            .map(|&o| vec![((o, 0), h.clone())])
            .unwrap_or_default(),
        Opcode::GetTupleElement => {
            let index = instr.tuple_index().unwrap_or(0) as usize;
            vec![((ops[0], index), h.clone())]
        }
        _ if !instr.shape().is_array() => Vec::new(),
        op if is_elementwise(op) => (0..ops.len())
            .filter(|&i| rank_of(i) == h.tiles.len())
            .map(|i| ((ops[i], 0), h.clone()))
            .collect(),
        Opcode::Broadcast => {
            let dims = instr.dimensions().unwrap_or_default();
            one(0, dims.iter().map(|&d| Some(d as usize)).collect())
        }
        Opcode::Transpose => {
            let perm = instr.dimensions().unwrap_or_default();
            let mut from = vec![None; perm.len()];
            for (j, &p) in perm.iter().enumerate() {
                from[p as usize] = Some(j);
            }
            one(0, from)
        }
        Opcode::Reshape => {
            let in_dims = comp.instr(ops[0]).shape().dims().to_vec();
            let out_dims = instr.shape().dims();
            let prefix = |dims: &[i64], d: usize| dims[..d].iter().product::<i64>();
            let from = (0..in_dims.len())
                .map(|d| {
                    (0..out_dims.len()).find(|&e| {
                        h.tiles[e] > 1
                            && out_dims[e] == in_dims[d]
                            && prefix(out_dims, e) == prefix(&in_dims, d)
                    })
                })
                .collect();
            one(0, from)
        }
        Opcode::Reduce if ops.len() == 2 => {
            let reduced = instr.dimensions().unwrap_or_default();
            let mut kept = 0;
            let from = (0..rank_of(0))
                .map(|d| match reduced.contains(&(d as i64)) {
                    true => None,
                    false => {
                        kept += 1;
                        Some(kept - 1)
                    }
                })
                .collect();
            one(0, from)
        }
        Opcode::Dot => {
            let dn = instr.dot_dimension_numbers();
            let nb = dn.lhs_batch_dims.len();
            let side = |rank: usize, batch: &[i64], contracting: &[i64], first_free: usize| {
                let mut free = first_free;
                (0..rank)
                    .map(|d| {
                        let d = d as i64;
                        if let Some(b) = batch.iter().position(|&x| x == d) {
                            Some(b)
                        } else if contracting.contains(&d) {
                            None
                        } else {
                            free += 1;
                            Some(free - 1)
                        }
                    })
                    .collect::<Vec<_>>()
            };
            let (lr, rr) = (rank_of(0), rank_of(1));
            let lhs_free = lr - nb - dn.lhs_contracting_dims.len();
            let l = side(lr, &dn.lhs_batch_dims, &dn.lhs_contracting_dims, nb);
            let r = side(
                rr,
                &dn.rhs_batch_dims,
                &dn.rhs_contracting_dims,
                nb + lhs_free,
            );
            vec![((ops[0], 0), h.remap(&l)), ((ops[1], 0), h.remap(&r))]
        }
        // A split window dimension exchanges halos (forward), so every dimension maps.
        Opcode::ReduceWindow if ops.len() == 2 => one(0, (0..rank_of(0)).map(Some).collect()),
        Opcode::Convolution => conv_hints(instr, h, rank_of(0), rank_of(1))
            .map(|(l, r)| vec![((ops[0], 0), l), ((ops[1], 0), r)])
            .unwrap_or_default(),
        _ => crate::dims_map::data_of(comp, instr)
            .map(|data| {
                data.iter()
                    .map(|dt| ((ops[dt.operand], 0), h.remap(&dt.map)))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// What a convolution's input and kernel must be for its result to be tiled `h`: the
/// input's batch and spatial dimensions take the result's (a split spatial dimension then
/// exchanges halos), the kernel's output features the result's features (not for grouped
/// convolutions, whose features pair up by group).
fn conv_hints(instr: &Instruction, h: &Tiling, lr: usize, kr: usize) -> Option<(Tiling, Tiling)> {
    let dn = instr.conv_dimension_numbers()?;
    let mut l = vec![None; lr];
    let mut r = vec![None; kr];
    if instr.batch_group_count() == 1 {
        l[dn.input_batch_dimension as usize] = Some(dn.output_batch_dimension as usize);
    }
    for (&i, &o) in dn
        .input_spatial_dimensions
        .iter()
        .zip(&dn.output_spatial_dimensions)
    {
        l[i as usize] = Some(o as usize);
    }
    if instr.feature_group_count() == 1 && instr.batch_group_count() == 1 {
        r[dn.kernel_output_feature_dimension as usize] = Some(dn.output_feature_dimension as usize);
    }
    Some((h.remap(&l), h.remap(&r)))
}

/// True for opcodes the elementwise rules take (a bitcast-convert between widths changes
/// the rank, so it is not one).
pub(crate) fn is_elementwise(op: Opcode) -> bool {
    op.is_elementwise() && op != Opcode::BitcastConvert
}
