//! Collectives and device ids as program steps ([`Thunk::Collective`]): the groups resolved
//! on the module's device grid, the reducer recognized, operands and results as arrays in
//! one layout (the backend moves bytes and packs pieces by that layout). An async pair's
//! start posts, its done waits and writes the results, which live from the start (their
//! buffers are the start's) so that nothing the schedule puts between them reuses them.

use hlo::ir::reducer;
use hlo::{CompId, InstrId, Opcode};

use super::{leaf_shapes, spec_of, State};
use crate::collective::{device_groups, permute_pairs, Collective, CollectiveKind, Grid, Phase};
use crate::{ArraySpec, BufferId, Thunk};
use codegen::CodegenError;

impl State<'_> {
    /// Whether `op` is a step [`State::collective`] builds.
    pub(super) fn is_collective_step(&self, op: Opcode) -> bool {
        is_collective_opcode(op)
    }

    /// Whether fusion `id` computes a replica or partition id inside its kernel (a kernel
    /// shared by every device cannot know which device runs it).
    pub(super) fn fuses_device_id(&self, comp: CompId, id: InstrId) -> bool {
        fuses_device_id(self.module, comp, id)
    }
}

fn is_collective_opcode(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::AllReduce
            | Opcode::AllReduceStart
            | Opcode::AllReduceDone
            | Opcode::AllGather
            | Opcode::AllGatherStart
            | Opcode::AllGatherDone
            | Opcode::ReduceScatter
            | Opcode::AllToAll
            | Opcode::CollectivePermute
            | Opcode::CollectivePermuteStart
            | Opcode::CollectivePermuteDone
            | Opcode::CollectiveBroadcast
            | Opcode::ReplicaId
            | Opcode::PartitionId
    )
}

fn fuses_device_id(module: &hlo::Module, comp: CompId, id: InstrId) -> bool {
    let mut todo: Vec<CompId> = module
        .computation(comp)
        .instr(id)
        .calls()
        .into_iter()
        .collect();
    let mut seen = Vec::new();
    while let Some(c) = todo.pop() {
        if seen.contains(&c) {
            continue;
        }
        seen.push(c);
        for (_, i) in module.computation(c).instructions() {
            if matches!(i.opcode(), Opcode::ReplicaId | Opcode::PartitionId) {
                return true;
            }
            todo.extend(i.called_computations());
        }
    }
    false
}

