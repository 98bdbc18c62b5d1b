//! In-place kernels proven by the indexing maps (issue 32 item 2): a kernel may write
//! output `k` over the buffer of operand `j` when `j` dies at that kernel, both have the
//! same bytes in the same physical order, and the composed output-to-operand maps say that
//! output element `i` reads operand `j` at element `i` only (the physical map is the
//! identity). Then no element of `j` is read for any other output element, so each is read
//! before (or while) the one output element that depends on it is written; nothing else of
//! the kernel reads `j` (no other output reads it at all). The program builder collects the
//! candidates ([`shareable_operands`]) while it emits kernels; once the whole entry sequence
//! is known, [`accept`] keeps those whose operand dies at the kernel; where the assignment
//! keeps them ([`super::assign::assign_best`]), [`mark`] makes the kernel's parameter
//! [`Access::InOut`] (its memory is written, through the output's pointer), so that the C
//! printer declares none of the kernel's written pointers `restrict` (its inputs keep it)
//! and the CUDA printer none of its pointers.

use affine::{Expr, MapForm};
use codegen::kir::{Access, Kernel};
use hlo::{InstrRef, Shape};

use crate::{Buffer, BufferId, Program, Thunk};

/// A kernel output that may live in an operand's buffer, found while building.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The kernel (index into the program's kernels).
    pub kernel: usize,
    /// The output buffer the kernel writes.
    pub output: BufferId,
    /// The operand buffer it may write over.
    pub operand: BufferId,
}

/// The dimensions of an array shape in physical order (most major first), or `None` for a
/// tuple or a layout that is not a plain permutation (tiles and the like).
fn physical_dims(shape: &Shape) -> Option<Vec<i64>> {
    let arr = shape.as_array()?;
    let dims = arr.dims();
    let Some(layout) = shape.layout() else {
        return Some(dims.to_vec());
    };
    if !layout.is_plain() || !layout.is_permutation_of(dims.len()) {
        return None;
    }
    layout
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| usize::try_from(d).ok().and_then(|d| dims.get(d).copied()))
        .collect()
}

/// The array shape of output `k` of an instruction (tuple element `k`, or the array).
fn output_shape(shape: &Shape, k: usize) -> Option<&Shape> {
    if shape.is_tuple() {
        shape.tuple_shapes().get(k)
    } else {
        (k == 0).then_some(shape)
    }
}

/// Whether every map of `set` sends physical output index `i` to physical operand index
/// `i` only: the results are `(d0, ..., dn-1)` over `rank` dimensions (range variables and
/// constraints may remain: they select whether element `i` is read, never another one).
fn identity_only(set: &indexing::OperandIndexing, rank: usize) -> bool {
    !set.is_undefined()
        && set.maps().all(|m| {
            m.map.form() == MapForm::Normal
                && m.map.dims().len() == rank
                && m.map.results().len() == rank
                && m.map
                    .results()
                    .iter()
                    .enumerate()
                    .all(|(i, &e)| u32::try_from(i).is_ok_and(|i| e == Expr::dim(i)))
        })
}

/// Whether a set holds no map: the output does not read the operand.
fn reads_nothing(set: &indexing::OperandIndexing) -> bool {
    !set.is_undefined() && set.maps().next().is_none()
}

/// The pairs `(output k, operand j)` of `instr` (a kernel's instruction, a fusion or a
/// single op) where output `k` may be written over operand `j`'s bytes: the same physical
/// dimensions and element width, every map from output `k` to operand `j` the physical
/// identity, and no other output reading operand `j`. Empty where the maps cannot be
/// computed.
pub fn shareable_operands(instr: &InstrRef<'_>) -> Vec<(usize, usize)> {
    let Ok(maps) = indexing::output_to_input_physical(instr) else {
        return Vec::new();
    };
    let shape = instr.instr().shape();
    let c = instr.computation();
    let mut out = Vec::new();
    for (k, g) in maps.iter().enumerate() {
        let Some(out_shape) = output_shape(shape, k) else {
            continue;
        };
        let Some(out_dims) = physical_dims(out_shape) else {
            continue;
        };
        let out_width = out_shape.element_type().and_then(|t| t.bit_width());
        for (j, set) in g.operands.iter().enumerate() {
            let Some(&op) = instr.instr().operands().get(j) else {
                continue;
            };
            let op_shape = c.instr(op).shape();
            let same_bytes = physical_dims(op_shape).as_ref() == Some(&out_dims)
                && out_width.is_some()
                && op_shape.element_type().and_then(|t| t.bit_width()) == out_width;
            let others_silent = maps
                .iter()
                .enumerate()
                .filter(|&(m, _)| m != k)
                .all(|(_, o)| o.operands.get(j).is_some_and(reads_nothing));
            if same_bytes && others_silent && identity_only(set, out_dims.len()) {
                out.push((k, j));
            }
        }
    }
    out
}

