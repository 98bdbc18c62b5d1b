//! Every dot on the GEMM path: [`DotsToGemms`] rewrites each dot that is no
//! [`super::GemmShape`] as it stands into one that is, with the copies that make it so
//! around it, as XLA's CPU compiler canonicalizes dots before its GEMM emitter:
//!
//! - operands whose contracting or free dimensions do not merge (by strides) are
//!   *packed*: transposed into `[batch..., free..., contracting...]` (lhs) or
//!   `[batch..., contracting..., free...]` (rhs), row-major, so that they merge; the
//!   dot's dimension numbers follow the new order and its result keeps its dimensions;
//! - `bf16`/`f16` operands and results stay in their types where the product computes in
//!   `f32` (the GEMM widens the operands as it packs them and rounds the result once, as
//!   XLA:CPU accumulates in `f32`; a packed operand is transposed in its own type); they
//!   are converted to `f64` when a type of the dot is `f64`;
//! - `s8 x s8 -> s32` dots stay in their types where the backend runs integer GEMMs
//!   ([`DotsToGemms::integer_gemms`]: the CPU's, exact wrapping `s32` sums);
//! - other integer dots run as `f32` or `f64` products when every partial sum is exact
//!   there (`K * max|lhs| * max|rhs|` at most `2^24` or `2^53`), the result converted back
//!   (through `s64` where it must wrap to its type); other integer dots stay loops;
//! - dots mixing float and integer types compute in `f32` (`f64` when a type is `f64`),
//!   as XLA and the evaluator do: integer operands converted, an integer result converted
//!   from the float sums (XLA's saturating convert);
//! - a result layout the free dimensions do not merge in is computed row-major and
//!   copied into its layout.
//!
//! Of the ways that make a GEMM, the one copying the fewest elements is taken. Dots in
//! fused computations are left alone ([`super::OutlineFusedGemms`] moves out those that
//! run as GEMMs as they are).

use std::collections::HashSet;

use hlo::attrs::{AttrName, AttrValue, DotDimensionNumbers};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, Instruction};
use hlo::pass::{Pass, PassError};
use hlo::shape::Layout;
use hlo::{CompId, ElementType, InstrId, Module, Opcode, Shape};

use super::gemm::{gemm_form, gemm_shape};

/// The pass: see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct DotsToGemms {
    /// Whether `s8 x s8 -> s32` dots stay integer GEMMs (the CPU backend runs them);
    /// otherwise (the default, every backend) they are computed in `f32` or `f64`.
    pub integer_gemms: bool,
}

impl Pass for DotsToGemms {
    fn name(&self) -> &str {
        "dots-to-gemms"
    }