impl State<'_> {
    /// The step of collective (or device id) `id`.
    pub(super) fn collective(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let c = module.computation(comp);
        let instr = c.instr(id);
        let name = instr.name().to_string();
        let t = self.pos(out);
        if matches!(
            instr.opcode(),
            Opcode::AllReduceDone | Opcode::AllGatherDone | Opcode::CollectivePermuteDone
        ) {
            return self.done(comp, id, out);
        }
        let kind = self.kind(comp, id)?;
        let grid = Grid::of_module(module);
        let groups = match &kind {
            CollectiveKind::ReplicaId | CollectiveKind::PartitionId => Vec::new(),
            CollectiveKind::CollectivePermute { .. } => permute_pairs(instr, grid)?.0,
            _ => device_groups(instr, grid)?,
        };
        let mut inputs = Vec::new();
        for &op in instr.operands() {
            let leaves = self.leaves(comp, op)?;
            for (&b, s) in leaves.iter().zip(leaf_shapes(c.instr(op).shape())) {
                self.use_at(b, t);
                inputs.push(spec_of(&s, b, &name)?);
            }
        }
        // The results: the whole shape, or the part after the operands of a start.
        let shapes = leaf_shapes(instr.shape());
        let results: Vec<_> = match instr.opcode() {
            Opcode::AllGatherStart | Opcode::CollectivePermuteStart => {
                shapes[inputs.len()..].to_vec()
            }
            _ => shapes.clone(),
        };
        let n_results = match instr.opcode() {
            Opcode::CollectivePermuteStart => 1,
            _ => results.len(),
        };
        let mut outputs = Vec::with_capacity(results.len());
        for (k, s) in results.iter().enumerate() {
            let nm = match results.len() {
                1 => name.clone(),
                _ => format!("{name}.{k}"),
            };
            let bytes = super::bytes_of(s, &name)?;
            let b = self.temp(&nm, bytes, t);
            outputs.push(spec_of(s, b, &name)?);
        }
        check_layouts(&kind, &inputs, &outputs[..n_results], &name)?;
        let (phase, written) = match instr.opcode() {
            Opcode::AllReduceStart | Opcode::AllGatherStart | Opcode::CollectivePermuteStart => {
                (Phase::Start(outputs[0].buffer), Vec::new())
            }
            _ => (Phase::Sync, outputs[..n_results].to_vec()),
        };
        let slots: Vec<BufferId> = match instr.opcode() {
            Opcode::AllGatherStart | Opcode::CollectivePermuteStart => {
                inputs.iter().chain(&outputs).map(|a| a.buffer).collect()
            }
            _ => outputs.iter().map(|a| a.buffer).collect(),
        };
        let step = Collective {
            name,
            kind,
            groups,
            phase,
        };
        out.push(Thunk::Collective {
            step: Box::new(step),
            inputs,
            outputs: written,
        });
        self.slots.insert((comp, id), slots);
        Ok(())
    }

    /// What collective `id` (not a done) computes.
    fn kind(&self, comp: CompId, id: InstrId) -> Result<CollectiveKind, CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let name = instr.name();
        let op = instr.opcode();
        let unsupported = |detail: &str| CodegenError::unsupported(op.as_str(), name, detail);
        let reducer = || {
            let to_apply = instr
                .to_apply()
                .ok_or_else(|| unsupported("no to_apply="))?;
            reducer::classify(module, to_apply).ok_or_else(|| {
                unsupported("a reducer that is not one associative op of its two parameters")
            })
        };
        let dim = || match instr.dimensions() {
            Some([d]) if *d >= 0 => Ok(*d as usize),
            _ => Err(unsupported("expects dimensions={d}")),
        };
        Ok(match op {
            Opcode::AllReduce | Opcode::AllReduceStart => CollectiveKind::AllReduce {
                reducer: reducer()?,
            },
            Opcode::AllGather | Opcode::AllGatherStart => CollectiveKind::AllGather { dim: dim()? },
            Opcode::ReduceScatter => CollectiveKind::ReduceScatter {
                dim: dim()?,
                reducer: reducer()?,
            },
            Opcode::AllToAll => CollectiveKind::AllToAll {
                split_dim: match instr.dimensions() {
                    None => None,
                    Some(_) => Some(dim()?),
                },
            },
            Opcode::CollectivePermute | Opcode::CollectivePermuteStart => {
                if instr.operands().len() != 1 {
                    return Err(unsupported("in-place (dynamic-slice) collective-permute"));
                }
                let grid = Grid::of_module(module);
                CollectiveKind::CollectivePermute {
                    pairs: permute_pairs(instr, grid)?.1,
                }
            }
            Opcode::CollectiveBroadcast => CollectiveKind::CollectiveBroadcast,
            Opcode::ReplicaId => CollectiveKind::ReplicaId,
            Opcode::PartitionId => CollectiveKind::PartitionId,
            _ => return Err(unsupported("not a collective")),
        })
    }

    /// The done of an async pair: waits for its start's exchange and writes the results
    /// into the buffers the start reserved.
    fn done(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let c = module.computation(comp);
        let instr = c.instr(id);
        let name = instr.name().to_string();
        let t = self.pos(out);
        let start_id = instr.operands()[0];
        let start = c.instr(start_id);
        let kind = self.kind(comp, start_id)?;
        let leaves = self.leaves(comp, start_id)?;
        // The start's slots: its operands' leaves first where its shape holds them.
        let skip = match start.opcode() {
            Opcode::AllGatherStart | Opcode::CollectivePermuteStart => start
                .operands()
                .iter()
                .map(|&o| leaf_shapes(c.instr(o).shape()).len())
                .sum(),
            _ => 0,
        };
        let shapes = leaf_shapes(instr.shape());
        let bufs = leaves.get(skip..skip + shapes.len()).ok_or_else(|| {
            CodegenError::Internal(format!("`{name}`: its start has no such results"))
        })?;
        // The operands stay untouched until the done (a backend may send from them).
        for &op in start.operands() {
            for b in self.leaves(comp, op)? {
                self.use_at(b, t);
            }
        }
        let mut outputs: Vec<ArraySpec> = Vec::with_capacity(shapes.len());
        for (&b, s) in bufs.iter().zip(&shapes) {
            self.use_at(b, t);
            outputs.push(spec_of(s, b, &name)?);
        }
        let pair = leaves
            .get(skip)
            .copied()
            .ok_or_else(|| CodegenError::Internal(format!("`{name}`: start without results")))?;
        let step = Collective {
            name,
            kind,
            groups: Vec::new(),
            phase: Phase::Done(pair),
        };
        out.push(Thunk::Collective {
            step: Box::new(step),
            inputs: Vec::new(),
            outputs,
        });
        self.slots.insert((comp, id), bufs.to_vec());
        Ok(())
    }
}

/// Operands and results must share one layout (and a type): the backend exchanges bytes
/// and cuts pieces along a dimension by that layout.
fn check_layouts(
    kind: &CollectiveKind,
    inputs: &[ArraySpec],
    outputs: &[ArraySpec],
    name: &str,
) -> Result<(), CodegenError> {
    let what = kind.name();
    let unsupported = |d: String| CodegenError::unsupported(what, name, d);
    if matches!(
        kind,
        CollectiveKind::ReplicaId | CollectiveKind::PartitionId
    ) {
        return Ok(());
    }
    let per_operand = !matches!(kind, CollectiveKind::AllToAll { split_dim: None });
    if per_operand && inputs.len() != outputs.len() {
        return Err(unsupported(format!(
            "{} operands for {} results",
            inputs.len(),
            outputs.len()
        )));
    }
    for (a, b) in inputs.iter().zip(outputs) {
        if a.minor_to_major != b.minor_to_major || a.ty != b.ty {
            return Err(unsupported(format!(
                "operand layout {:?} and result layout {:?} differ",
                a.minor_to_major, b.minor_to_major
            )));
        }
    }
    if !per_operand {
        let first = inputs.first().map(|a| (&a.dims, &a.minor_to_major, a.ty));
        if inputs
            .iter()
            .chain(outputs)
            .any(|a| Some((&a.dims, &a.minor_to_major, a.ty)) != first)
        {
            return Err(unsupported(
                "a tuple all-to-all of operands with different shapes".into(),
            ));
        }
    }
    Ok(())
}
