//! From an HLO module to a [`Program`]: one kernel per instruction (fusions included) in
//! each computation's def-before-use order, parameters and constants as fixed allocations,
//! tuples, get-tuple-element and bitcasts as aliases (no code), `while` and `conditional`
//! as nested thunk sequences; then buffer assignment ([`super::memory::assign`]): every
//! temporary, those of nested sequences and loop state included, in the temp block at an
//! offset, outputs apart.

use std::collections::HashMap;

use hlo::{AttrName, AttrValue, CompId, InstrId, Module, Opcode, Shape};

use super::{
    Allocation, AllocationKind, ArraySpec, Buffer, BufferId, FftKind, LibraryCall, Program, Thunk,
};
use codegen::emit::{emit_instruction, BufferSource};
use codegen::kir::ScalarType;
use codegen::CodegenError;

mod buffers;
mod collectives;
mod custom_calls;
mod gpu_merge_sort;
mod gpu_scatter_sorted;
mod gpu_select_scatter;
mod in_place;
mod library;

use custom_calls::library_target;

struct State<'m> {
    module: &'m Module,
    /// What the kernels are emitted for.
    target: &'m codegen::EmitTarget,
    buffers: Vec<Buffer>,
    allocations: Vec<Allocation>,
    kernels: Vec<codegen::kir::Kernel>,
    /// The buffers of each instruction's leaves (one for an array).
    slots: HashMap<(CompId, InstrId), Vec<BufferId>>,
    /// Nesting depth inside while/conditional sequences.
    depth: usize,
    /// Position in the entry's sequence of the thunk being built (liveness is tracked at
    /// that level: anything a nested sequence reads lives until its thunk ends).
    top: usize,
    /// The entry computation's schedule (the lowest-peak order,
    /// [`super::memory::schedule`]).
    entry_order: Vec<InstrId>,
    /// Kernel outputs that may be written over an operand's buffer
    /// ([`super::memory::in_place`]), kept where the operand dies at the kernel.
    in_place: Vec<super::memory::in_place::Candidate>,
    /// The instructions built so far in the current sequence of each computation (a
    /// computation called twice is built twice): their thunks run before the next one's.
    built: std::collections::HashSet<(CompId, InstrId)>,
}

fn spec_of(shape: &Shape, buffer: BufferId, what: &str) -> Result<ArraySpec, CodegenError> {
    let arr = shape
        .as_array()
        .ok_or_else(|| CodegenError::unsupported("tuple", what, "nested tuples"))?;
    let et = arr.element_type();
    let ty = ScalarType::from_element(et).ok_or_else(|| {
        CodegenError::unsupported(et.as_str(), what, format!("element type {}", et.as_str()))
    })?;
    let rank = arr.dims().len();
    let minor_to_major = arr
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_else(|| (0..rank as i64).rev().collect());
    Ok(ArraySpec {
        buffer,
        ty,
        element_type: et,
        dims: arr.dims().to_vec(),
        minor_to_major,
    })
}

fn bytes_of(shape: &Shape, what: &str) -> Result<u64, CodegenError> {
    let spec = spec_of(shape, 0, what)?;
    let n: i64 = spec.dims.iter().product();
    Ok(n.max(0) as u64 * u64::from(spec.ty.byte_width()))
}

/// The array leaves of a shape in flattened tuple order (itself, or every array of a
/// tuple, nested tuples included: a tuple value is the list of its leaves' buffers).
fn leaf_shapes(shape: &Shape) -> Vec<Shape> {
    fn push(shape: &Shape, out: &mut Vec<Shape>) {
        match shape.is_tuple() {
            true => shape.tuple_shapes().iter().for_each(|s| push(s, out)),
            false => out.push(shape.clone()),
        }
    }
    let mut out = Vec::new();
    push(shape, &mut out);
    out
}

/// A C identifier for kernel `i` of instruction `name`.
fn kernel_name(i: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("hloc_k{i}_{clean}")
}

