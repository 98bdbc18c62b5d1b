//! Blocked scans: a cumulative `reduce-window` longer than 16 elements
//! ([`hlo::ir::blocked_scan`]) becomes a scan of blocks of 16 plus the exclusive scan of the
//! block totals, as XLA:CPU's `ReduceWindowRewriter` computes it (same steps, same order).
//! The order is the point: a float cumsum then rounds as XLA's does (and as the reference
//! evaluator's `window_scan` computes it), where one left-to-right chain drifts further
//! (by 1e-4 over 50,257 probabilities: a nucleus sampler kept one token fewer than XLA).
//!
//! For a scan of `n` along dimension `d` with init `z` and reducer `f`:
//! 1. the scanned dimension swapped to the last place (a transpose) when it is not;
//! 2. padded with `z` to `P`, a multiple of 16, and reshaped to `[.., P / 16, 16]`;
//! 3. every block scanned by a 16-element window (padding 15 low, or high when reversed);
//! 4. each block's total sliced out (its last element, or first when reversed) and scanned
//!    exclusively across the blocks by a window of `P / 16` padded by as much (a window
//!    the pass rewrites again while it is longer than 16);
//! 5. that broadcast over its block and combined with the block's scan: `f(block, outer)`
//!    (the reducer's opcode when it is a plain binary op, else a `map`);
//! 6. reshaped back, transposed back, sliced to `n`, and padded by one `z` for an
//!    exclusive window.
//!
//! Only windows of one input whose reducer returns one value; variadic scans stay as they
//! are (the evaluator folds those in window order too).

use hlo::attrs::{AttrName, AttrValue, PaddingConfig, PaddingDim, SliceDim, Window, WindowDim};
use hlo::ir::blocked_scan::{cumulative_window, CumulativeWindow, BASE_LENGTH};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{reducer, Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::{ElementType, Shape};
use hlo::{CompId, Opcode};

/// Rewrites cumulative windows longer than 16 into XLA:CPU's blocked scans (module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockedScans;

/// What one rewrite needs of the window: its operand, init, reducer and how to combine.
struct Scan {
    id: InstrId,
    input: InstrId,
    init: InstrId,
    to_apply: CompId,
    /// The reducer's opcode, when it is a plain binary op of its parameters.
    op: Option<Opcode>,
    window: CumulativeWindow,
}

/// The windows of `comp` this pass rewrites.
fn scans(module: &Module, comp: &Computation) -> Vec<Scan> {
    comp.instructions()
        .filter_map(|(id, i)| {
            if i.opcode != Opcode::ReduceWindow || i.operands.len() != 2 || i.shape.is_tuple() {
                return None;
            }
            let dims = comp.instr(i.operands[0]).shape.dims().to_vec();
            let window = cumulative_window(i, &dims).filter(|w| w.is_blocked())?;
            let to_apply = i.to_apply()?;
            let c = module.get_computation(to_apply)?;
            if c.instr(c.root()).shape.is_tuple() {
                return None;
            }
            Some(Scan {
                id,
                input: i.operands[0],
                init: i.operands[1],
                to_apply,
                op: reducer::classify(module, to_apply).map(|r| r.opcode()),
                window,
            })
        })
        .collect()
}

/// Adds instructions to one computation, named after the window they replace.
struct Emit<'a> {
    comp: &'a mut Computation,
    names: &'a mut NameGen,
    base: String,
    ty: ElementType,
}

impl Emit<'_> {
    fn add(&mut self, op: Opcode, dims: &[i64], operands: Vec<InstrId>) -> Instruction {
        Instruction::new(
            self.names.fresh(&self.base),
            op,
            Shape::array(self.ty, dims.to_vec()),
            operands,
        )
    }

    fn push(&mut self, i: Instruction) -> InstrId {
        edit::add(self.comp, i)
    }

    fn transpose(&mut self, x: InstrId, dims: &[i64], perm: &[i64]) -> InstrId {
        let i = self
            .add(Opcode::Transpose, dims, vec![x])
            .with_attr(AttrName::Dimensions, AttrValue::IntList(perm.to_vec()));
        self.push(i)
    }

    fn reshape(&mut self, x: InstrId, dims: &[i64]) -> InstrId {
        let i = self.add(Opcode::Reshape, dims, vec![x]);
        self.push(i)
    }

    /// `x` padded by `init` at dimension `d`: `low` before, `high` after.
    fn pad(
        &mut self,
        x: InstrId,
        init: InstrId,
        dims: &[i64],
        d: usize,
        low: i64,
        high: i64,
    ) -> InstrId {
        let config = PaddingConfig {
            dims: (0..dims.len())
                .map(|k| PaddingDim {
                    low: if k == d { low } else { 0 },
                    high: if k == d { high } else { 0 },
                    interior: 0,
                })
                .collect(),
        };
        let i = self
            .add(Opcode::Pad, dims, vec![x, init])
            .with_attr(AttrName::Padding, AttrValue::Padding(config));
        self.push(i)
    }

    /// `x` (of `from` dims) kept to `[start, limit)` along dimension `d`.
    fn slice(&mut self, x: InstrId, from: &[i64], d: usize, start: i64, limit: i64) -> InstrId {
        let mut dims = from.to_vec();
        dims[d] = limit - start;
        let slice = from
            .iter()
            .enumerate()
            .map(|(k, &n)| SliceDim {
                start: if k == d { start } else { 0 },
                limit: if k == d { limit } else { n },
                stride: 1,
            })
            .collect();
        let i = self
            .add(Opcode::Slice, &dims, vec![x])
            .with_attr(AttrName::Slice, AttrValue::Slice(slice));
        self.push(i)
    }

    /// A window of `size` along the last dimension of `x` (`in_dims`), padded `pad` before
    /// (forward) or after (`reverse`).
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &mut self,
        s: &Scan,
        x: InstrId,
        in_dims: &[i64],
        size: i64,
        pad: i64,
        reverse: bool,
    ) -> (InstrId, Vec<i64>) {
        let last = in_dims.len() - 1;
        let mut dims_out = in_dims.to_vec();
        dims_out[last] = in_dims[last] + pad - size + 1;
        let mut window = Window {
            dims: in_dims.iter().map(|_| WindowDim::of_size(1)).collect(),
        };
        window.dims[last] = WindowDim {
            padding_low: if reverse { 0 } else { pad },
            padding_high: if reverse { pad } else { 0 },
            ..WindowDim::of_size(size)
        };
        let i = self
            .add(Opcode::ReduceWindow, &dims_out, vec![x, s.init])
            .with_attr(AttrName::Window, AttrValue::Window(window))
            .with_attr(AttrName::ToApply, AttrValue::Computation(s.to_apply));
        (self.push(i), dims_out)
    }
}

