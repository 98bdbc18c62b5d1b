//! Library calls in the program builder: which instructions (and which of XLA's fusions
//! wrapping one) run as a routine of the runtime's library (sort, top-k, scatter,
//! select-and-scatter, LAPACK, FFT, rng-bit-generator), their operands and results, and
//! the scalar-function kernels they call.

use super::custom_calls::{lapack_call, library_target};
use super::*;
use crate::{recognize_comparator, KeyCompare, SortKey, SortOrder};

impl State<'_> {
    /// A scalar-function kernel of computation `called` (for instruction `what`).
    pub(super) fn scalar_fn(&mut self, called: CompId, what: &str) -> Result<usize, CodegenError> {
        let kname = kernel_name(self.kernels.len(), &format!("{what}_fn"));
        let k =
            codegen::emit::emit_scalar_function(self.module, self.target, called, &kname, what)?;
        self.kernels.push(k);
        Ok(self.kernels.len() - 1)
    }

    /// The library routine of a sort, top-k, scatter, select-and-scatter,
    /// rng-bit-generator or LAPACK custom call.
    pub(super) fn library_call(
        &mut self,
        comp: CompId,
        id: InstrId,
    ) -> Result<LibraryCall, CodegenError> {
        let module = self.module;
        let c = module.computation(comp);
        let instr = c.instr(id);
        let name = instr.name();
        let op = instr.opcode().as_str();
        let unsupported = |why: &str| CodegenError::unsupported(op, name, why);
        let called = |n: AttrName| match instr.attr(&n) {
            Some(AttrValue::Computation(cc)) => Ok(*cc),
            _ => Err(unsupported("no called computation")),
        };
        let rank = c.instr(instr.operands()[0]).shape().dims().len();
        let dims = |v: &[i64], bound: usize| -> Result<Vec<usize>, CodegenError> {
            v.iter()
                .map(|&d| {
                    usize::try_from(d)
                        .ok()
                        .filter(|&d| d < bound)
                        .ok_or_else(|| unsupported("a dimension number out of range"))
                })
                .collect()
        };
        Ok(match instr.opcode() {
            Opcode::Sort => {
                let dim = match instr.dimensions() {
                    Some([d]) => dims(&[*d], rank)?[0],
                    _ => return Err(unsupported("needs one sort dimension")),
                };
                let cmp = instr
                    .to_apply()
                    .ok_or_else(|| unsupported("no comparator"))?;
                let types: Vec<Option<ScalarType>> = instr
                    .operands()
                    .iter()
                    .map(|&o| {
                        c.instr(o)
                            .shape()
                            .element_type()
                            .and_then(ScalarType::from_element)
                    })
                    .collect();
                LibraryCall::Sort {
                    dim,
                    comparator: self.scalar_fn(cmp, name)?,
                    order: key_order(module, cmp, &types),
                }
            }
            Opcode::TopK => {
                let k = instr
                    .topk_k()
                    .and_then(|k| usize::try_from(k).ok())
                    .ok_or_else(|| unsupported("no k"))?;
                let largest =
                    !matches!(instr.attr(&AttrName::Largest), Some(AttrValue::Bool(false)));
                let ty = c.instr(instr.operands()[0]).shape().element_type();
                LibraryCall::TopK {
                    k,
                    largest,
                    comparator: None,
                    order: ty.and_then(ScalarType::from_element).map(|ty| SortOrder {
                        keys: vec![SortKey {
                            operand: 0,
                            ty,
                            compare: if ty.is_float() {
                                KeyCompare::TotalOrder
                            } else {
                                KeyCompare::Integer
                            },
                            canonical: false,
                            descending: largest,
                        }],
                    }),
                }
            }
            Opcode::CustomCall if instr.custom_call_target() == Some("TopK") => {
                let k = leaf_shapes(instr.shape())
                    .first()
                    .and_then(|s| s.dims().last().copied())
                    .and_then(|k| usize::try_from(k).ok())
                    .ok_or_else(|| unsupported("TopK without a k"))?;
                let cmp = *instr
                    .called_computations()
                    .first()
                    .ok_or_else(|| unsupported("TopK without a comparator"))?;
                // Operand 1 of the comparator's order is the index (`s32`).
                let ty = c.instr(instr.operands()[0]).shape().element_type();
                let types = [ty.and_then(ScalarType::from_element), Some(ScalarType::S32)];
                LibraryCall::TopK {
                    k,
                    largest: true,
                    comparator: Some(self.scalar_fn(cmp, name)?),
                    order: key_order(module, cmp, &types),
                }
            }
            Opcode::CustomCall => {
                let target = instr.custom_call_target().unwrap_or_default();
                LibraryCall::Lapack(lapack_call(instr, target).map_err(|e| unsupported(&e))?)
            }
            Opcode::Scatter => {
                let dn = instr
                    .scatter_dimension_numbers()
                    .ok_or_else(|| unsupported("no index_vector_dim"))?;
                let n = instr.operands().len() / 2;
                let irank = c.instr(instr.operands()[n]).shape().dims().len();
                let urank = c.instr(instr.operands()[n + 1]).shape().dims().len();
                let cmb = instr
                    .to_apply()
                    .ok_or_else(|| unsupported("no update computation"))?;
                LibraryCall::Scatter {
                    update_window_dims: dims(&dn.update_window_dims, urank)?,
                    inserted_window_dims: dims(&dn.inserted_window_dims, rank)?,
                    scatter_dims_to_operand_dims: dims(&dn.scatter_dims_to_operand_dims, rank)?,
                    index_vector_dim: dims(&[dn.index_vector_dim], irank + 1)?[0],
                    input_batching_dims: dims(&dn.input_batching_dims, rank)?,
                    scatter_indices_batching_dims: dims(&dn.scatter_indices_batching_dims, irank)?,
                    combiner: self.scalar_fn(cmb, name)?,
                }
            }
            Opcode::SelectAndScatter => {
                let window = instr
                    .window()
                    .ok_or_else(|| unsupported("no window"))?
                    .dims
                    .clone();
                if window.len() != rank {
                    return Err(unsupported("window rank differs from the operand's"));
                }
                let (sel, sct) = (called(AttrName::Select)?, called(AttrName::Scatter)?);
                LibraryCall::SelectAndScatter {
                    window,
                    select: self.scalar_fn(sel, name)?,
                    scatter: self.scalar_fn(sct, name)?,
                }
            }
            Opcode::Fft => {
                let kind = match instr.fft_type() {
                    Some("FFT") => FftKind::Fft,
                    Some("IFFT") => FftKind::Ifft,
                    Some("RFFT") => FftKind::Rfft,
                    Some("IRFFT") => FftKind::Irfft,
                    _ => return Err(unsupported("an unknown fft_type")),
                };
                let lengths: Vec<usize> = instr
                    .fft_length()
                    .ok_or_else(|| unsupported("no fft_length"))?
                    .iter()
                    .map(|&l| usize::try_from(l).ok())
                    .collect::<Option<_>>()
                    .ok_or_else(|| unsupported("a negative fft_length"))?;
                if lengths.is_empty() || lengths.len() > 3 || lengths.len() > rank {
                    return Err(unsupported(
                        "fft_length must name 1 to 3 trailing dimensions",
                    ));
                }
                LibraryCall::Fft { kind, lengths }
            }
            Opcode::RngBitGenerator => {
                let alg = match instr.attr(&AttrName::Algorithm) {
                    Some(AttrValue::Ident(a)) => a.as_str(),
                    _ => "rng_default",
                };
                LibraryCall::RngBitGenerator {
                    philox: match alg {
                        "rng_philox" | "rng_default" => true,
                        "rng_three_fry" => false,
                        _ => return Err(unsupported("an unknown algorithm")),
                    },
                }
            }
            _ => return Err(unsupported("no library routine")),
        })
    }

    /// A fusion that only wraps one library op (XLA's `wrapped_scatter`, ...): its
    /// called computation, the op, and the fusion operands the op reads, in order.
    pub(super) fn wrapped_library(
        &self,
        comp: CompId,
        id: InstrId,
    ) -> Option<(CompId, InstrId, Vec<InstrId>)> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let fc = instr.calls()?;
        let f = module.computation(fc);
        let root = f.root_instr();
        let lib = matches!(
            root.opcode(),
            Opcode::Sort
                | Opcode::TopK
                | Opcode::Scatter
                | Opcode::SelectAndScatter
                | Opcode::Fft
                | Opcode::RngBitGenerator
        ) || (root.opcode() == Opcode::CustomCall
            && library_target(root.custom_call_target()));
        if !lib || f.instruction_count() != f.parameters().len() + 1 {
            return None;
        }
        let mut operands = Vec::with_capacity(root.operands().len());
        for &op in root.operands() {
            let p = f.instr(op);
            if p.opcode() != Opcode::Parameter {
                return None;
            }
            let n = usize::try_from(p.parameter_number()?).ok()?;
            operands.push(*instr.operands().get(n)?);
        }
        Some((fc, f.root(), operands))
    }

    /// A library-call thunk: operands read in place, results in fresh buffers.
    pub(super) fn library(
        &mut self,
        comp: CompId,
        id: InstrId,
        call: LibraryCall,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let operands = self.module.computation(comp).instr(id).operands().to_vec();
        self.library_with(comp, id, call, &operands, out)
    }

    /// A library-call thunk of instruction `id` reading `operands` (of `comp`).
    pub(super) fn library_with(
        &mut self,
        comp: CompId,
        id: InstrId,
        call: LibraryCall,
        operands: &[InstrId],
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let c = module.computation(comp);
        let instr = c.instr(id);
        let t = self.pos(out);
        let mut inputs = Vec::with_capacity(operands.len());
        for &op in operands {
            let b = self.single(comp, op)?;
            self.use_at(b, t);
            inputs.push(spec_of(c.instr(op).shape(), b, instr.name())?);
        }
        let shapes = leaf_shapes(instr.shape());
        let mut outputs = Vec::with_capacity(shapes.len());
        let mut bufs = Vec::with_capacity(shapes.len());
        for (k, s) in shapes.iter().enumerate() {
            let bytes = bytes_of(s, instr.name())?;
            let nm = if shapes.len() > 1 {
                format!("{}.{k}", instr.name())
            } else {
                instr.name().to_string()
            };
            let b = self.temp(&nm, bytes, t);
            outputs.push(spec_of(s, b, instr.name())?);
            bufs.push(b);
        }
        out.push(Thunk::Library {
            call,
            inputs,
            outputs,
        });
        self.slots.insert((comp, id), bufs);
        Ok(())
    }
}

/// The key order of comparator `cmp` over operands of `types`, when it is recognized and
/// its keys are operands of those types (the comparator takes two parameters for each).
fn key_order(module: &Module, cmp: CompId, types: &[Option<ScalarType>]) -> Option<SortOrder> {
    let params = module.get_computation(cmp)?.parameters().len();
    let order = recognize_comparator(module, cmp)?;
    let fits = order
        .keys
        .iter()
        .all(|k| 2 * k.operand < params && types.get(k.operand) == Some(&Some(k.ty)));
    (fits && params <= 2 * types.len()).then_some(order)
}