impl State<'_> {
    /// The thunks of computation `comp` (appended to `out`) and its root's leaves.
    /// `params[n]` are the leaves of parameter `n` (`None`: the entry, whose parameters
    /// are the caller's arguments).
    fn sequence(
        &mut self,
        comp: CompId,
        params: Option<&[Vec<BufferId>]>,
        out: &mut Vec<Thunk>,
    ) -> Result<Vec<BufferId>, CodegenError> {
        let c = self.module.computation(comp);
        let order = match params {
            None => std::borrow::Cow::Owned(std::mem::take(&mut self.entry_order)),
            Some(_) => c.def_before_use_order(),
        };
        self.built.retain(|&(cc, _)| cc != comp);
        for &id in order.iter() {
            self.instruction(comp, id, params, out)?;
            self.built.insert((comp, id));
        }
        self.leaves(comp, c.root())
    }

    fn instruction(
        &mut self,
        comp: CompId,
        id: InstrId,
        params: Option<&[Vec<BufferId>]>,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let c = module.computation(comp);
        let instr = c.instr(id);
        let name = instr.name();
        match instr.opcode() {
            Opcode::Parameter => {
                let n = instr.parameter_number().unwrap_or(0).max(0) as usize;
                let leaves = match params {
                    Some(p) => p.get(n).cloned().ok_or_else(|| {
                        CodegenError::Internal(format!("`{name}`: no argument {n}"))
                    })?,
                    None => {
                        let bytes = bytes_of(instr.shape(), name)?;
                        vec![self.fixed(name, AllocationKind::Parameter(n), bytes)]
                    }
                };
                self.slots.insert((comp, id), leaves);
            }
            Opcode::Constant => {
                // Allocated when a buffer is first needed (see `leaves`).
                self.constant_literal(comp, id)?;
            }
            Opcode::Tuple => {
                // A nested tuple's leaves follow one another in flattened order.
                let mut leaves = Vec::new();
                for &op in instr.operands() {
                    leaves.extend(self.leaves(comp, op)?);
                }
                self.slots.insert((comp, id), leaves);
            }
            Opcode::GetTupleElement => {
                let op = instr.operands()[0];
                let k = instr.tuple_index().unwrap_or(0).max(0) as usize;
                // Element k's leaves: after those of the elements before it.
                let elements = c.instr(op).shape().tuple_shapes();
                let from: usize = elements.iter().take(k).map(|s| leaf_shapes(s).len()).sum();
                let n = elements.get(k).map_or(1, |s| leaf_shapes(s).len());
                let leaves = self.leaves(comp, op)?;
                let b = leaves.get(from..from + n).ok_or_else(|| {
                    CodegenError::Internal(format!("`{name}`: no tuple element {k}"))
                })?;
                self.slots.insert((comp, id), b.to_vec());
            }
            Opcode::OptimizationBarrier => {
                let leaves = self.leaves(comp, instr.operands()[0])?;
                self.slots.insert((comp, id), leaves);
            }
            Opcode::BitcastConvert if self.is_width_changing_reinterpretation(comp, id)? => {
                let b = self.single(comp, instr.operands()[0])?;
                self.slots.insert((comp, id), vec![b]);
            }
            Opcode::Bitcast
                if bytes_of(instr.shape(), name)?
                    == bytes_of(c.instr(instr.operands()[0]).shape(), name)? =>
            {
                let b = self.single(comp, instr.operands()[0])?;
                self.slots.insert((comp, id), vec![b]);
            }
            Opcode::Reshape if self.is_layout_preserving_reshape(comp, id) => {
                let b = self.single(comp, instr.operands()[0])?;
                self.slots.insert((comp, id), vec![b]);
            }
            // In place only where the base's bytes are the result's (the same layout): the
            // base is copied byte for byte when it lives on.
            Opcode::DynamicUpdateSlice
                if c.instr(instr.operands()[1])
                    .shape()
                    .element_count()
                    .is_ok_and(|n| n > 0)
                    && super::boundary_layouts::same_layout(
                        c.instr(instr.operands()[0]).shape(),
                        instr.shape(),
                    ) =>
            {
                self.dus_in_place(comp, id, out)?
            }
            Opcode::Scatter
                if instr.operands().len() == 3
                    && c.instr(instr.operands()[2])
                        .shape()
                        .element_count()
                        .is_ok_and(|n| n > 0) =>
            {
                // The generated kernel where it supports the scatter's form, else the
                // library's general routine.
                let operands = instr.operands().to_vec();
                if !self.sorted_or_scatter_kernel((comp, id), (comp, id), &operands, out)? {
                    let call = self.library_call(comp, id)?;
                    self.library(comp, id, call, out)?
                }
            }
            Opcode::Dot if super::gemm::gemm_shape(module, comp, id).is_some() => {
                self.gemm(comp, id, out)?
            }
            Opcode::While => self.while_loop(comp, id, out)?,
            Opcode::Conditional => self.conditional(comp, id, out)?,
            // On a GPU, a bitonic sort in shared memory where the rows fit, merge passes
            // in global memory for a longer sort's, else the library's routine.
            Opcode::Sort
                if codegen::emit::gpu_merge_sort_passes(module, self.target, comp, id)
                    .is_some() =>
            {
                self.gpu_merge_sort(comp, id, out)?
            }
            Opcode::Sort | Opcode::TopK | Opcode::CustomCall
                if codegen::emit::gpu_sort_applies(module, self.target, comp, id) =>
            {
                self.kernel(comp, id, out)?
            }
            // On a GPU, overlapping windows in two launches (the chosen taps, then a
            // thread per operand element over them).
            Opcode::SelectAndScatter
                if codegen::emit::gpu_select_scatter_passes(module, self.target, comp, id)
                    .is_some() =>
            {
                self.gpu_select_scatter(comp, id, out)?
            }
            // A compiled kernel where it takes the window (CPU, or a thread per window or
            // operand element on a GPU), else the library's routine.
            Opcode::SelectAndScatter
                if (self.target.threads_per_block <= 1 || self.target.gpu_emitters)
                    && codegen::emit::emit_select_and_scatter(
                        module,
                        self.target,
                        comp,
                        id,
                        "k",
                    )
                    .is_ok() =>
            {
                self.kernel(comp, id, out)?
            }
            Opcode::Sort
            | Opcode::TopK
            | Opcode::Scatter
            | Opcode::SelectAndScatter
            | Opcode::Fft
            | Opcode::RngBitGenerator => {
                let call = self.library_call(comp, id)?;
                self.library(comp, id, call, out)?
            }
            Opcode::CustomCall if library_target(instr.custom_call_target()) => {
                let call = self.library_call(comp, id)?;
                self.library(comp, id, call, out)?
            }
            Opcode::Fusion if self.wrapped_library(comp, id).is_some() => {
                let (fc, root, operands) = self
                    .wrapped_library(comp, id)
                    .ok_or_else(|| CodegenError::Internal("wrapped library op".into()))?;
                let scatter = module.computation(fc).instr(root).opcode() == Opcode::Scatter;
                if !(scatter
                    && self.sorted_or_scatter_kernel((fc, root), (comp, id), &operands, out)?)
                {
                    let call = self.library_call(fc, root)?;
                    self.library_with(comp, id, call, &operands, out)?
                }
            }
            op if self.is_collective_step(op) => self.collective(comp, id, out)?,
            Opcode::Fusion
                if super::collective::Grid::of_module(module).count() > 1
                    && self.fuses_device_id(comp, id) =>
            {
                return Err(CodegenError::unsupported(
                    "fusion",
                    name,
                    "a replica or partition id inside a fused kernel of a multi-device module",
                ))
            }
            Opcode::CustomCall => {
                return Err(CodegenError::unsupported(
                    "custom-call",
                    name,
                    format!(
                        "custom_call_target=\"{}\"",
                        instr.custom_call_target().unwrap_or_default()
                    ),
                ))
            }
            Opcode::Call => {
                return Err(CodegenError::unsupported(
                    "call",
                    name,
                    "no emitter or library call yet",
                ))
            }
            _ => self.kernel(comp, id, out)?,
        }
        Ok(())
    }

    /// A reshape between row-major layouts of one element type: every element keeps its
    /// offset, so the result is its operand's buffer read with other dimensions (XLA
    /// turns such reshapes into bitcasts; a copy would cost a pass over memory).
    fn is_layout_preserving_reshape(&self, comp: CompId, id: InstrId) -> bool {
        let c = self.module.computation(comp);
        let instr = c.instr(id);
        let Some(&operand) = instr.operands().first() else {
            return false;
        };
        let (to, from) = (instr.shape(), c.instr(operand).shape());
        to.element_type() == from.element_type()
            && !to.is_dynamic()
            && !from.is_dynamic()
            && plain_row_major(to)
            && plain_row_major(from)
    }

    /// A bitcast-convert between element types of different widths over row-major
    /// layouts: the same bytes read as the other type (the narrow side's extra minor
    /// dimension indexes the parts of a wide element, in memory order), so an alias.
    fn is_width_changing_reinterpretation(
        &self,
        comp: CompId,
        id: InstrId,
    ) -> Result<bool, CodegenError> {
        let c = self.module.computation(comp);
        let instr = c.instr(id);
        let operand = c.instr(instr.operands()[0]);
        let row_major = plain_row_major;
        let widths = (
            instr.shape().element_type().and_then(|t| t.bit_width()),
            operand.shape().element_type().and_then(|t| t.bit_width()),
        );
        Ok(widths.0 != widths.1
            && row_major(instr.shape())
            && row_major(operand.shape())
            && bytes_of(instr.shape(), instr.name())? == bytes_of(operand.shape(), instr.name())?)
    }

    /// Buffers for every leaf of `id`'s shape, written by the thunk at `at` (a loop's
    /// state, a conditional's results).
    fn dedicated(
        &mut self,
        comp: CompId,
        id: InstrId,
        at: usize,
    ) -> Result<Vec<BufferId>, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let shapes = leaf_shapes(instr.shape());
        let mut bufs = Vec::with_capacity(shapes.len());
        for (k, s) in shapes.iter().enumerate() {
            let bytes = bytes_of(s, instr.name())?;
            bufs.push(self.temp(&format!("{}.{k}", instr.name()), bytes, at));
        }
        Ok(bufs)
    }

    /// Enters a nested sequence; returns the saved position.
    fn enter(&mut self, out: &[Thunk]) -> usize {
        let saved = self.top;
        if self.depth == 0 {
            self.top = out.len();
        }
        self.depth += 1;
        saved
    }

    fn leave(&mut self, saved: usize) {
        self.depth -= 1;
        self.top = saved;
    }

    fn while_loop(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let name = instr.name().to_string();
        let (Some(cc), Some(bc)) = (instr.while_condition(), instr.while_body()) else {
            return Err(CodegenError::unsupported(
                "while",
                name,
                "no condition or body",
            ));
        };
        let trips = hlo::trip_count::known_trips(self.module, self.module.computation(comp), instr);
        let init = self.leaves(comp, instr.operands()[0])?;
        let at = self.pos(out);
        for &b in &init {
            self.use_at(b, at);
        }
        let state = self.dedicated(comp, id, at)?;
        if state.len() != init.len() {
            return Err(CodegenError::Internal(format!(
                "`{name}`: state and init differ"
            )));
        }
        let saved = self.enter(out);
        let params = [state.clone()];
        let mut cond = Vec::new();
        let cr = self.sequence(cc, Some(&params), &mut cond);
        let mut body = Vec::new();
        let br = cr
            .as_ref()
            .ok()
            .map(|_| self.sequence(bc, Some(&params), &mut body));
        self.leave(saved);
        let cond_result = match cr?.as_slice() {
            [b] => *b,
            _ => {
                return Err(CodegenError::unsupported(
                    "while",
                    name,
                    "a tuple-shaped condition",
                ))
            }
        };
        let body_results =
            br.ok_or_else(|| CodegenError::Internal("while body not built".into()))??;
        if body_results.len() != state.len() {
            return Err(CodegenError::unsupported(
                "while",
                name,
                "body and state differ",
            ));
        }
        out.push(Thunk::While {
            name,
            cond,
            cond_result,
            body,
            body_results,
            state: state.clone(),
            init,
            trips,
        });
        self.slots.insert((comp, id), state);
        Ok(())
    }

    fn conditional(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let c = self.module.computation(comp);
        let instr = c.instr(id);
        let name = instr.name().to_string();
        let comps = instr
            .branch_computations()
            .ok_or_else(|| CodegenError::unsupported("conditional", name.clone(), "no branches"))?;
        let selector = self.single(comp, instr.operands()[0])?;
        let selector_is_pred = match c.instr(instr.operands()[0]).shape().element_type() {
            Some(hlo::ElementType::Pred) => true,
            Some(hlo::ElementType::S32) => false,
            _ => {
                return Err(CodegenError::unsupported(
                    "conditional",
                    name,
                    "a selector that is neither pred nor s32",
                ))
            }
        };
        let at = self.pos(out);
        self.use_at(selector, at);
        let mut args = Vec::with_capacity(comps.len());
        for &op in &instr.operands()[1..] {
            let leaves = self.leaves(comp, op)?;
            for &b in &leaves {
                self.use_at(b, at);
            }
            args.push(leaves);
        }
        if args.len() != comps.len() {
            return Err(CodegenError::unsupported(
                "conditional",
                name,
                "branch and operand counts differ",
            ));
        }
        let results = self.dedicated(comp, id, at)?;
        let saved = self.enter(out);
        let mut branches = Vec::with_capacity(comps.len());
        let mut err = None;
        for (bc, arg) in comps.iter().zip(&args) {
            let mut thunks = Vec::new();
            match self.sequence(*bc, Some(std::slice::from_ref(arg)), &mut thunks) {
                Ok(r) if r.len() == results.len() => branches.push((thunks, r)),
                Ok(_) => {
                    err = Some(CodegenError::Internal(format!(
                        "`{name}`: a branch's result differs from the conditional's"
                    )))
                }
                Err(e) => err = Some(e),
            }
            if err.is_some() {
                break;
            }
        }
        self.leave(saved);
        if let Some(e) = err {
            return Err(e);
        }
        out.push(Thunk::Conditional {
            selector,
            selector_is_pred,
            branches,
            results: results.clone(),
        });
        self.slots.insert((comp, id), results);
        Ok(())
    }

    /// A dot as a library GEMM call.
    fn gemm(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let shape = super::gemm::gemm_shape(module, comp, id)
            .ok_or_else(|| CodegenError::Internal(format!("`{}` is no GEMM", instr.name())))?;
        let t = self.pos(out);
        let lhs = self.single(comp, instr.operands()[0])?;
        let rhs = self.single(comp, instr.operands()[1])?;
        self.use_at(lhs, t);
        self.use_at(rhs, t);
        let bytes = bytes_of(instr.shape(), instr.name())?;
        let o = self.temp(instr.name(), bytes, t);
        out.push(Thunk::Gemm {
            shape,
            lhs,
            rhs,
            out: o,
        });
        self.slots.insert((comp, id), vec![o]);
        Ok(())
    }

    fn kernel(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let t = self.pos(out);
        let shapes = leaf_shapes(instr.shape());
        let mut outs = Vec::with_capacity(shapes.len());
        let mut empty = true;
        for (k, s) in shapes.iter().enumerate() {
            let bytes = bytes_of(s, instr.name())?;
            empty &= s.dims().contains(&0);
            let nm = if shapes.len() > 1 {
                format!("{}.{k}", instr.name())
            } else {
                instr.name().to_string()
            };
            outs.push(self.temp(&nm, bytes, t));
        }
        if empty {
            // Nothing to compute: the outputs hold no element.
            out.push(Thunk::Copy {
                src: outs[0],
                dst: outs[0],
                bytes: 0,
            });
            self.slots.insert((comp, id), outs);
            return Ok(());
        }
        let kname = kernel_name(self.kernels.len(), instr.name());
        let emitted = if instr.opcode() == Opcode::SelectAndScatter {
            codegen::emit::emit_select_and_scatter(module, self.target, comp, id, &kname)?
        } else if codegen::emit::gpu_sort_applies(module, self.target, comp, id) {
            codegen::emit::emit_gpu_sort(module, self.target, comp, id, &kname)?
        } else {
            emit_instruction(module, self.target, comp, id, &kname)?
        };
        let mut args = Vec::with_capacity(emitted.sources.len());
        for src in &emitted.sources {
            let b = match src {
                BufferSource::Operand(j) => self.single(comp, instr.operands()[*j])?,
                BufferSource::Output(k) => outs[*k],
                BufferSource::Constant(cc, i) => self.constant_buffer(*cc, *i)?,
            };
            args.push(b);
        }
        for (&b, src) in args.iter().zip(&emitted.sources) {
            if !matches!(src, BufferSource::Output(_)) {
                self.use_at(b, t);
            }
        }
        // Nested ones too: `memory::in_place::accept` tells their values apart by steps.
        self.in_place_candidates(comp, id, &outs);
        self.launch(out, emitted.kernel, args);
        self.slots.insert((comp, id), outs);
        Ok(())
    }
}

