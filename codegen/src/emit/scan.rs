//! Scans: a kernel whose root reaches a cumulative `reduce-window`
//! ([`fusion::ops::Scan`]: `jnp.cumsum`, `cumprod`, `cummax`, `cummin`, their reverse forms)
//! through elementwise ops of its shape walks the scanned dimension once, carrying the
//! running value of every scan line in an accumulator, instead of reducing a whole window
//! per output element (`n` steps per line, not `n²/2`).
//!
//! A block computes a tile of adjacent lines: the lines along the *lane* dimension, the
//! output's physically most-minor dimension other than the scanned one. When that
//! dimension is contiguous (the scan runs along a major dimension), each step of the scan
//! is a loop over the tile's lanes with the accumulators in a local array, which the C
//! compiler vectorizes; when the scan runs along the contiguous dimension, a tile holds a
//! few lines, each with its accumulator in a variable of its own, interleaved in one loop
//! so that their chains of dependent operations overlap. The blocks (every index of the
//! other dimensions times the tiles) are independent and split across threads.
//!
//! Every output of a prefix scan is the reduce-window's own fold (init, then the elements in
//! window order), so any reducer, variadic ones included, gives exactly the reference
//! evaluator's value. A suffix scan folds from the end, which only an associative and
//! commutative reducer ([`hlo::ir::reducer`]) whose result does not depend on the order
//! allows (not float sums and products: those reach the general window emitter, which folds
//! each window from its start as XLA does). Scans longer than 16 arrive rewritten into
//! XLA:CPU's blocks (`hlo-transforms`' `reduce-window-rewriter`).

use affine::{Expr, Interval, Var};
use hlo::{CompId, InstrId, Opcode};

use super::assemble::{finish_grid, store_outputs, EmittedKernel};
use super::builder::Builder;
use super::elemental::Applied;
use crate::error::CodegenError;
use crate::kir::{Guard, ScalarType, Stmt, Value, VarId};

/// How a kernel computes its scans.
pub(crate) struct ScanPlan {
    /// The scans evaluated jointly (at the kernel's index): one dimension and direction.
    heroes: Vec<InstrId>,
    /// Their scan.
    scan: fusion::ops::Scan,
}

impl Builder<'_> {
    /// The scan plan of a kernel computing `root` of `comp` over `dims`, or `None` when
    /// the kernel is no scan: a scan ([`fusion::ops::scan`]) of the kernel's shape must be
    /// reached from the root through elementwise ops of that shape, and all such scans must
    /// run along one dimension in one direction. A suffix scan needs a single input and a
    /// reducer [`hlo::ir::reducer::classify`] recognises.
    pub(crate) fn scan_plan(&self, comp: CompId, root: InstrId, dims: &[i64]) -> Option<ScanPlan> {
        let c = self.module.computation(comp);
        let mut heroes = Vec::new();
        let mut found: Option<fusion::ops::Scan> = None;
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = stack.pop() {
            // A leaf (an unfused kernel's operand) is read from its buffer.
            if !seen.insert(id) || self.leaves.contains_key(&(comp, id)) {
                continue;
            }
            let instr = c.instr(id);
            match instr.opcode() {
                Opcode::Tuple | Opcode::GetTupleElement => stack.extend(instr.operands()),
                Opcode::ReduceWindow => {
                    let Some(scan) = fusion::ops::scan(instr) else {
                        continue;
                    };
                    let inputs = instr.operands().len() / 2;
                    let out_dims = c.instr(*instr.operands().first()?).shape().dims();
                    if out_dims != dims || found.is_some_and(|f| f != scan) {
                        return None;
                    }
                    if scan.reverse && !self.folds_in_any_order(instr, inputs) {
                        return None;
                    }
                    found = Some(scan);
                    heroes.push(id);
                }
                op if op.is_elementwise() && op != Opcode::BitcastConvert => {
                    let same = instr
                        .operands()
                        .iter()
                        .copied()
                        .filter(|&o| c.instr(o).shape().dims() == dims);
                    stack.extend(same);
                }
                _ => {}
            }
        }
        heroes.sort();
        Some(ScanPlan {
            heroes,
            scan: found?,
        })
    }
}