/// Replaces window `s` of `comp` by its blocked form; the new exclusive window over the
/// block totals is left for the next round when it is still long.
fn rewrite(comp: &mut Computation, names: &mut NameGen, s: &Scan) -> Option<()> {
    let old = comp.instr(s.id).clone();
    let ty = old.shape.element_type()?;
    let in_dims = comp.instr(s.input).shape.dims().to_vec();
    let rank = in_dims.len();
    let (d, last, n) = (s.window.dim, rank - 1, s.window.len);
    let reverse = s.window.reverse;
    let mut e = Emit {
        comp,
        names,
        base: old.name.clone(),
        ty,
    };
    // 1. The scanned dimension last.
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    perm.swap(d, last);
    let mut dims: Vec<i64> = perm.iter().map(|&p| in_dims[p as usize]).collect();
    let mut x = s.input;
    if d != last {
        x = e.transpose(x, &dims, &perm);
    }
    // 2. Padded to whole blocks, one block per row.
    let padded = (n + BASE_LENGTH - 1) / BASE_LENGTH * BASE_LENGTH;
    if padded != n {
        dims[last] = padded;
        x = e.pad(x, s.init, &dims, last, 0, padded - n);
    }
    let flat_dims = dims.clone();
    let blocks = padded / BASE_LENGTH;
    let mut tiled = dims.clone();
    tiled[last] = blocks;
    tiled.push(BASE_LENGTH);
    x = e.reshape(x, &tiled);
    // 3. Each block scanned.
    let (inner, _) = e.scan(s, x, &tiled, BASE_LENGTH, BASE_LENGTH - 1, reverse);
    // 4. Block totals, scanned exclusively across blocks.
    let at = if reverse { 0 } else { BASE_LENGTH - 1 };
    let total = e.slice(inner, &tiled, rank, at, at + 1);
    let totals_dims = tiled[..rank].to_vec();
    let totals = e.reshape(total, &totals_dims);
    let (outer, outer_dims) = e.scan(s, totals, &totals_dims, blocks, blocks, reverse);
    let start = i64::from(reverse);
    let outer = e.slice(outer, &outer_dims, last, start, start + blocks);
    // 5. Combined with each element of its block.
    let spread = e.add(Opcode::Broadcast, &tiled, vec![outer]).with_attr(
        AttrName::Dimensions,
        AttrValue::IntList((0..rank as i64).collect()),
    );
    let spread = e.push(spread);
    let combined = match s.op {
        Some(op) => e.add(op, &tiled, vec![inner, spread]),
        None => e
            .add(Opcode::Map, &tiled, vec![inner, spread])
            .with_attr(
                AttrName::Dimensions,
                AttrValue::IntList((0..=rank as i64).collect()),
            )
            .with_attr(AttrName::ToApply, AttrValue::Computation(s.to_apply)),
    };
    let mut y = e.push(combined);
    // 6. Back to the window's own shape.
    y = e.reshape(y, &flat_dims);
    let mut dims: Vec<i64> = in_dims.clone();
    dims[d] = padded;
    if d != last {
        y = e.transpose(y, &dims, &perm);
    }
    if padded != n {
        y = e.slice(y, &dims, d, 0, n);
        dims[d] = n;
    }
    if s.window.exclusive {
        let (low, high) = if reverse { (0, 1) } else { (1, 0) };
        dims[d] = n + 1;
        y = e.pad(y, s.init, &dims, d, low, high);
    }
    edit::replace_uses(e.comp, s.id, y);
    edit::remove_instructions(e.comp, &std::iter::once(s.id).collect());
    Some(())
}

impl Pass for BlockedScans {
    fn name(&self) -> &str {
        "reduce-window-rewriter"
    }

    fn description(&self) -> &str {
        "rewrites scans (cumulative reduce-windows) longer than 16 into blocks of 16 and an \
         exclusive scan of their totals, XLA:CPU's order"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            // Rounds until no long window is left: each round's exclusive window over the
            // block totals is 16 times shorter than the window it came from.
            loop {
                let found = scans(module, &module.computations[ci]);
                if found.is_empty() {
                    break;
                }
                let comp = &mut module.computations[ci];
                for s in &found {
                    rewrite(comp, &mut names, s).ok_or_else(|| PassError::Unsupported {
                        pass: "reduce-window-rewriter".into(),
                        what: format!(
                            "reduce-window `{}` of a non-array type",
                            comp.instr(s.id).name
                        ),
                    })?;
                }
                edit::repair_order(comp);
                changed = true;
            }
        }
        Ok(changed)
    }
}