/// The candidates whose kernel is a kernel thunk (not streamed into a GEMM) at the step
/// the output is defined, of the entry sequence or nested in a loop or conditional, whose
/// operand is a temporary that dies there with the output's size (no other thunk reads it
/// after), one operand per output and one output per operand, its kernel parameters all
/// read-only ones.
pub fn accept(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    candidates: &[Candidate],
) -> Vec<Candidate> {
    let (mut written, mut overwritten) = (
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
    );
    let mut accepted = Vec::new();
    // What both levels ask besides where the operand dies: the kernel names both buffers,
    // neither has an allocation yet, the bytes match, each output and operand is paired
    // once, and the kernel only reads the operand's other parameters.
    let mut take = |c: &Candidate, args: &[BufferId], dies_there: bool| {
        let (o, b) = (&buffers[c.output], &buffers[c.operand]);
        let fits = dies_there
            && c.output != c.operand
            && args.contains(&c.output)
            && args.contains(&c.operand)
            && b.allocation == usize::MAX
            && o.allocation == usize::MAX
            && b.bytes == o.bytes
            && !written.contains(&c.output)
            && !overwritten.contains(&c.operand);
        if fits && reads_only(kernels, c, args) {
            written.insert(c.output);
            overwritten.insert(c.operand);
            accepted.push(*c);
        }
    };
    for c in candidates {
        let (o, b) = (&buffers[c.output], &buffers[c.operand]);
        let Some(t) = o.defined_at else {
            continue;
        };
        let Some(Thunk::Kernel { kernel, args, .. }) = thunks.get(t) else {
            continue;
        };
        let dies_there =
            *kernel == c.kernel && b.defined_at.is_some_and(|d| d < t) && b.last_use == Some(t);
        take(c, args, dies_there);
    }
    // Kernels inside loop bodies, conditions and branches: the builder's entry indices
    // give all their values the loop's or conditional's index; their steps
    // ([`super::steps`]) tell them apart. The operand is a value of that sequence first
    // named before the kernel and last by it (loop state, initial values and results
    // live through the whole loop or conditional, so they never qualify).
    let steps = super::steps::live_steps(thunks, buffers);
    let leaves = super::steps::nested_leaves(thunks);
    for c in candidates {
        let (Some(&(Some(od), _)), Some(&(Some(bd), Some(bl)))) =
            (steps.get(c.output), steps.get(c.operand))
        else {
            continue;
        };
        let Some(args) = leaves.iter().find_map(|&(s, t)| match t {
            Thunk::Kernel { kernel, args, .. } if s == od && *kernel == c.kernel => Some(args),
            _ => None,
        }) else {
            continue;
        };
        take(c, args, bd < od && bl == od);
    }
    accepted
}

/// Whether every parameter of the candidate's kernel bound to its operand is read-only
/// (the kernel IR describes each argument).
fn reads_only(kernels: &[Kernel], c: &Candidate, args: &[BufferId]) -> bool {
    kernels.get(c.kernel).is_some_and(|k| {
        args.len() == k.buffers.len()
            && args
                .iter()
                .zip(&k.buffers)
                .all(|(&a, p)| a != c.operand || p.access == Access::In)
    })
}

/// Marks the operand parameters of every accepted candidate's kernel [`Access::InOut`]:
/// its memory is written (through the output's pointer), so the printers declare no
/// written pointer of that kernel `restrict`. Every parameter holding the operand is
/// marked: no `in` parameter then shares bytes with a written one, which lets the C
/// printer keep `restrict` on the inputs.
pub fn mark(thunks: &[Thunk], kernels: &mut [Kernel], accepted: &[Candidate]) {
    let leaves = super::steps::nested_leaves(thunks);
    for c in accepted {
        let args = thunks
            .iter()
            .chain(leaves.iter().map(|l| l.1))
            .find_map(|t| match t {
                Thunk::Kernel { kernel, args, .. } if *kernel == c.kernel => Some(args),
                _ => None,
            });
        let (Some(args), Some(k)) = (args, kernels.get_mut(c.kernel)) else {
            continue;
        };
        for (&a, p) in args.iter().zip(k.buffers.iter_mut()) {
            if a == c.operand {
                p.access = Access::InOut;
            }
        }
    }
}

/// Where a buffer's bytes lie: (region, offset), the region the temp block (`None`), an
/// allocation of its own or the output allocation holding it.
pub(super) fn place(p: &Program, b: BufferId) -> Option<(Option<usize>, u64)> {
    let a = p.allocations.get(p.buffers.get(b)?.allocation)?;
    Some(match a.offset {
        Some(o) => (a.parent, o),
        None => (Some(p.buffers[b].allocation), 0),
    })
}