    fn description(&self) -> &str {
        "rewrites dots that are no library GEMM as they stand (dimensions that do not merge, bf16/f16, integer or mixed types) into transposes and converts around one that is"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let fused: HashSet<CompId> = module
            .computations()
            .flat_map(|(_, c)| {
                c.instructions()
                    .filter(|(_, i)| i.opcode() == Opcode::Fusion)
                    .filter_map(|(_, i)| i.calls())
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut names = NameGen::new(module);
        let mut changed = false;
        let comps: Vec<CompId> = module.computations().map(|(id, _)| id).collect();
        for cid in comps {
            if fused.contains(&cid) {
                continue;
            }
            let dots: Vec<(InstrId, Rewrite)> = module
                .computation(cid)
                .instructions()
                .filter(|(_, i)| i.opcode() == Opcode::Dot && i.operands().len() == 2)
                .filter(|&(id, _)| {
                    gemm_shape(module, cid, id).is_none_or(|s| {
                        s.ty == codegen::kir::ScalarType::S32 && !self.integer_gemms
                    })
                })
                .filter_map(|(id, _)| {
                    Some((id, plan(module.computation(cid), id, self.integer_gemms)?))
                })
                .collect();
            if dots.is_empty() {
                continue;
            }
            let comp = module.computation_mut(cid);
            for (id, rw) in dots {
                let new = rewrite(comp, id, &rw, &mut names);
                edit::replace_uses(comp, id, new);
                edit::remove_instructions(comp, &HashSet::from([id]));
            }
            edit::repair_order(comp);
            changed = true;
        }
        Ok(changed)
    }
}

/// How one dot becomes a GEMM.
#[derive(Clone, Debug, PartialEq)]
struct Rewrite {
    /// The type the product is computed in (`f32`, `f64` or `s32`).
    compute: ElementType,
    /// The types the new dot's lhs, rhs and result are stored in (see [`stored_type`]).
    stored: [ElementType; 3],
    /// Per operand: the order its dimensions are packed in (row-major), if packed.
    pack: [Option<Vec<usize>>; 2],
    /// The new dot's dimension numbers.
    dn: DotDimensionNumbers,
    /// The new dot's result layout.
    layout: Option<Layout>,
    /// Whether the result is then copied into the dot's own layout.
    relayout: bool,
    /// Whether an integer result converts through `s64` (it must wrap to its type).
    via_s64: bool,
}

/// The largest magnitude of an integer type, `None` for other types.
fn max_magnitude(t: ElementType) -> Option<u128> {
    let bits = t.bit_width()?;
    if t.is_signed_integral() {
        Some(1u128 << (bits - 1))
    } else if t.is_unsigned_integral() {
        Some((1u128 << bits) - 1)
    } else {
        None
    }
}

/// The type to compute a dot of operand types `l`, `r` and result type `o` in, with `k`
/// products per sum, and whether an integer result goes through `s64`; `None` when
/// none of `f32`, `f64` and (`integer_gemms`, `s8` operands into `s32`) `s32` computes it
/// as the evaluator does (complex, `pred`, f8 types, integers whose sums may be inexact
/// in `f64`).
fn compute_type(
    (l, r, o): (ElementType, ElementType, ElementType),
    k: u128,
    integer_gemms: bool,
) -> Option<(ElementType, bool)> {
    use ElementType::{BF16, F16, F32, F64, S32, S64, S8};
    let types = [l, r, o];
    let float = |t: &ElementType| matches!(t, F16 | BF16 | F32 | F64);
    if types.iter().all(|t| float(t) || t.is_integral()) && types.iter().any(float) {
        // XLA and the evaluator compute a dot with a float type among its types in
        // floats: integer operands converted, an integer result converted from the sums.
        let ct = if types.contains(&F64) { F64 } else { F32 };
        return Some((ct, false));
    }
    if !types.iter().all(|t| t.is_integral()) {
        return None;
    }
    if integer_gemms && types == [S8, S8, S32] {
        return Some((S32, false));
    }
    let bound = k
        .saturating_mul(max_magnitude(l)?)
        .saturating_mul(max_magnitude(r)?);
    let ct = if bound <= 1 << 24 {
        F32
    } else if bound <= 1 << 53 {
        F64
    } else {
        return None;
    };
    // Every exact sum converts directly when the result type holds all of them;
    // otherwise it goes through `s64` (exact) and wraps to the result's width.
    let fits = if o.is_signed_integral() {
        bound < max_magnitude(o)?
    } else {
        !l.is_signed_integral() && !r.is_signed_integral() && bound <= max_magnitude(o)?
    };
    Some((ct, o != S64 && !fits))
}

/// The type a value of type `t` takes in a GEMM computing in `ct`: `bf16` and `f16` stay
/// as they are in an `f32` product (the GEMM widens them exactly and rounds its `f32`
/// sums once into a half result), `s8` in an `s32` one, anything else becomes `ct`.
fn stored_type(t: ElementType, ct: ElementType) -> ElementType {
    let kept = match ct {
        ElementType::F32 => matches!(t, ElementType::BF16 | ElementType::F16),
        ElementType::S32 => t == ElementType::S8,
        _ => false,
    };
    if kept {
        t
    } else {
        ct
    }
}

/// Element strides of the logical dimensions of `s` (row-major without a layout).
fn strides(s: &Shape) -> Vec<i64> {
    let rank = s.dims().len();
    let m2m: Vec<i64> = s
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_else(|| (0..rank as i64).rev().collect());
    let mut st = vec![0i64; rank];
    let mut acc = 1i64;
    for d in m2m {
        if let Some(x) = usize::try_from(d).ok().filter(|&d| d < rank) {
            st[x] = acc;
            acc = acc.saturating_mul(s.dims()[x]);
        }
    }
    st
}

/// `s` with element type `t` (same dimensions and layout).
fn retyped(s: &Shape, t: ElementType) -> Shape {
    Shape::array_with(t, s.dims().to_vec(), Vec::new(), s.layout().cloned())
}

/// A row-major array shape.
fn row_major(t: ElementType, dims: Vec<i64>) -> Shape {
    let rank = dims.len();
    let mut s = Shape::array(t, dims);
    if rank > 0 {
        s.set_layout(Some(Layout::row_major(rank)));
    }
    s
}

/// How dot `id` of `comp` becomes a GEMM, if it can (integer GEMMs kept where
/// `integer_gemms`).
fn plan(comp: &Computation, id: InstrId, integer_gemms: bool) -> Option<Rewrite> {
    let dot = comp.instr(id);
    let (l, r) = (
        comp.instr(dot.operands()[0]).shape(),
        comp.instr(dot.operands()[1]).shape(),
    );
    let out = dot.shape();
    if l.is_dynamic() || r.is_dynamic() || out.is_dynamic() {
        return None;
    }
    let dn = dot.dot_dimension_numbers();
    let idx =
        |v: &[i64]| -> Option<Vec<usize>> { v.iter().map(|&d| usize::try_from(d).ok()).collect() };
    let (lb, rb) = (idx(&dn.lhs_batch_dims)?, idx(&dn.rhs_batch_dims)?);
    let (lc, rc) = (
        idx(&dn.lhs_contracting_dims)?,
        idx(&dn.rhs_contracting_dims)?,
    );
    let (ld, rd) = (l.dims(), r.dims());
    if lb.len() != rb.len()
        || lc.len() != rc.len()
        || lb.iter().chain(&lc).any(|&d| d >= ld.len())
        || rb.iter().chain(&rc).any(|&d| d >= rd.len())
    {
        return None;
    }
    let k: u128 = lc
        .iter()
        .map(|&d| u128::try_from(ld[d]).ok())
        .try_fold(1u128, |acc, n| Some(acc.saturating_mul(n?)))?;
    let types = (l.element_type()?, r.element_type()?, out.element_type()?);
    let (ct, via_s64) = compute_type(types, k, integer_gemms)?;
    let free = |rank: usize, b: &[usize], c: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|d| !b.contains(d) && !c.contains(d))
            .collect()
    };
    let (lf, rf) = (free(ld.len(), &lb, &lc), free(rd.len(), &rb, &rc));
    let nb = lb.len();
    let nc = lc.len();
    let stored = [
        stored_type(l.element_type()?, ct),
        stored_type(r.element_type()?, ct),
        stored_type(out.element_type()?, ct),
    ];
    let converts = [
        l.element_type() != Some(stored[0]),
        r.element_type() != Some(stored[1]),
    ];
    let elements = |s: &Shape| s.dims().iter().product::<i64>().max(0);
    let mut best: Option<(i64, Rewrite)> = None;
    for relayout in [false, true] {
        for (pl, pr) in [(false, false), (true, false), (false, true), (true, true)] {
            // The order of the contracting pairs in a packed operand: the one they
            // merge in (major first) in the other, unpacked operand, else as listed.
            let mut sigma: Vec<usize> = (0..nc).collect();
            if pl != pr {
                let (st, c) = if pl {
                    (strides(r), &rc)
                } else {
                    (strides(l), &lc)
                };
                sigma.sort_by_key(|&j| std::cmp::Reverse(st[c[j]]));
            }
            let lperm: Vec<usize> = lb
                .iter()
                .chain(&lf)
                .copied()
                .chain(sigma.iter().map(|&j| lc[j]))
                .collect();
            let rperm: Vec<usize> = rb
                .iter()
                .copied()
                .chain(sigma.iter().map(|&j| rc[j]))
                .chain(rf.iter().copied())
                .collect();
            let pos = |j: usize, base: usize| {
                (base + sigma.iter().position(|&s| s == j).unwrap_or(j)) as i64
            };
            let seq = |n: usize| (0..n as i64).collect::<Vec<i64>>();
            let new_dn = DotDimensionNumbers {
                lhs_batch_dims: if pl {
                    seq(nb)
                } else {
                    dn.lhs_batch_dims.clone()
                },
                rhs_batch_dims: if pr {
                    seq(nb)
                } else {
                    dn.rhs_batch_dims.clone()
                },
                lhs_contracting_dims: if pl {
                    (0..nc).map(|j| pos(j, nb + lf.len())).collect()
                } else {
                    dn.lhs_contracting_dims.clone()
                },
                rhs_contracting_dims: if pr {
                    (0..nc).map(|j| pos(j, nb)).collect()
                } else {
                    dn.rhs_contracting_dims.clone()
                },
            };
            let operand = |s: &Shape, packed: bool, perm: &[usize], st: ElementType| {
                if packed {
                    row_major(st, perm.iter().map(|&d| s.dims()[d]).collect())
                } else {
                    retyped(s, st)
                }
            };
            let new_out = if relayout {
                row_major(stored[2], out.dims().to_vec())
            } else {
                retyped(out, stored[2])
            };
            let (nl, nr) = (
                operand(l, pl, &lperm, stored[0]),
                operand(r, pr, &rperm, stored[1]),
            );
            if gemm_form(&nl, &nr, &new_out, &new_dn).is_none() {
                continue;
            }
            // Elements copied: a converted operand is copied anyway (an elementwise
            // convert keeping its layout, else packed by the same copy).
            let cost = if pl || converts[0] { elements(l) } else { 0 }
                + if pr || converts[1] { elements(r) } else { 0 }
                + if relayout { elements(out) } else { 0 };
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((
                    cost,
                    Rewrite {
                        compute: ct,
                        stored,
                        pack: [pl.then_some(lperm), pr.then_some(rperm)],
                        dn: new_dn,
                        layout: new_out.layout().cloned(),
                        relayout,
                        via_s64,
                    },
                ));
            }
        }
        if best.is_some() {
            break;
        }
    }
    best.map(|(_, rw)| rw)
}

