//! The GPU launch `hloc indexing --coalescing` counts an instruction's loads through: the
//! same emitter choice the GPU code generator makes. A reduce (alone, or a fusion's root or
//! hero of an elementwise epilogue) that a reduction emitter takes gets the row or column
//! emitter ([`reduction_of`]), whose thread map goes to the reduce's input; a transpose or
//! a layout-changing copy (or a fusion with one as its hero) the transpose emitter
//! ([`transpose_of`]), whose prologue reads through its read map and epilogue through
//! its write map; every other instruction the loop emitter, whose thread map goes to the
//! output.

use affine::{Expr, IndexingMap, Var, VarKind};
use device::Device;
use fusion::gpu_launch::{loop_launch, Launch};
use fusion::gpu_reduction::reduction_of;
use fusion::gpu_transpose::transpose_of;
use hlo::{Computation, InstrId, Module, Opcode, Shape};
use indexing::IndexedMap;

/// A launch, and for a reduction emitter how the reduce's input index is made of an
/// operand map's variables.
pub(crate) struct CountedLaunch {
    /// The emitter's launch.
    pub launch: Launch,
    /// For a reduction: the input position of each output dimension, of each reduced
    /// dimension (the reduce's range variables, in input order), and the input's sizes.
    reduce: Option<(Vec<usize>, Vec<usize>, Vec<i64>)>,
    /// For a transpose: its read map and the operands its hero's prologue reads (through
    /// that map; the others are read by the epilogue through the write map).
    pub transpose_reads: Option<(IndexingMap, Vec<usize>)>,
}

impl CountedLaunch {
    /// The launch of instruction `id` (of computation `comp` of `module`) computing
    /// output `shape`.
    pub(crate) fn choose(
        module: &Module,
        comp: &Computation,
        id: InstrId,
        shape: &Shape,
        device: &Device,
    ) -> Result<CountedLaunch, affine::MapError> {
        if let Some(c) = reduction(module, comp, id, device)? {
            return Ok(c);
        }
        let m2m = shape
            .layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_default();
        if let Some(c) = transpose(module, comp, id, &m2m) {
            return Ok(c);
        }
        let bytes = shape
            .element_type()
            .and_then(|t| t.byte_width())
            .map_or(1, i64::from);
        Ok(CountedLaunch {
            launch: loop_launch(shape.dims(), &m2m, bytes, device)?,
            reduce: None,
            transpose_reads: None,
        })
    }

    /// The thread map operand `operand` is read through: the transpose's read map for
    /// the operands its prologue reads, the launch's thread map otherwise.
    pub(crate) fn thread_map_for(&self, operand: usize) -> &IndexingMap {
        match &self.transpose_reads {
            Some((read, prologue)) if prologue.contains(&operand) => read,
            _ => &self.launch.thread_map,
        }
    }