/// The step at which an in-place kernel writes its output over buffer `b`: `b`'s last use
/// is a kernel that marks it [`Access::InOut`] and defines another of its arguments at
/// the same place. From that step on its bytes count as the output's.
pub fn overwritten_at(p: &Program, b: BufferId) -> Option<usize> {
    let t = p.buffers.get(b)?.last_use?;
    let Some(Thunk::Kernel { kernel, args, .. }) = p.thunks.get(t) else {
        return None;
    };
    let params = &p.kernels.get(*kernel)?.buffers;
    let marked = args
        .iter()
        .zip(params)
        .any(|(&a, bp)| a == b && bp.access == Access::InOut);
    let at = place(p, b)?;
    let taken = args
        .iter()
        .any(|&o| o != b && p.buffers[o].defined_at == Some(t) && place(p, o) == Some(at));
    (marked && taken).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#"HloModule m
fused_two {
  x = f32[4,8] parameter(0)
  y = f32[4,8] parameter(1)
  e = f32[4,8] exponential(x)
  ROOT t = (f32[4,8], f32[4,8]) tuple(e, y)
}
fused_mixed {
  x = f32[4,8] parameter(0)
  tr = f32[8,4] transpose(x), dimensions={1,0}
  bt = f32[4,8] transpose(tr), dimensions={1,0}
  ROOT s = f32[4,8] add(x, bt)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  q = f32[8] parameter(1)
  a = f32[4,8] exponential(p)
  b = f32[4,8] add(a, p)
  bc = f32[4,8] broadcast(q), dimensions={1}
  c = f32[4,8] multiply(b, bc)
  tr = f32[8,4] transpose(c), dimensions={1,0}
  rv = f32[4,8] reverse(c), dimensions={1}
  sl = f32[2,8] slice(c), slice={[0:2], [0:8]}
  cv = s32[4,8] convert(c)
  lay = f32[4,8]{0,1} negate(c)
  f2 = (f32[4,8], f32[4,8]) fusion(c, c), kind=kLoop, calls=fused_two
  mx = f32[4,8] fusion(c), kind=kLoop, calls=fused_mixed
  ROOT r = (f32[8,4], f32[4,8], f32[2,8], s32[4,8], f32[4,8]{0,1}, (f32[4,8], f32[4,8]), f32[4,8], f32[4,8]) tuple(tr, rv, sl, cv, lay, f2, mx, bc)
}
"#;

    fn pairs(m: &hlo::Module, name: &str) -> Vec<(usize, usize)> {
        shareable_operands(&m.instr(name).unwrap())
    }

    #[test]
    fn only_identity_maps_of_equal_bytes_share() {
        let m = hlo::parse_module(MODULE).unwrap();
        // Elementwise: every operand of the same shape and width.
        assert_eq!(pairs(&m, "a"), [(0, 0)]);
        assert_eq!(pairs(&m, "b"), [(0, 0), (0, 1)]);
        // The broadcast operand is smaller; the elementwise one is read at the identity.
        assert_eq!(pairs(&m, "c"), [(0, 0), (0, 1)]);
        assert_eq!(pairs(&m, "bc"), []);
        // Same bytes, another element: never in place.
        assert_eq!(pairs(&m, "tr"), []);
        assert_eq!(pairs(&m, "rv"), []);
        assert_eq!(pairs(&m, "sl"), []);
        // s32 and f32 have one width: the bits are read before they are written.
        assert_eq!(pairs(&m, "cv"), [(0, 0)]);
        // Another physical order: element i of the output is another element in memory.
        assert_eq!(pairs(&m, "lay"), []);
        // Two outputs: output 0 reads operand 0, output 1 operand 1, each alone.
        assert_eq!(pairs(&m, "f2"), [(0, 0), (1, 1)]);
        // A transpose of a transpose reads element i again: the maps compose to it.
        assert_eq!(pairs(&m, "mx"), [(0, 0)]);
    }

    #[test]
    fn shared_pairs_read_only_their_own_element_by_enumeration() {
        // Independent of the symbolic check: every map of a shared pair, evaluated at
        // every output index, reads that index only.
        let m = hlo::parse_module(MODULE).unwrap();
        for name in ["a", "b", "c", "cv", "f2", "mx"] {
            let instr = m.instr(name).unwrap();
            let maps = indexing::output_to_input_physical(&instr).unwrap();
            for (k, j) in shareable_operands(&instr) {
                for im in maps[k].operands[j].maps() {
                    let map = &im.map;
                    assert!(map.runtimes().is_empty(), "{name}");
                    // Every point of dimensions and range variables together.
                    let bounds: Vec<_> = map.dims().iter().chain(map.ranges()).collect();
                    let mut at: Vec<i64> = bounds.iter().map(|b| b.lo).collect();
                    'points: loop {
                        let (dims, ranges) = at.split_at(map.dims().len());
                        let point = affine::Point {
                            dims,
                            ranges,
                            runtimes: &[],
                        };
                        if map.contains_point(&point).unwrap() {
                            assert_eq!(map.evaluate(&point).unwrap(), dims, "{name}");
                        }
                        for i in (0..at.len()).rev() {
                            if at[i] < bounds[i].hi {
                                at[i] += 1;
                                continue 'points;
                            }
                            at[i] = bounds[i].lo;
                        }
                        break;
                    }
                }
            }
        }
    }
}