/// Adds `op(operands)` of shape `shape` named after `base` to `comp`.
fn add(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    op: Opcode,
    shape: Shape,
    operands: Vec<InstrId>,
) -> InstrId {
    edit::add(
        comp,
        Instruction::new(names.fresh(base), op, shape, operands),
    )
}

/// Operand `x` converted to `ct` and packed in `perm` order (row-major), as needed.
fn prepare(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    x: InstrId,
    ct: ElementType,
    perm: Option<&[usize]>,
) -> InstrId {
    let s = comp.instr(x).shape().clone();
    let mut cur = x;
    if s.element_type() != Some(ct) {
        cur = add(
            comp,
            names,
            base,
            Opcode::Convert,
            retyped(&s, ct),
            vec![cur],
        );
    }
    let Some(perm) = perm else { return cur };
    let packed = row_major(ct, perm.iter().map(|&d| s.dims()[d]).collect());
    if perm.iter().enumerate().any(|(i, &d)| i != d) {
        let t = add(comp, names, base, Opcode::Transpose, packed, vec![cur]);
        let dims = perm.iter().map(|&d| d as i64).collect();
        comp.instr_mut(t)
            .set_attr(AttrName::Dimensions, AttrValue::IntList(dims));
        t
    } else if cur != x {
        // The convert alone packs: it writes row-major.
        comp.instr_mut(cur).set_shape(packed);
        cur
    } else if s.layout() != packed.layout() && packed.rank() > 1 {
        add(comp, names, base, Opcode::Copy, packed, vec![cur])
    } else {
        cur
    }
}