impl Builder<'_> {
    /// Whether a suffix scan may fold from the end, where `reduce-window` folds each window
    /// from its start: one input and a reducer whose result does not depend on the order —
    /// not a float sum or product (XLA's blocked scans leave windows of 16 whose own order
    /// sets the bits, `hlo::ir::blocked_scan`).
    fn folds_in_any_order(&self, instr: &hlo::Instruction, inputs: usize) -> bool {
        use hlo::ir::reducer::Reducer;
        let Some(r) = instr
            .to_apply()
            .and_then(|c| hlo::ir::reducer::classify(self.module, c))
        else {
            return false;
        };
        let float = instr
            .shape()
            .element_type()
            .is_some_and(|t| t.is_float() || t.is_complex());
        inputs == 1 && !(float && matches!(r, Reducer::Add | Reducer::Mul))
    }
}

/// The lanes of one tile: how many, where the first one is along the lane dimension, and
/// whether they share a loop over a local array (contiguous) or each have variables of
/// their own (strided, or no lane dimension).
#[derive(Clone, Copy)]
struct Tile {
    len: i64,
    base: Expr,
    contiguous: bool,
}

/// The lane tile for a lane dimension of `extent` elements, `outer` blocks besides, under
/// the target's scan lanes `p` ([`crate::target::ScanLanes`]): a contiguous one as large
/// as keeps `min_blocks` blocks, from `min_lanes` to `max_lanes` lanes (at most the
/// extent), a divisor of the extent when one is near; a strided one `strided_lanes`.
fn tile_size(extent: i64, outer: i64, contiguous: bool, p: &crate::target::ScanLanes) -> i64 {
    if !contiguous {
        return extent.min(p.strided_lanes);
    }
    let tiles = ((p.min_blocks + outer - 1) / outer).max(1);
    let want = ((extent + tiles - 1) / tiles + 15) / 16 * 16;
    let want = want.clamp(p.min_lanes, p.max_lanes).min(extent);
    super::builder::near_divisor(extent, want)
}

/// A scan kernel ([`ScanPlan`]) computing `root` into `out_bufs` over `dims` in physical
/// `order` (most major first).
#[allow(clippy::too_many_arguments)]
pub(super) fn scan_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    root: (CompId, InstrId),
    out_bufs: &[usize],
    plan: ScanPlan,
    dims: &[i64],
    order: &[usize],
) -> Result<EmittedKernel, CodegenError> {
    let s = plan.scan.dim;
    let strides = b.buffers[out_bufs[0]].strides();
    // The lane dimension: the most minor other dimension with more than one index.
    let lane = order.iter().rev().copied().find(|&d| d != s && dims[d] > 1);
    let outer: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&d| d != s && Some(d) != lane && dims[d] > 1)
        .collect();
    let outer_count: i64 = outer.iter().map(|&d| dims[d]).product();
    let (extent, contiguous) = match lane {
        // Fewer contiguous lanes than a vector's worth are interleaved lines too: a loop
        // over a handful of lanes would carry each chain through memory.
        Some(l) => (
            dims[l],
            strides[l] == 1 && dims[l] >= 2 * b.target.scan.strided_lanes,
        ),
        None => (1, false),
    };
    let len = tile_size(extent, outer_count, contiguous, &b.target.scan);
    let (full, rest) = (extent / len, extent % len);
    let tiles = full + i64::from(rest > 0);
    let blocks = outer_count * tiles;
    let g = b.new_range(Interval::new(0, blocks - 1));
    // Block g: the outer dimensions' indices (major to minor), then the tile.
    let mut index = vec![Expr::constant(0); dims.len()];
    let mut place = tiles;
    for &d in outer.iter().rev() {
        index[d] = b.simplify(
            Expr::var(g)
                .floor_div(Expr::constant(place))
                .modulo(Expr::constant(dims[d])),
        );
        place *= dims[d];
    }
    let tile = b.simplify(Expr::var(g).modulo(Expr::constant(tiles)));
    let direction = if plan.scan.reverse {
        "suffix"
    } else {
        "prefix"
    };
    let lanes_note = match lane {
        Some(l) if contiguous => format!("tiles of {len} contiguous lines along d{l}"),
        Some(l) => format!("tiles of {len} interleaved lines along d{l}"),
        None => "one line".to_string(),
    };
    let title = format!(
        "{title}\nscan: {direction} of d{s} ({} steps), {lanes_note}, one block per tile",
        dims[s]
    );
    let full_tile = Tile {
        len,
        base: b.simplify(tile * Expr::constant(len)),
        contiguous,
    };
    let body = if rest > 0 {
        let guard = Guard {
            conds: vec![(tile, 0, full - 1)],
        };
        b.guards.push(guard.clone());
        let first =
            b.in_memo_frame(|b| tile_stmts(b, root, out_bufs, &plan, (&index, lane), full_tile));
        b.guards.pop();
        let last = Tile {
            len: rest,
            base: Expr::constant(full * len),
            contiguous,
        };
        let else_body =
            b.in_memo_frame(|b| tile_stmts(b, root, out_bufs, &plan, (&index, lane), last))?;
        vec![Stmt::If {
            guard,
            body: first?,
            else_body,
        }]
    } else {
        b.in_memo_frame(|b| tile_stmts(b, root, out_bufs, &plan, (&index, lane), full_tile))?
    };
    finish_grid(b, name, title, body, Some((g, blocks)))
}

