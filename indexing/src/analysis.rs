//! The public questions, asked of one instruction handle ([`hlo::InstrRef`]): which
//! composition answers them for which instruction. An op with a table of its own gets its
//! per-op maps ([`crate::ops`]), folded and normalized; a `fusion` or `call` the
//! composition of its computation's maps; an async op the composition of the computation
//! it wraps.

use hlo::{InstrRef, Opcode};

use crate::compose::{
    async_start, called, forward, forward_to, from_start, region, through_computation, Start,
};
use crate::fold;
use crate::ops::util::{output_count, OpView};
use crate::ops::{calls_computation, op_in_to_out, op_out_to_in};
use crate::{FusionIndexing, GroupedIndexing, IndexingError, OperandIndexing, ValueMaps};

/// Output-to-input maps of a `fusion` (or `call`): the composition of its ops' maps from
/// each output to each operand, simplified after every step. Any other instruction is
/// [`IndexingError::NotAFusion`] (ask [`output_to_input`] instead).
///
/// ```
/// let module = hlo::parse_module(r#"
/// HloModule m
/// f {
///   p = f32[8,4] parameter(0)
///   t = f32[4,8] transpose(p), dimensions={1,0}
///   ROOT e = f32[4,8] exponential(t)
/// }
/// ENTRY e {
///   a = f32[8,4] parameter(0)
///   ROOT fusion.3 = f32[4,8] fusion(a), kind=kLoop, calls=f
/// }"#).unwrap();
/// let fusion = module.instr("fusion.3").unwrap();
/// let maps = indexing::analyze(&fusion).unwrap();
/// assert_eq!(
///     indexing::format_grouped(&maps.outputs),
///     "operand id = 0\n  (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 7]\n"
/// );
/// ```
pub fn analyze(fusion: &InstrRef<'_>) -> Result<FusionIndexing, IndexingError> {
    if !matches!(fusion.opcode(), Opcode::Fusion | Opcode::Call) {
        return Err(IndexingError::NotAFusion(fusion.name().to_string()));
    }
    through_call(fusion)
}

/// [`analyze`] for fusions, calls and async ops (through the wrapped computation; the
/// operands are those of the chain's `async-start`).
fn through_call(instr: &InstrRef<'_>) -> Result<FusionIndexing, IndexingError> {
    let (module, comp) = (instr.module(), instr.comp_id());
    let start = if instr.opcode().is_async() {
        async_start(module, comp, instr.id())
    } else {
        instr.id()
    };
    let inner = called(module, comp, start)?;
    Ok(FusionIndexing {
        outputs: through_computation(module, inner)?,
    })
}

/// Output-to-input maps of any instruction: one [`GroupedIndexing`] per output (one for an
/// array result; one per tuple element otherwise). A fusion, call or async op is analysed
/// through the computation it calls (for `async-done`, the operands are those of the
/// `async-start` of its chain); a scan through its body where its carries are simple
/// (`scan_body`). Maps are simplified, runtime variables produced by constants and iotas
/// folded.
pub fn output_to_input(instr: &InstrRef<'_>) -> Result<Vec<GroupedIndexing>, IndexingError> {
    if calls_computation(instr.opcode()) {
        return Ok(through_call(instr)?.outputs);
    }
    let v = OpView::of(instr);
    (0..output_count(v.instr))
        .map(|k| {
            // A scan through its body, where that is exact.
            let sets = match crate::scan_body::through_body(instr, k)? {
                Some(sets) => sets,
                None => op_out_to_in(&v, k)?,
            };
            let operands = sets
                .into_iter()
                .map(|s| fold::finish(instr.module(), s))
                .collect::<Result<_, _>>()?;
            Ok(GroupedIndexing { operands })
        })
        .collect()
}