/// Choices of [`build_program_with`] that depend on where the program runs.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Worker threads of the runtime's pool (scratch slots of a streamed GEMM).
    pub workers: usize,
    /// Smallest GEMM lhs streamed from its producer (see [`super::stream`]).
    pub stream_min_bytes: u64,
    /// What the kernels are emitted for.
    pub target: codegen::EmitTarget,
    /// Which of the entry's candidate schedules the builder walks (an index into
    /// [`super::memory::schedule::Schedule::candidates`]; `None` or out of range: the
    /// lowest peak). [`super::memory::limit`] tries the others under a memory limit.
    pub entry_schedule: Option<usize>,
    /// Whether cheap values with readers far apart run again before their last reader
    /// instead of staying live ([`super::memory::remat::recompute`]):
    /// [`super::memory::limit`] asks for it when no schedule fits a memory limit.
    pub recompute: bool,
}

impl Default for BuildOptions {
    /// This machine's cores; [`super::stream::STREAM_MIN_BYTES`]; [`codegen::EmitTarget::cpu`].
    fn default() -> BuildOptions {
        BuildOptions {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            stream_min_bytes: super::stream::STREAM_MIN_BYTES,
            target: codegen::EmitTarget::cpu(),
            entry_schedule: None,
            recompute: false,
        }
    }
}

