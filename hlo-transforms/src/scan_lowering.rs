//! Scan lowering: `scan(inputs..., inits...)` becomes a while loop, so that every backend
//! that runs while loops runs scans (the CPU and CUDA code generators have no scan op).
//!
//! The loop state is `(i, inputs..., carries..., stacked outputs...)`, the stacked outputs
//! starting as zeros. Step `i` reads position `p = i` (or `L - 1 - i` with
//! `is_reverse=true`) of every input with a `dynamic-slice` of size 1 along the scanned
//! dimension `d`, reshaped to drop `d`; a copy of the scan's body maps those slices and the
//! carries to `(outputs..., carries...)`; each output is reshaped to size 1 along `d` and
//! written at `p` with a `dynamic-update-slice`. After `L` steps the stacked outputs and
//! the final carries form the scan's result (one value when the body returns one value
//! that is not a tuple). The body is copied into the loop rather than called, so no call
//! remains for later passes to inline; a scan inside the body is lowered in turn.

use hlo::attrs::{AttrName, AttrValue, ComparisonDirection};
use hlo::ir::call_graph;
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{CompId, ComputationBuilder, InstrId, Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::pass::{Pass, PassError};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// The pass (`scan-lowering`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScanLowering;

impl Pass for ScanLowering {
    fn name(&self) -> &str {
        "scan-lowering"
    }

    fn description(&self) -> &str {
        "rewrites scans into while loops of dynamic-slice and dynamic-update-slice"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        // Lowering appends loop bodies, which may hold scans copied from a scan's body:
        // the bound is re-read so those are lowered too.
        let mut ci = 0;
        while ci < module.computations.len() {
            let ids: Vec<InstrId> = module.computations[ci]
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Scan)
                .map(|(id, _)| id)
                .collect();
            for id in ids {
                lower(module, ci, id, &mut names)?;
                changed = true;
            }
            ci += 1;
        }
        if changed {
            call_graph::sort_computations(module);
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

const PASS: &str = "scan-lowering";

fn unsupported(name: &str, why: &str) -> PassError {
    PassError::Unsupported {
        pass: PASS.to_string(),
        what: format!("scan `{name}`: {why}"),
    }
}

/// A scalar constant `v` of type `ty` (0 is valid for every array type).
fn scalar(ty: ElementType, v: i64) -> Option<Literal> {
    let mut d = ArrayData::new(ty)?;
    d.push_int(ty, i128::from(v)).ok()?;
    Some(Literal::Array(ArrayLiteral::new(Shape::scalar(ty), d)?))
}

/// What the rewrite needs of one scan.
struct Form {
    name: String,
    shape: Shape,
    body: CompId,
    d: usize,
    length: i64,
    reverse: bool,
    inputs: Vec<InstrId>,
    inits: Vec<InstrId>,
    /// Shapes of the inputs, the body's parameters (slices then carries), the stacked
    /// outputs and the carries.
    input_shapes: Vec<Shape>,
    params: Vec<Shape>,
    stacked: Vec<Shape>,
    carries: Vec<Shape>,
    /// Whether the body returns a tuple (else one value: the one output or the one carry).
    tuple_body: bool,
}

fn form(module: &Module, ci: usize, id: InstrId) -> Result<Form, PassError> {
    let comp = &module.computations[ci];
    let s = comp.instr(id);
    let name = s.name.clone();
    let body = s
        .to_apply()
        .ok_or_else(|| unsupported(&name, "no to_apply= body"))?;
    let d = s
        .scan_dimension()
        .and_then(|d| usize::try_from(d).ok())
        .ok_or_else(|| unsupported(&name, "needs dimensions={d}"))?;
    let ops = s.operands().to_vec();
    let c = usize::try_from(s.scan_num_carries())
        .ok()
        .filter(|&c| c < ops.len())
        .ok_or_else(|| unsupported(&name, "num_carries= out of range"))?;
    let (inputs, inits) = ops.split_at(ops.len() - c);
    let input_shapes: Vec<Shape> = inputs
        .iter()
        .map(|&o| (*comp.instr(o).shape).clone())
        .collect();
    let length = input_shapes[0]
        .dims()
        .get(d)
        .copied()
        .ok_or_else(|| unsupported(&name, "scan dimension out of range"))?;
    let callee = module.computation(body);
    let params: Vec<Shape> = callee
        .params
        .iter()
        .map(|&p| (*callee.instr(p).shape).clone())
        .collect();
    let result = (*callee.instr(callee.root).shape).clone();
    let tuple_body = result.is_tuple();
    let returned: Vec<Shape> = if tuple_body {
        result.tuple_shapes().to_vec()
    } else {
        vec![result]
    };
    if params.len() != ops.len() || returned.len() < c {
        return Err(unsupported(&name, "body does not match the operands"));
    }
    let n_out = returned.len() - c;
    let scan_parts: Vec<Shape> = if s.shape.is_tuple() {
        s.shape.tuple_shapes().to_vec()
    } else {
        vec![(*s.shape).clone()]
    };
    if scan_parts.len() != returned.len() {
        return Err(unsupported(&name, "result does not match the body"));
    }
    let stacked = scan_parts[..n_out].to_vec();
    let carries = inits
        .iter()
        .map(|&o| (*comp.instr(o).shape).clone())
        .collect();
    Ok(Form {
        name,
        shape: (*s.shape).clone(),
        body,
        d,
        length,
        reverse: s.scan_is_reverse(),
        inputs: inputs.to_vec(),
        inits: inits.to_vec(),
        input_shapes,
        params,
        stacked,
        carries,
        tuple_body,
    })
}

/// Builds instructions into a computation under construction.
struct B<'a> {
    b: ComputationBuilder,
    names: &'a mut NameGen,
}

impl B<'_> {
    fn add(&mut self, op: Opcode, shape: Shape, ops: Vec<InstrId>) -> InstrId {
        self.b.add(Instruction::new(
            self.names.fresh(op.as_str()),
            op,
            shape,
            ops,
        ))
    }
    fn attr(
        &mut self,
        op: Opcode,
        shape: Shape,
        ops: Vec<InstrId>,
        name: AttrName,
        v: AttrValue,
    ) -> InstrId {
        let i = Instruction::new(self.names.fresh(op.as_str()), op, shape, ops).with_attr(name, v);
        self.b.add(i)
    }
    fn constant(&mut self, ty: ElementType, v: i64, scan: &str) -> Result<InstrId, PassError> {
        let lit = scalar(ty, v).ok_or_else(|| unsupported(scan, "no constant of its type"))?;
        Ok(self.b.add(Instruction::constant(
            self.names.fresh("constant"),
            Shape::scalar(ty),
            lit,
        )))
    }
    fn gte(&mut self, t: InstrId, shape: Shape, k: usize) -> InstrId {
        self.attr(
            Opcode::GetTupleElement,
            shape,
            vec![t],
            AttrName::Index,
            AttrValue::Int(k as i64),
        )
    }
}

/// `shape` with size 1 inserted (or set) at dimension `d`.
fn with_unit(shape: &Shape, d: usize, insert: bool) -> Result<Shape, PassError> {
    let ty = shape
        .element_type()
        .ok_or_else(|| unsupported("", "a non-array scanned value"))?;
    let mut dims = shape.dims().to_vec();
    if insert {
        dims.insert(d, 1);
    } else {
        dims[d] = 1;
    }
    Ok(Shape::array(ty, dims))
}

fn lower(
    module: &mut Module,
    ci: usize,
    id: InstrId,
    names: &mut NameGen,
) -> Result<(), PassError> {
    let f = form(module, ci, id)?;
    if f.length == 0 {
        return lower_empty(module, ci, id, &f, names);
    }
    let s32 = ElementType::S32;
    let n_in = f.inputs.len();
    let c = f.carries.len();
    let n_out = f.stacked.len();
    let length = i32::try_from(f.length)
        .map(i64::from)
        .map_err(|_| unsupported(&f.name, "longer than 2^31 steps"))?;
    // State: (i, inputs..., carries..., stacked outputs...).
    let mut parts = vec![Shape::scalar(s32)];
    parts.extend(f.input_shapes.iter().cloned());
    parts.extend(f.carries.iter().cloned());
    parts.extend(f.stacked.iter().cloned());
    let state = Shape::tuple(parts.clone());

    // Condition: i < L.
    let mut cb = B {
        b: ComputationBuilder::new(names.fresh("scan_condition")),
        names,
    };
    let p = cb.b.add(Instruction::parameter(
        cb.names.fresh("state"),
        0,
        state.clone(),
    ));
    let i = cb.gte(p, Shape::scalar(s32), 0);
    let n = cb.constant(s32, length, &f.name)?;
    let lt = cb.attr(
        Opcode::Compare,
        Shape::scalar(ElementType::Pred),
        vec![i, n],
        AttrName::Direction,
        AttrValue::ComparisonDirection(ComparisonDirection::Lt),
    );
    let cond = cb.b.build(Some(lt)).map_err(|e| PassError::ir(PASS, e))?;
    let names = cb.names;

    // Body, first part: the slices at position p.
    let mut bb = B {
        b: ComputationBuilder::new(names.fresh("scan_body")),
        names,
    };
    let p = bb.b.add(Instruction::parameter(
        bb.names.fresh("state"),
        0,
        state.clone(),
    ));
    let vals: Vec<InstrId> = (0..parts.len())
        .map(|k| bb.gte(p, parts[k].clone(), k))
        .collect();
    let i = vals[0];
    let pos = if f.reverse {
        let last = bb.constant(s32, length - 1, &f.name)?;
        bb.add(Opcode::Subtract, Shape::scalar(s32), vec![last, i])
    } else {
        i
    };
    let zero = bb.constant(s32, 0, &f.name)?;
    let mut args = Vec::with_capacity(n_in + c);
    for (k, sh) in f.input_shapes.iter().enumerate() {
        let mut ops = vec![vals[1 + k]];
        ops.extend((0..sh.dims().len()).map(|j| if j == f.d { pos } else { zero }));
        let one = with_unit(sh, f.d, false)?;
        let sizes = one.dims().to_vec();
        let ds = bb.attr(
            Opcode::DynamicSlice,
            one,
            ops,
            AttrName::DynamicSliceSizes,
            AttrValue::IntList(sizes),
        );
        args.push(bb.add(Opcode::Reshape, f.params[k].clone(), vec![ds]));
    }
    args.extend(&vals[1 + n_in..1 + n_in + c]);
    // A placeholder root; the real one is set once the body is copied in.
    let mut body = bb.b.build(Some(p)).map_err(|e| PassError::ir(PASS, e))?;
    let names = bb.names;

    // Body, second part: a copy of the scan's body, then the writes.
    let callee = module.computation(f.body);
    let root = edit::clone_body_into(names, callee, &mut body, &args);
    let returned: Vec<InstrId> = if f.tuple_body {
        let shapes = callee.instr(callee.root).shape.tuple_shapes().to_vec();
        shapes
            .into_iter()
            .enumerate()
            .map(|(k, sh)| {
                let g = Instruction::new(
                    names.fresh("get-tuple-element"),
                    Opcode::GetTupleElement,
                    sh,
                    vec![root],
                )
                .with_attr(AttrName::Index, AttrValue::Int(k as i64));
                edit::add(&mut body, g)
            })
            .collect()
    } else {
        vec![root]
    };
    let mut root_ops = Vec::with_capacity(parts.len());
    let one = edit::add(
        &mut body,
        Instruction::constant(
            names.fresh("constant"),
            Shape::scalar(s32),
            scalar(s32, 1).ok_or_else(|| unsupported(&f.name, "no s32 constant"))?,
        ),
    );
    root_ops.push(edit::add(
        &mut body,
        Instruction::new(
            names.fresh("add"),
            Opcode::Add,
            Shape::scalar(s32),
            vec![i, one],
        ),
    ));
    root_ops.extend(&vals[1..1 + n_in]);
    root_ops.extend(&returned[n_out..]);
    for (k, sh) in f.stacked.iter().enumerate() {
        let out = returned[k];
        let out_shape = (*body.instr(out).shape).clone();
        let unit = with_unit(&out_shape, f.d, true)?;
        let r = edit::add(
            &mut body,
            Instruction::new(names.fresh("reshape"), Opcode::Reshape, unit, vec![out]),
        );
        let mut ops = vec![vals[1 + n_in + c + k], r];
        ops.extend((0..sh.dims().len()).map(|j| if j == f.d { pos } else { zero }));
        root_ops.push(edit::add(
            &mut body,
            Instruction::new(
                names.fresh("dynamic-update-slice"),
                Opcode::DynamicUpdateSlice,
                sh.clone(),
                ops,
            ),
        ));
    }
    let t = edit::add(
        &mut body,
        Instruction::new(names.fresh("tuple"), Opcode::Tuple, state.clone(), root_ops),
    );
    body.set_root(t).map_err(|e| PassError::ir(PASS, e))?;
    edit::repair_order(&mut body);
    let cond_id = module.add_computation(cond);
    let body_id = module.add_computation(body);

    // The loop in the scan's computation: zeros for the stacked outputs, then the result.
    let comp = &mut module.computations[ci];
    let mut init_ops = Vec::with_capacity(parts.len());
    init_ops.push(edit::add(
        comp,
        Instruction::constant(
            names.fresh("constant"),
            Shape::scalar(s32),
            scalar(s32, 0).ok_or_else(|| unsupported(&f.name, "no s32 constant"))?,
        ),
    ));
    init_ops.extend(&f.inputs);
    init_ops.extend(&f.inits);
    init_ops.extend(zeros(comp, &f, names)?);
    let init = edit::add(
        comp,
        Instruction::new(names.fresh("tuple"), Opcode::Tuple, state.clone(), init_ops),
    );
    let wl = edit::add(
        comp,
        Instruction::new(names.fresh(&f.name), Opcode::While, state, vec![init])
            .with_attr(AttrName::Condition, AttrValue::Computation(cond_id))
            .with_attr(AttrName::Body, AttrValue::Computation(body_id)),
    );
    // Stacked outputs first, then the final carries, as the scan returns them.
    let picks: Vec<usize> = (0..n_out)
        .map(|k| 1 + n_in + c + k)
        .chain((0..c).map(|j| 1 + n_in + j))
        .collect();
    let results: Vec<InstrId> = picks
        .iter()
        .map(|&k| {
            let g = Instruction::new(
                names.fresh("get-tuple-element"),
                Opcode::GetTupleElement,
                parts[k].clone(),
                vec![wl],
            )
            .with_attr(AttrName::Index, AttrValue::Int(k as i64));
            edit::add(comp, g)
        })
        .collect();
    replace(comp, id, &f, results, names);
    Ok(())
}

/// Zeros of every stacked output's shape, added to `comp`.
fn zeros(
    comp: &mut hlo::ir::Computation,
    f: &Form,
    names: &mut NameGen,
) -> Result<Vec<InstrId>, PassError> {
    let mut out = Vec::with_capacity(f.stacked.len());
    for sh in &f.stacked {
        let ty = sh
            .element_type()
            .ok_or_else(|| unsupported(&f.name, "a non-array output"))?;
        let z = scalar(ty, 0).ok_or_else(|| unsupported(&f.name, "no zero of its type"))?;
        let z = edit::add(
            comp,
            Instruction::constant(names.fresh("constant"), Shape::scalar(ty), z),
        );
        out.push(edit::add(
            comp,
            Instruction::new(
                names.fresh("broadcast"),
                Opcode::Broadcast,
                sh.clone(),
                vec![z],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(Vec::new())),
        ));
    }
    Ok(out)
}

/// Replaces the scan by `results` (stacked outputs, then final carries): their tuple, or
/// the one value when the scan returns one.
fn replace(
    comp: &mut hlo::ir::Computation,
    id: InstrId,
    f: &Form,
    results: Vec<InstrId>,
    names: &mut NameGen,
) {
    let res = if f.shape.is_tuple() {
        edit::add(
            comp,
            Instruction::new(
                names.fresh(&f.name),
                Opcode::Tuple,
                f.shape.clone(),
                results,
            ),
        )
    } else {
        results[0]
    };
    edit::replace_uses(comp, id, res);
    edit::remove_instructions(comp, &std::iter::once(id).collect());
    edit::repair_order(comp);
}

/// A scan of length 0 runs no step: its stacked outputs are empty and its carries the
/// initial ones (no loop, whose slices of size 1 would not fit the empty inputs).
fn lower_empty(
    module: &mut Module,
    ci: usize,
    id: InstrId,
    f: &Form,
    names: &mut NameGen,
) -> Result<(), PassError> {
    let comp = &mut module.computations[ci];
    let mut results = zeros(comp, f, names)?;
    results.extend(&f.inits);
    replace(comp, id, f, results, names);
    Ok(())
}