/// Input-to-output maps from operand `operand` of any instruction to each of its outputs.
/// A fusion or call is analysed forward through its computation from the matching
/// parameter; an async op has none (UNDEFINED); a scan inverts its exact maps through the
/// body where they invert (`scan_inverse`).
pub fn input_to_output(
    instr: &InstrRef<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let count = instr.instr().operands().len();
    let no_such_operand = |count| IndexingError::NoSuchOperand {
        instr: instr.name().to_string(),
        count,
        operand,
    };
    if operand >= count {
        return Err(no_such_operand(count));
    }
    let (module, comp) = (instr.module(), instr.comp_id());
    if calls_computation(instr.opcode()) {
        if !matches!(instr.opcode(), Opcode::Fusion | Opcode::Call) {
            return Ok(vec![
                OperandIndexing::undefined(
                    "input-to-output maps of an async op: not described"
                );
                output_count(instr.instr())
            ]);
        }
        let inner = called(module, comp, instr.id())?;
        let ic = module.computation(inner);
        let p = ic
            .parameter(operand)
            .ok_or_else(|| no_such_operand(ic.parameters().len()))?;
        return forward(module, inner, p);
    }
    // A scan by inverting its exact maps through the body, where they invert.
    let sets = match instr.opcode() {
        Opcode::Scan => crate::scan_inverse::in_to_out(instr, operand)?,
        _ => None,
    };
    let sets = match sets {
        Some(sets) => sets,
        None => op_in_to_out(&OpView::of(instr), operand)?,
    };
    sets.into_iter().map(|s| fold::finish(module, s)).collect()
}

/// The maps from each output of `consumer` to every instruction of the would-be fusion of
/// `producer` into `consumer` (fusions are looked through) and to every operand it reads:
/// one [`ValueMaps`] per output of the consumer. The producer must be an operand of the
/// consumer (so both are in one computation of one module), else
/// [`IndexingError::NotProducerConsumer`].
pub fn producer_consumer(
    producer: &InstrRef<'_>,
    consumer: &InstrRef<'_>,
) -> Result<Vec<ValueMaps>, IndexingError> {
    let same_computation = std::ptr::eq(producer.module(), consumer.module())
        && producer.comp_id() == consumer.comp_id();
    if !same_computation || !consumer.instr().operands().contains(&producer.id()) {
        return Err(IndexingError::NotProducerConsumer {
            producer: producer.name().to_string(),
            consumer: consumer.name().to_string(),
        });
    }
    region(
        consumer.module(),
        consumer.comp_id(),
        producer.id(),
        consumer.id(),
    )
}

/// Epilogue input-to-output maps: from the output of `hero` to each output of the root of
/// the computation holding it, composing input-to-output maps forward. Entry `k` holds the
/// maps to root output `k` (empty when the hero does not reach it).
pub fn epilogue_indexing(hero: &InstrRef<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    forward(hero.module(), hero.comp_id(), hero.id())
}

/// [`epilogue_indexing`] to `root` instead of the root of the computation: the maps from
/// the output of `hero` to each output of `root`, an instruction of the same computation
/// (entry `k` empty when the hero does not reach output `k`); [`IndexingError::NotInRegion`]
/// when `root` is in another computation.
pub fn epilogue_indexing_to(
    hero: &InstrRef<'_>,
    root: &InstrRef<'_>,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    if !std::ptr::eq(hero.module(), root.module()) || hero.comp_id() != root.comp_id() {
        return Err(IndexingError::NotInRegion {
            start: hero.name().to_string(),
            region: root.name().to_string(),
        });
    }
    forward_to(hero.module(), hero.comp_id(), hero.id(), root.id())
}

/// Grouped maps of the region `region` from one of its values: `region` is a fusion or call
/// (its computation is looked through) or any other instruction (a region of that one op);
/// `start` is `region` itself, an instruction of the computation a fusion or call runs, or
/// an operand of `region`. One [`ValueMaps`] per output of `start`: the maps from that
/// output to every value of the region it reads and to the region's operands it reads
/// (parameters of the called computation are listed as those operands). Any other `start`
/// is [`IndexingError::NotInRegion`].
pub fn grouped_from(
    region: &InstrRef<'_>,
    start: &InstrRef<'_>,
) -> Result<Vec<ValueMaps>, IndexingError> {
    let module = region.module();
    let (comp, id) = (region.comp_id(), region.id());
    let same_module = std::ptr::eq(module, start.module());
    let inside = same_module
        && if start.comp_id() == comp {
            start.id() == id || region.instr().operands().contains(&start.id())
        } else {
            calls_computation(region.opcode())
                && !region.opcode().is_async()
                && called(module, comp, id)? == start.comp_id()
        };
    if !inside {
        return Err(IndexingError::NotInRegion {
            start: start.name().to_string(),
            region: region.name().to_string(),
        });
    }
    let s = Start {
        comp: start.comp_id(),
        id: start.id(),
    };
    from_start(module, comp, id, s)
}