/// The statements of one tile: the accumulators of every lane and hero set to the heroes'
/// initial values, then the scan loop, each step combining every lane's element and
/// storing the outputs computed from the running values. `index` holds the outer
/// dimensions' indices (the scanned and lane dimensions are filled in here). Callers run it in a memo frame of
/// its own ([`Builder::in_memo_frame`]).
fn tile_stmts(
    b: &mut Builder<'_>,
    root: (CompId, InstrId),
    out_bufs: &[usize],
    plan: &ScanPlan,
    (index, lane): (&[Expr], Option<usize>),
    tile: Tile,
) -> Result<Vec<Stmt>, CodegenError> {
    let comp = root.0;
    let s = plan.scan.dim;
    let n = b.buffers[out_bufs[0]].dims[s];
    let step_var = b.new_range(Interval::new(0, n - 1));
    let at_step = if plan.scan.reverse {
        Expr::constant(n - 1) - Expr::var(step_var)
    } else {
        Expr::var(step_var)
    };
    let mut body = Vec::new();
    // The heroes' initial values (scalars), read once per tile.
    let mut inits: Vec<Vec<Value>> = Vec::with_capacity(plan.heroes.len());
    for &hero in &plan.heroes {
        let instr = b.module.computation(comp).instr(hero);
        let k = instr.operands().len() / 2;
        let ops: Vec<InstrId> = instr.operands()[k..].to_vec();
        let mut vals = Vec::with_capacity(k);
        for op in ops {
            vals.push(b.value(comp, op, &[], false, &mut body)?);
        }
        inits.push(vals);
    }
    let at = |b: &Builder<'_>, lane_at: Expr| -> Vec<Expr> {
        let mut idx = index.to_vec();
        idx[s] = b.simplify(at_step);
        if let Some(l) = lane {
            idx[l] = b.simplify(lane_at);
        }
        idx
    };
    let mut scan_body = Vec::new();
    if tile.contiguous {
        // Lanes in a loop, accumulators in local arrays.
        let j = b.new_range(Interval::new(0, tile.len - 1));
        let mut locals = Vec::new();
        let mut init_body = Vec::new();
        for (h, &hero) in plan.heroes.iter().enumerate() {
            let hname = b.module.computation(comp).instr(hero).name().to_string();
            let mut ls = Vec::new();
            for (k, init) in inits[h].iter().enumerate() {
                let ty = init.ty();
                let l = b.new_local(format!("{hname} running values {k}"), ty, tile.len);
                init_body.push(Stmt::LocalStore {
                    local: l,
                    offset: Expr::var(j),
                    value: init.clone(),
                });
                ls.push((l, ty));
            }
            locals.push(ls);
        }
        body.push(loop_over(j, tile.len, init_body));
        let idx = at(b, tile.base + Expr::var(j));
        let mut step = Vec::new();
        let mut accs = Vec::new();
        for ls in &locals {
            let mut vs = Vec::new();
            for &(l, ty) in ls {
                let var = b.new_var(ty);
                step.push(Stmt::Decl {
                    var,
                    value: Value::LocalLoad {
                        local: l,
                        offset: Expr::var(j),
                        ty,
                    },
                });
                vs.push((var, ty));
            }
            accs.push(vs);
        }
        lane_step(b, root, out_bufs, plan, &idx, &accs, &mut step)?;
        for (ls, vs) in locals.iter().zip(&accs) {
            for (&(l, _), &(var, ty)) in ls.iter().zip(vs) {
                step.push(Stmt::LocalStore {
                    local: l,
                    offset: Expr::var(j),
                    value: Value::Var(var, ty),
                });
            }
        }
        scan_body.push(loop_over(j, tile.len, step));
    } else {
        // Each lane's accumulators in variables of their own, lanes interleaved.
        let mut lanes = Vec::with_capacity(tile.len as usize);
        for _ in 0..tile.len {
            let mut per_hero = Vec::with_capacity(inits.len());
            for hero_inits in &inits {
                let mut vs = Vec::with_capacity(hero_inits.len());
                for init in hero_inits {
                    let ty = init.ty();
                    let var = b.new_var(ty);
                    body.push(Stmt::Decl {
                        var,
                        value: init.clone(),
                    });
                    vs.push((var, ty));
                }
                per_hero.push(vs);
            }
            lanes.push(per_hero);
        }
        for (u, accs) in lanes.iter().enumerate() {
            let idx = at(b, tile.base + Expr::constant(u as i64));
            lane_step(b, root, out_bufs, plan, &idx, accs, &mut scan_body)?;
        }
    }
    body.push(loop_over(step_var, n, scan_body));
    Ok(body)
}