/// Builds the program of `module`'s entry computation with the default
/// [`BuildOptions`]. Any instruction no emitter handles yet gives
/// [`CodegenError::Unsupported`] naming it.
pub fn build_program(module: &Module) -> Result<Program, CodegenError> {
    build_program_with(module, &BuildOptions::default())
}

/// Builds the program of `module`'s entry computation (see [`build_program`]).
pub fn build_program_with(
    module: &Module,
    options: &BuildOptions,
) -> Result<Program, CodegenError> {
    let entry = module.entry();
    let mut st = State {
        module,
        target: &options.target,
        buffers: Vec::new(),
        allocations: Vec::new(),
        kernels: Vec::new(),
        slots: HashMap::new(),
        depth: 0,
        top: 0,
        in_place: Vec::new(),
        built: Default::default(),
        entry_order: {
            let s = super::memory::schedule::schedule(
                module,
                module.entry_id(),
                &super::memory::dataflow(module),
            );
            match options.entry_schedule.and_then(|k| s.candidates.get(k)) {
                Some(c) => c.order.clone(),
                None => s.order().to_vec(),
            }
        },
    };
    let mut thunks = Vec::new();
    let leaves = st.sequence(module.entry_id(), None, &mut thunks)?;
    let root_instr = entry.root_instr();
    let leaf_shapes = leaf_shapes(root_instr.shape());
    let mut outputs = Vec::with_capacity(leaves.len());
    for (&b, s) in leaves.iter().zip(&leaf_shapes) {
        outputs.push(spec_of(s, b, root_instr.name())?);
        // Outputs stay live to the end.
        st.buffers[b].last_use = Some(usize::MAX);
    }
    for b in &mut st.buffers {
        if b.defined_at.is_some() && b.last_use.is_none() {
            b.last_use = b.defined_at;
        }
    }
    let mut parameters = Vec::new();
    for n in 0..entry.parameters().len() {
        let pid = entry
            .parameter(n)
            .ok_or_else(|| CodegenError::Internal(format!("no parameter {n}")))?;
        let b = st.single(module.entry_id(), pid)?;
        parameters.push(spec_of(
            entry.instr(pid).shape(),
            b,
            entry.instr(pid).name(),
        )?);
    }
    super::memory::remat::rematerialize(&mut thunks, &mut st.buffers, &st.kernels, &st.in_place);
    if options.recompute {
        super::memory::remat::recompute(&mut thunks, &mut st.buffers, &mut st.kernels);
    }
    let stream = super::stream::StreamOptions {
        workers: options.workers,
        min_bytes: options.stream_min_bytes,
        // The CUDA executor runs no contraction streams.
        contraction: !options.target.gpu_emitters,
    };
    super::stream::stream_gemms(&mut thunks, &mut st.buffers, &st.kernels, stream);
    // Smaller patch matrices stream too where they set the temp peak (issue 32 item 5).
    super::stream_peak::stream_at_peak(&mut thunks, &mut st.buffers, &st.kernels, stream);
    let output_buffers: Vec<BufferId> = outputs.iter().map(|o| o.buffer).collect();
    let ordered =
        super::memory::in_place_order::candidates(&thunks, &st.buffers, &st.kernels, &st.in_place);
    st.in_place.extend(ordered);
    // Parameters no output may take, and constants: never written, so chains view them.
    let aliased = super::memory::donate::aliased_parameters(module);
    let read_only: Vec<BufferId> = (parameters.iter().enumerate())
        .filter(|(n, _)| !aliased.contains(n))
        .map(|(_, s)| s.buffer)
        .chain((0..st.buffers.len()).filter(|&b| {
            let a = st.allocations.get(st.buffers[b].allocation);
            a.is_some_and(|a| matches!(a.kind, AllocationKind::Constant(_)))
        }))
        .collect();
    let sliced = super::stream_chain::slice_chains(
        &mut thunks,
        &mut st.buffers,
        &st.kernels,
        (&st.in_place, &read_only),
        stream,
    );
    let mut accepted =
        super::memory::in_place::accept(&thunks, &st.buffers, &st.kernels, &st.in_place);
    for c in sliced.in_place {
        if !accepted
            .iter()
            .any(|a| a.output == c.output || a.operand == c.operand)
        {
            accepted.push(c);
        }
    }
    let donations = super::memory::donate::donations(
        module,
        &thunks,
        &st.buffers,
        &st.kernels,
        &st.in_place,
        (&parameters, &outputs),
    );
    for d in &donations {
        // The output lives in its parameter's allocation, not over a temporary.
        let (o, p) = (outputs[d.output].buffer, parameters[d.parameter].buffer);
        st.buffers[o].allocation = st.buffers[p].allocation;
        accepted.retain(|c| c.output != o);
    }
    // Body results written over their loop's dying state element: never another pair.
    let carried = super::memory::carried::carried(&thunks, &st.buffers, &st.kernels, &st.in_place);
    accepted.retain(|c| {
        !carried
            .iter()
            .any(|k| k.result == c.output || k.state == c.operand)
    });
    super::memory::carried::hold(&mut st.buffers, &carried);
    // Loop state the loop never changes, in its initial value's bytes.
    let keep_apart: Vec<BufferId> = donations
        .iter()
        .map(|d| parameters[d.parameter].buffer)
        .chain(output_buffers.iter().copied())
        .collect();
    let read_only =
        super::memory::carried::read_only_state(&thunks, &st.buffers, &st.kernels, &keep_apart);
    accepted.retain(|c| {
        !read_only
            .iter()
            .any(|&(s, i)| s == c.operand || s == c.output || i == c.operand)
    });
    let read_only_temps = super::memory::carried::hold_read_only(&mut st.buffers, &read_only);
    // Loop state started from a temporary dying at the loop, in that temporary's bytes.
    let dying_init =
        super::memory::carried::dying_init_state(&thunks, &st.buffers, &keep_apart, &read_only);
    let donated_kernels: Vec<_> = donations.iter().filter_map(|d| d.kernel).collect();
    super::memory::in_place::mark(&thunks, &mut st.kernels, &donated_kernels);
    let mut shares: Vec<(BufferId, BufferId)> = accepted
        .iter()
        .map(|c| (c.output, c.operand))
        .chain(read_only_temps.iter().copied())
        .collect();
    // Library results over their dying operands, apart from the loop state's pairs.
    let apart: Vec<BufferId> = (read_only.iter().chain(&dying_init))
        .copied()
        .chain(carried.iter().map(|k| (k.result, k.state)))
        .flat_map(|(a, b)| [a, b])
        .collect();
    let library = super::memory::library_in_place::pairs(&thunks, &st.buffers, &shares, &apart);
    shares.extend(library);
    let (assigned, in_place, dying_kept) = super::memory::steps::assign_by_steps_with(
        &thunks,
        &mut st.buffers,
        &mut st.allocations,
        &output_buffers,
        (&shares, &dying_init),
    );
    if in_place {
        super::memory::in_place::mark(&thunks, &mut st.kernels, &accepted);
    }
    for &(s, i) in &read_only {
        if in_place || !read_only_temps.contains(&(s, i)) {
            st.buffers[s].allocation = st.buffers[i].allocation;
        }
    }
    if dying_kept {
        for &(s, i) in &dying_init {
            st.buffers[s].allocation = st.buffers[i].allocation;
        }
    }
    super::memory::carried::place(&mut st.buffers, &carried);
    super::stream_chain::place_views(&sliced.views, &mut st.buffers, &mut st.allocations);
    let carried: Vec<_> = carried.iter().map(|c| c.candidate()).collect();
    super::memory::in_place::mark(&thunks, &mut st.kernels, &carried);
    let mut program = Program {
        name: module.name().to_string(),
        kernels: st.kernels,
        thunks,
        buffers: st.buffers,
        allocations: st.allocations,
        parameters,
        outputs,
        tuple_output: root_instr.shape().is_tuple(),
        peak_bytes: assigned.peak_bytes,
        temp_block_bytes: assigned.temp_block_bytes,
    };
    // In-place kernels name the bytes they share once (so their pointers may be `restrict`).
    super::memory::one_pointer::fold(&mut program);
    Ok(program)
}

/// An array shape whose layout, if any, is row-major with no tiling or other suffix.
fn plain_row_major(s: &Shape) -> bool {
    s.as_array().is_some() && s.layout().is_none_or(|l| l.is_plain() && l.is_row_major())
}