/// Builds rewrite `rw` of dot `id` in `comp`; returns the instruction replacing it.
fn rewrite(comp: &mut Computation, id: InstrId, rw: &Rewrite, names: &mut NameGen) -> InstrId {
    let dot = comp.instr(id).clone();
    let base = dot.name().to_string();
    let [lt, rt, ct] = rw.stored;
    let l = prepare(
        comp,
        names,
        &format!("{base}.lhs"),
        dot.operands()[0],
        lt,
        rw.pack[0].as_deref(),
    );
    let r = prepare(
        comp,
        names,
        &format!("{base}.rhs"),
        dot.operands()[1],
        rt,
        rw.pack[1].as_deref(),
    );
    let mut shape = retyped(dot.shape(), ct);
    shape.set_layout(rw.layout.clone());
    let mut nd = dot.clone();
    nd.users.clear();
    nd.operands = vec![l, r];
    nd.name = names.fresh(&format!("{base}.gemm"));
    nd.set_shape(shape.clone());
    // An algorithm names the operand types; the product is now in `rw.compute`.
    nd.remove_attr(&AttrName::Algorithm);
    for (name, dims) in [
        (AttrName::LhsBatchDims, &rw.dn.lhs_batch_dims),
        (AttrName::RhsBatchDims, &rw.dn.rhs_batch_dims),
        (AttrName::LhsContractingDims, &rw.dn.lhs_contracting_dims),
        (AttrName::RhsContractingDims, &rw.dn.rhs_contracting_dims),
    ] {
        if dims.is_empty() {
            nd.remove_attr(&name);
        } else {
            nd.set_attr(name, AttrValue::IntList(dims.clone()));
        }
    }
    let mut cur = edit::add(comp, nd);
    let ot = dot.shape().element_type().unwrap_or(ct);
    if rw.via_s64 {
        let s = retyped(&shape, ElementType::S64);
        cur = add(
            comp,
            names,
            &format!("{base}.s64"),
            Opcode::Convert,
            s,
            vec![cur],
        );
    }
    if ot != ct {
        let s = retyped(&shape, ot);
        cur = add(
            comp,
            names,
            &format!("{base}.result"),
            Opcode::Convert,
            s,
            vec![cur],
        );
    }
    if rw.relayout {
        cur = add(
            comp,
            names,
            &format!("{base}.relayout"),
            Opcode::Copy,
            (*dot.shape).clone(),
            vec![cur],
        );
    }
    cur
}