/// One lane's step at `index`: every hero's accumulators `accs` combined with its inputs
/// there (the reducer applied in the reduce-window's order: running value first), the
/// heroes' values at `index` memoized as the accumulators, and the outputs stored.
fn lane_step(
    b: &mut Builder<'_>,
    root: (CompId, InstrId),
    out_bufs: &[usize],
    plan: &ScanPlan,
    index: &[Expr],
    accs: &[Vec<(VarId, ScalarType)>],
    out: &mut Vec<Stmt>,
) -> Result<(), CodegenError> {
    let comp = root.0;
    b.in_memo_frame(|b| {
        for (&hero, vs) in plan.heroes.iter().zip(accs) {
            let red = b
                .module
                .computation(comp)
                .instr(hero)
                .to_apply()
                .ok_or_else(|| b.unsupported("reduce-window", "no reducer computation"))?;
            // The window's last element is the input at the output's own index.
            let access: Vec<Applied> = vs
                .iter()
                .map(|_| Applied {
                    index: index.to_vec(),
                    guard: Guard::default(),
                    ranges: vec![],
                })
                .collect();
            b.in_memo_frame(|b| b.reduce_body(comp, hero, red, &access, vs, out))?;
            let vals = vs.iter().map(|&(v, t)| Value::Var(v, t)).collect();
            b.memo_put((comp, hero, index.to_vec()), vals);
        }
        store_outputs(b, root, out_bufs, index, out)
    })
}

/// `for var in [0, len - 1] { body }`.
fn loop_over(var: Var, len: i64, body: Vec<Stmt>) -> Stmt {
    Stmt::Loop {
        kind: crate::kir::LoopKind::Serial,
        var,
        lo: 0,
        hi: len - 1,
        body,
    }
}