    /// Operand access `map` (output to operand) as a map from the index the thread map
    /// gives: itself for the loop emitter; for a reduction, from the reduce's input index,
    /// its output dimensions and its first range variables (the reduced dimensions)
    /// becoming the input's dimensions. `None` when the map has range variables, but fewer
    /// than the reduce reduces.
    pub(crate) fn operand_map(&self, map: &IndexedMap) -> Option<IndexedMap> {
        let Some((kept, reduced, sizes)) = &self.reduce else {
            return Some(map.clone());
        };
        let m = &map.map;
        // A map without range variables (the initial value, a per-row operand of a
        // fusion) reads the same element along the reduced dimensions.
        let reduced_here = if m.ranges().is_empty() {
            &[][..]
        } else {
            &reduced[..]
        };
        if m.dims().len() != kept.len() || m.ranges().len() < reduced_here.len() {
            return None;
        }
        let rank = kept.len() + reduced.len();
        let mut dims = vec![affine::Interval::new(0, 0); rank];
        for (i, &p) in kept.iter().enumerate() {
            dims[p] = m.dims()[i];
        }
        for (j, &p) in reduced.iter().enumerate() {
            dims[p] = m
                .ranges()
                .get(j)
                .copied()
                .unwrap_or(affine::Interval::new(0, sizes[p] - 1));
        }
        let r = reduced_here.len();
        let mut bind = |v: Var| match v.kind {
            VarKind::Dim => kept.get(v.index as usize).map(|&p| Expr::dim(p as u32)),
            VarKind::Range => Some(match reduced_here.get(v.index as usize) {
                Some(&p) => Expr::dim(p as u32),
                None => Expr::range(v.index - r as u32),
            }),
            VarKind::Runtime => None,
        };
        // The map and its runtime variables' provenance maps share the variables: both
        // are rewritten alike.
        let mut rewrite = |x: &IndexingMap| {
            let results = x
                .results()
                .iter()
                .map(|e| e.substitute(&mut bind))
                .collect();
            let constraints = x
                .constraints()
                .iter()
                .map(|c| (c.expr.substitute(&mut bind), c.interval))
                .collect();
            IndexingMap::new(
                dims.clone(),
                x.ranges().get(r..).unwrap_or_default().to_vec(),
                x.runtimes().to_vec(),
                results,
                constraints,
            )
            .ok()
        };
        let out = rewrite(m)?;
        let runtime = map
            .runtime
            .iter()
            .map(|rt| {
                Some(indexing::RuntimeVar {
                    map: rewrite(&rt.map)?,
                    ..rt.clone()
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(IndexedMap { map: out, runtime })
    }
}

/// The reduction emitter's launch of `instr` (of computation `comp`), or of its fusion's
/// root, where the code generator gives it one ([`reduction_of`]).
fn reduction(
    module: &Module,
    comp: &Computation,
    id: InstrId,
    device: &Device,
) -> Result<Option<CountedLaunch>, affine::MapError> {
    let instr = comp.instr(id);
    let (body, root, fused) = match (instr.opcode(), instr.calls()) {
        (Opcode::Fusion, Some(fc)) => {
            let c = module.computation(fc);
            (c, c.root(), true)
        }
        _ => (comp, id, false),
    };
    let Some((hero, launch)) = reduction_of(module, body, root, fused, device) else {
        return Ok(None);
    };
    let reduce = body.instr(hero);
    let (Some(input), Some(reduced)) = (
        body.instr(reduce.operands()[0]).shape().as_array(),
        reduce.dimensions(),
    ) else {
        return Ok(None);
    };
    let (red, kept): (Vec<usize>, Vec<usize>) =
        (0..input.dims().len()).partition(|&p| reduced.contains(&(p as i64)));
    Ok(Some(CountedLaunch {
        launch,
        reduce: Some((kept, red, input.dims().to_vec())),
        transpose_reads: None,
    }))
}

/// The transpose emitter's launch of `instr` (of computation `comp`), or of its fusion's
/// root, where the code generator gives it one ([`transpose_of`]), with the operands its
/// hero's prologue reads.
fn transpose(
    module: &Module,
    comp: &Computation,
    id: InstrId,
    out_minor_to_major: &[i64],
) -> Option<CountedLaunch> {
    let instr = comp.instr(id);
    let (body, root, fused) = match (instr.opcode(), instr.calls()) {
        (Opcode::Fusion, Some(fc)) => {
            let c = module.computation(fc);
            (c, c.root(), true)
        }
        _ => (comp, id, false),
    };
    let (hero, t) = transpose_of(body, root, fused, out_minor_to_major)?;
    let prologue = if fused {
        parameters_under(body, hero)
    } else {
        vec![0]
    };
    Some(CountedLaunch {
        launch: t.launch,
        reduce: None,
        transpose_reads: Some((t.read_map, prologue)),
    })
}

/// The parameter numbers of computation `c` that instruction `id` reads, directly or not.
fn parameters_under(c: &Computation, id: InstrId) -> Vec<usize> {
    let mut stack = vec![id];
    let mut seen = std::collections::HashSet::new();
    let mut params = Vec::new();
    while let Some(i) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        let instr = c.instr(i);
        if let (Opcode::Parameter, Some(n)) = (instr.opcode(), instr.parameter_number()) {
            params.push(n as usize);
        }
        stack.extend(instr.operands().iter().copied());
    }
    params.sort_unstable();
    params
}
