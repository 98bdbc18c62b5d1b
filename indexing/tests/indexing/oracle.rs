//! The evaluator oracle: for small modules covering every op family, find which input
//! elements each output element really depends on by perturbing one input element at a
//! time and re-running the reference evaluator (`hlo_eval`), and check that the image of
//! the analysis' maps (with runtime variables read through their provenance from the actual
//! inputs) contains exactly those elements (`Exact`), or at least them (`Superset`, with the
//! reason). Perturbation can only show a dependence, never rule one out, so a superset
//! check is sound for every map; the exact check also catches maps that claim too much.

use std::collections::{BTreeMap, BTreeSet};

use affine::enumerate::for_each_in_box;
use affine::{Interval, Point};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Module, Shape};
use indexing::{IndexedMap, OperandIndexing};
use testkit::rng::XorShift;

mod values;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// The map's image equals the observed dependencies.
    Exact,
    /// The map's image contains them; the string says why it may contain more.
    Superset(&'static str),
    /// Not perturbed (index operands: their values position reads; they are checked
    /// through the runtime variables of the other operands' maps).
    Skip,
}
use Mode::*;

struct Case {
    name: &'static str,
    hlo: &'static str,
    /// Values of integer parameters, by parameter number (others random in [-3, 12]).
    ints: &'static [(usize, &'static [i32])],
    /// Mode per operand of the root.
    modes: &'static [Mode],
}

/// Values in [0.5, 2.5) with a random sign: never zero, rarely tied, and off the
/// round numbers (like -1) that an intermediate `x + 1` would cancel to zero.
fn random_float(rng: &mut XorShift) -> f32 {
    let x = 0.5 + ((rng.next_u64() % 2_000_000) as f32 + 0.37) / 1_000_000.0;
    if rng.next_u64() & 1 == 0 {
        x
    } else {
        -x
    }
}

fn array(shape: &Shape, data: ArrayData) -> Literal {
    let s = Shape::array(shape.element_type().unwrap(), shape.dims().to_vec());
    Literal::Array(ArrayLiteral::new(s, data).expect("literal fits"))
}

fn args_for(module: &Module, ints: &[(usize, &[i32])], rng: &mut XorShift) -> Option<Vec<Literal>> {
    let entry = module.entry();
    let mut args = Vec::new();
    for n in 0..entry.parameters().len() {
        let shape = entry.instr(entry.parameter(n).unwrap()).shape().clone();
        let count = shape.element_count().unwrap() as usize;
        let data = match shape.element_type().unwrap() {
            ElementType::F32 => ArrayData::F32((0..count).map(|_| random_float(rng)).collect()),
            ElementType::S32 => ArrayData::S32(match ints.iter().find(|(p, _)| *p == n) {
                Some((_, v)) => v.to_vec(),
                None => (0..count)
                    .map(|_| (rng.next_u64() % 16) as i32 - 3)
                    .collect(),
            }),
            ElementType::Pred => {
                ArrayData::Pred((0..count).map(|_| rng.next_u64() & 1 == 0).collect())
            }
            ty => values::random_data(ty, count, &mut || rng.next_u64())?,
        };
        args.push(array(&shape, data));
    }
    Some(args)
}

/// Output `k` of a result as a flat list of exact bit patterns.
fn output_bits(result: &Literal, k: usize) -> Vec<(u64, u64)> {
    let lit = match result {
        Literal::Tuple(t) => &t[k],
        l => l,
    };
    let a = lit.as_array().expect("array output");
    (0..a.data().len())
        .map(|i| values::element_bits(a, i))
        .collect()
}

fn output_count(result: &Literal) -> usize {
    match result {
        Literal::Tuple(t) => t.len(),
        _ => 1,
    }
}

fn linear(idx: &[i64], dims: &[i64]) -> Option<usize> {
    let mut l = 0i64;
    for (&i, &n) in idx.iter().zip(dims) {
        if i < 0 || i >= n {
            return None;
        }
        l = l * n + i;
    }
    Some(l as usize)
}

/// The entry parameter number holding the value of a runtime variable's producer.
fn producer_param(module: &Module, rv: &indexing::RuntimeVar) -> Option<usize> {
    let c = module.computation(rv.computation);
    let p = c.instr(rv.producer);
    let n = p.parameter_number()? as usize;
    if rv.computation == module.entry_id() {
        return Some(n);
    }
    // A parameter of a fused or called computation: the matching operand of the entry's
    // caller.
    let entry = module.entry();
    let caller = entry
        .instructions()
        .find(|(_, i)| i.called_computations_iter().any(|c| c == rv.computation))?
        .1;
    entry
        .instr(caller.operand(n)?)
        .parameter_number()
        .map(|x| x as usize)
}

/// The value a runtime variable reads: an entry parameter's argument, or an index computed
/// inside the fusion the entry calls (evaluated by making its producer the root of the
/// fused computation, run on the fusion's arguments). `None` for producers elsewhere.
fn runtime_value(module: &Module, rv: &indexing::RuntimeVar, args: &[Literal]) -> Option<Literal> {
    if let Some(n) = producer_param(module, rv) {
        return Some(args[n].clone());
    }
    let entry = module.entry();
    let caller = entry
        .instructions()
        .find(|(_, i)| i.called_computations_iter().any(|c| c == rv.computation))?
        .1;
    // The standalone entry passes its parameters to the fusion in order.
    let in_order = caller
        .operands()
        .iter()
        .enumerate()
        .all(|(k, &o)| entry.instr(o).parameter_number() == Some(k as i64));
    if !in_order {
        return None;
    }
    let mut m = module.clone();
    m.computation_mut(rv.computation)
        .set_root(rv.producer)
        .ok()?;
    m.set_entry(rv.computation).ok()?;
    hlo_eval::evaluate(&m, args).ok()
}

/// The entry parameters whose values a runtime variable depends on: its producer's, or
/// every parameter of the fused computation its computed index is reached from.
fn runtime_params(module: &Module, rv: &indexing::RuntimeVar) -> BTreeSet<usize> {
    if let Some(n) = producer_param(module, rv) {
        return BTreeSet::from([n]);
    }
    let c = module.computation(rv.computation);
    let mut out = BTreeSet::new();
    let mut stack = vec![rv.producer];
    let mut seen = BTreeSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let i = c.instr(id);
        if let Some(n) = i.parameter_number() {
            out.insert(n as usize);
        }
        stack.extend(i.operands().iter().copied());
    }
    out
}

/// `image[output element] = operand elements` of one map, with runtime variables read from
/// the actual arguments.
fn image(
    module: &Module,
    m: &IndexedMap,
    out_dims: &[i64],
    operand_dims: &[i64],
    args: &[Literal],
    into: &mut BTreeMap<usize, BTreeSet<usize>>,
) {
    let map = &m.map;
    let nd = map.dims().len();
    let bounds: Vec<Interval> = map.dims().iter().chain(map.ranges()).copied().collect();
    let sources: Vec<(Literal, Vec<i64>)> = m
        .runtime
        .iter()
        .map(|rv| {
            let value = runtime_value(module, rv, args).expect("runtime variable value");
            let dims = value.shape().dims().to_vec();
            (value, dims)
        })
        .collect();
    for_each_in_box(&bounds, |flat| {
        let mut rts: Vec<i64> = Vec::new();
        for (k, rv) in m.runtime.iter().enumerate() {
            // Runtime variable maps use the map's variables; later variables are unused.
            let mut full = rts.clone();
            full.resize(map.runtimes().len(), 0);
            let p = Point {
                dims: &flat[..nd],
                ranges: &flat[nd..],
                runtimes: &full,
            };
            let at = rv.map.evaluate(&p).expect("runtime map evaluates");
            let (ref value, ref dims) = sources[k];
            let i = linear(&at, dims).expect("runtime variable reads inside its producer");
            rts.push(value.as_array().unwrap().get_f64(i).unwrap() as i64);
        }
        let p = Point {
            dims: &flat[..nd],
            ranges: &flat[nd..],
            runtimes: &rts,
        };
        if map.contains_point(&p).unwrap() {
            let o = linear(&flat[..nd], out_dims).unwrap();
            let idx = map.evaluate(&p).unwrap();
            let i = linear(&idx, operand_dims)
                .unwrap_or_else(|| panic!("map {map} reads {idx:?} outside {operand_dims:?}"));
            into.entry(o).or_default().insert(i);
        }
        true
    });
}

/// Applies called computations (reducers, comparators) with the reference interpreter.
struct Calls<'m>(hlo_eval::Evaluator<'m>);

impl hlo_eval::numeric::CallComputation for Calls<'_> {
    fn call(
        &mut self,
        comp: hlo::CompId,
        args: &[Literal],
    ) -> Result<Literal, hlo_eval::numeric::KernelError> {
        self.0
            .call(comp, args.to_vec())
            .map_err(|e| hlo_eval::numeric::KernelError::Call(Box::new(e)))
    }
}

/// Runs the module. The interpreter delegates heavy ops to `hlo_eval::numeric` once both are
/// wired together; until then an entry root the interpreter does not run, whose operands
/// are parameters, is evaluated by the kernel directly.
fn run(module: &Module, args: &[Literal]) -> Literal {
    try_run(module, args).unwrap_or_else(|e| panic!("evaluation failed: {e}"))
}

fn try_run(module: &Module, args: &[Literal]) -> Result<Literal, String> {
    match hlo_eval::evaluate(module, args) {
        Ok(r) => Ok(r),
        Err(hlo_eval::EvalError::Unsupported { .. }) => {
            let entry = module.entry();
            let root = entry.root_instr();
            if !hlo_eval::numeric::handles(root.opcode(), root) {
                return Err(format!("no evaluator for {}", root.opcode()));
            }
            let operands: Vec<&Literal> = root
                .operands()
                .iter()
                .map(|&o| entry.instr(o).parameter_number().map(|n| &args[n as usize]))
                .collect::<Option<_>>()
                .ok_or("kernel root with non-parameter operands")?;
            let mut calls = Calls(hlo_eval::Evaluator::new(module));
            hlo_eval::numeric::evaluate(module, root, &operands, &mut calls)
                .map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn check(case: &Case) {
    let module = hlo::parse_module(case.hlo).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let args = args_for(&module, case.ints, &mut rng).expect("argument types supported");
    check_module(case.name, &module, &args, case.modes, usize::MAX);
}

/// At most `samples` distinct element numbers in `0..len`, the first and last included.
/// A plain stride would hit the same column of every row whenever it divides the row
/// length; a Weyl walk (`i * s mod len` with `s` coprime to `len`, near `len` times the
/// golden ratio) spreads the samples over every coordinate instead.
fn spread_sample(len: usize, samples: usize) -> Vec<usize> {
    if len <= samples {
        return (0..len).collect();
    }
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut s = ((len as f64) * 0.618_033_988_75) as usize;
    while gcd(s, len) != 1 {
        s += 1;
    }
    let mut picked: BTreeSet<usize> = (0..samples - 1).map(|i| i * s % len).collect();
    picked.insert(len - 1);
    picked.into_iter().collect()
}

/// Checks the root's maps against perturbation of at most `samples` elements per operand
/// (every element for the exact check).
fn check_module(name: &str, module: &Module, args: &[Literal], modes: &[Mode], samples: usize) {
    let entry = module.entry();
    let root = entry.root_instr();
    let root_ref = module
        .instr_ref(module.entry_id(), entry.root())
        .unwrap_or_else(|| panic!("{name}: no root"));
    let grouped = indexing::output_to_input(&root_ref).unwrap_or_else(|e| panic!("{}: {e}", name));
    let base = run(module, args);
    assert_eq!(output_count(&base), grouped.len(), "{}: outputs", name);
    for (j, &mode) in modes.iter().enumerate() {
        if mode == Skip {
            continue;
        }
        let op = entry.instr(root.operands()[j]);
        let param = op
            .parameter_number()
            .expect("perturbed operands are parameters") as usize;
        let operand_dims = op.shape().dims().to_vec();
        let operand = args[param].as_array().unwrap();
        let len = operand.data().len();
        // observed[k][output element] = operand elements it depends on.
        let mut observed: Vec<BTreeMap<usize, BTreeSet<usize>>> =
            vec![BTreeMap::new(); grouped.len()];
        let sampled = spread_sample(len, samples);
        for &e in &sampled {
            let mut a = args.to_vec();
            a[param] = array(op.shape(), values::perturbed(operand, e));
            let r = run(module, &a);
            for (k, obs) in observed.iter_mut().enumerate() {
                let (b0, b1) = (output_bits(&base, k), output_bits(&r, k));
                for (o, (x, y)) in b0.iter().zip(&b1).enumerate() {
                    if x != y {
                        obs.entry(o).or_default().insert(e);
                    }
                }
            }
        }
        for (k, g) in grouped.iter().enumerate() {
            let out_shape = if root.shape().is_tuple() {
                root.shape().tuple_shapes()[k].clone()
            } else {
                root.shape().clone()
            };
            let set = &g.operands[j];
            let OperandIndexing::Maps(_) = set else {
                panic!("{}: operand {j} is UNDEFINED", name);
            };
            let mut img = BTreeMap::new();
            for m in set.maps() {
                image(module, m, out_shape.dims(), &operand_dims, args, &mut img);
            }
            for (o, deps) in &observed[k] {
                let claimed = img.get(o).cloned().unwrap_or_default();
                assert!(
                    deps.is_subset(&claimed),
                    "{}: output {k} element {o} depends on operand {j} elements {deps:?}, maps claim {claimed:?}",
                    name
                );
            }
            if mode == Exact {
                // For every perturbed element: the outputs the maps say read it are
                // exactly the outputs that changed.
                for &e in &sampled {
                    let claimed: BTreeSet<usize> = img
                        .iter()
                        .filter(|(_, s)| s.contains(&e))
                        .map(|(&o, _)| o)
                        .collect();
                    let seen: BTreeSet<usize> = observed[k]
                        .iter()
                        .filter(|(_, s)| s.contains(&e))
                        .map(|(&o, _)| o)
                        .collect();
                    assert_eq!(
                        seen, claimed,
                        "{}: output {k}, operand {j} element {e}: outputs observed vs maps",
                        name
                    );
                }
            }
        }
    }
}

macro_rules! cases {
    ($($name:ident: $hlo:expr, ints $ints:expr, modes $modes:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check(&Case { name: stringify!($name), hlo: $hlo, ints: $ints, modes: $modes });
            }
        )*
    };
}

const NO: &[(usize, &[i32])] = &[];

cases! {
    elementwise_add: "HloModule m
ENTRY e {
  a = f32[3,4] parameter(0)
  b = f32[3,4] parameter(1)
  ROOT r = f32[3,4] add(a, b)
}", ints NO, modes &[Exact, Exact];

    clamp_scalar_bounds: "HloModule m
ENTRY e {
  lo = f32[] parameter(0)
  x = f32[5] parameter(1)
  hi = f32[] parameter(2)
  ROOT r = f32[5] clamp(lo, x, hi)
}", ints NO, modes &[Superset("clamp reads a bound only when x crosses it"), Superset("x is not observed where clamped"), Superset("clamp reads a bound only when x crosses it")];

    select_branches: "HloModule m
ENTRY e {
  p = pred[6] parameter(0)
  a = f32[6] parameter(1)
  b = f32[6] parameter(2)
  ROOT r = f32[6] select(p, a, b)
}", ints NO, modes &[Skip, Superset("select reads one branch per element"), Superset("select reads one branch per element")];

    broadcast: "HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  ROOT r = f32[2,3,4] broadcast(a), dimensions={1}
}", ints NO, modes &[Exact];

    transpose: "HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  ROOT r = f32[4,2,3] transpose(a), dimensions={2,0,1}
}", ints NO, modes &[Exact];

    reverse: "HloModule m
ENTRY e {
  a = f32[3,4] parameter(0)
  ROOT r = f32[3,4] reverse(a), dimensions={1}
}", ints NO, modes &[Exact];

    strided_slice: "HloModule m
ENTRY e {
  a = f32[7,9] parameter(0)
  ROOT r = f32[2,3] slice(a), slice={[1:5:2], [0:9:3]}
}", ints NO, modes &[Exact];

    reshape_general: "HloModule m
ENTRY e {
  a = f32[4,6] parameter(0)
  ROOT r = f32[3,8] reshape(a)
}", ints NO, modes &[Exact];

    bitcast_through_layouts: "HloModule m
ENTRY e {
  a = f32[3,4]{0,1} parameter(0)
  ROOT r = f32[2,6]{1,0} bitcast(a)
}", ints NO, modes &[Exact];

    concatenate: "HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[2,2] parameter(1)
  ROOT r = f32[2,5] concatenate(a, b), dimensions={1}
}", ints NO, modes &[Exact, Exact];

    pad_negative_and_interior: "HloModule m
ENTRY e {
  a = f32[5,3] parameter(0)
  v = f32[] parameter(1)
  ROOT r = f32[8,7] pad(a, v), padding=-1_0_1x2_0_1
}", ints NO, modes &[Exact, Superset("the padding value maps from every output element, also those holding operand elements")];

    reduce_sum: "HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[3,4,2] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[4] reduce(a, z), dimensions={0,2}, to_apply=add
}", ints NO, modes &[Exact, Exact];

    reduce_max: "HloModule m
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(x, y)
}
ENTRY e {
  a = f32[3,4] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[3] reduce(a, z), dimensions={1}, to_apply=max
}", ints NO, modes &[Superset("raising a non-maximal element does not always change a maximum"), Superset("the init value matters only when it is the maximum")];

    reduce_window_dilated_padded: "HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[5,4] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[5,3] reduce-window(a, z), window={size=3x2 stride=2x1 pad=2_2x0_0 lhs_dilate=2x1 rhs_dilate=2x2}, to_apply=add
}", ints NO, modes &[Exact, Exact];

    dot_batched: "HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  ROOT r = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}", ints NO, modes &[Exact, Exact];

    scaled_dot_block_scales: "HloModule m
ENTRY e {
  a = f32[2,4,6] parameter(0)
  b = f32[2,6,3] parameter(1)
  sa = f32[1,2,3] parameter(2)
  sb = f32[] parameter(3)
  ROOT r = f32[2,4,3] scaled-dot(a, b, sa, sb), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}", ints NO, modes &[Exact, Exact, Exact, Exact];

    convolution_padded_strided_reversed: "HloModule m
ENTRY e {
  a = f32[1,6,5,2] parameter(0)
  k = f32[2,3,2,3] parameter(1)
  ROOT r = f32[1,3,5,3] convolution(a, k), window={size=3x2 stride=2x1 pad=1_1x1_0 rhs_reversal=1x0}, dim_labels=b01f_i01o->b01f
}", ints NO, modes &[Exact, Exact];

    convolution_dilated: "HloModule m
ENTRY e {
  a = f32[1,5,1] parameter(0)
  k = f32[2,1,2] parameter(1)
  ROOT r = f32[1,7,2] convolution(a, k), window={size=2 pad=1_1 lhs_dilate=2 rhs_dilate=2}, dim_labels=b0f_0io->b0f
}", ints NO, modes &[Exact, Exact];

    convolution_feature_groups: "HloModule m
ENTRY e {
  a = f32[1,6,4] parameter(0)
  k = f32[3,2,6] parameter(1)
  ROOT r = f32[1,4,6] convolution(a, k), window={size=3}, dim_labels=b0f_0io->b0f, feature_group_count=2
}", ints NO, modes &[Exact, Exact];

    convolution_batch_groups: "HloModule m
ENTRY e {
  a = f32[4,5,2] parameter(0)
  k = f32[2,2,6] parameter(1)
  ROOT r = f32[2,4,6] convolution(a, k), window={size=2}, dim_labels=b0f_0io->b0f, batch_group_count=2
}", ints NO, modes &[Exact, Exact];

    dynamic_slice_clamped: "HloModule m
ENTRY e {
  a = f32[6,5] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT r = f32[3,2] dynamic-slice(a, i, j), dynamic_slice_sizes={3,2}
}", ints &[(1, &[5]), (2, &[-2])], modes &[Exact, Skip, Skip];

    dynamic_update_slice: "HloModule m
ENTRY e {
  a = f32[6,5] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = f32[6,5] dynamic-update-slice(a, u, i, j)
}", ints &[(2, &[1]), (3, &[9])], modes &[Superset("elements under the update window are overwritten"), Exact, Skip, Skip];

    gather_rows: "HloModule m
ENTRY e {
  a = f32[5,3] parameter(0)
  i = s32[4,1] parameter(1)
  ROOT r = f32[4,2] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
}", ints &[(1, &[0, 4, 2, 7])], modes &[Exact, Skip];

    gather_two_components: "HloModule m
ENTRY e {
  a = f32[4,5,2] parameter(0)
  i = s32[3,2] parameter(1)
  ROOT r = f32[3,2,2,2] gather(a, i), offset_dims={1,2,3}, collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=1, slice_sizes={2,2,2}
}", ints &[(1, &[0, 0, 4, 3, -1, 1])], modes &[Exact, Skip];

    scatter_add_rows: "HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[6,2] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[3,2,2] parameter(2)
  ROOT r = f32[6,2] scatter(a, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}", ints &[(1, &[1, 5, 3])], modes &[Exact, Skip, Exact];

    sort_one_operand: "HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  a = f32[3,5] parameter(0)
  ROOT r = f32[3,5] sort(a), dimensions={1}, to_apply=cmp
}", ints NO, modes &[Superset("a perturbation moves some elements of the sorted row, not all")];

    select_and_scatter: "HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[6] parameter(0)
  s = f32[3] parameter(1)
  z = f32[] parameter(2)
  ROOT r = f32[6] select-and-scatter(a, s, z), window={size=2 stride=2}, select=ge, scatter=add
}", ints NO, modes &[Superset("only changes of the selected position are observed"), Superset("a source value lands on one position of its window"), Exact];

    fusion_softmax: "HloModule m
add_c {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
max_c {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(x, y)
}
softmax {
  p0 = f32[2,5] parameter(0)
  neg_inf = f32[] constant(-inf)
  max = f32[2] reduce(p0, neg_inf), dimensions={1}, to_apply=max_c
  bmax = f32[2,5] broadcast(max), dimensions={0}
  sub = f32[2,5] subtract(p0, bmax)
  exp = f32[2,5] exponential(sub)
  zero = f32[] constant(0)
  sum = f32[2] reduce(exp, zero), dimensions={1}, to_apply=add_c
  bsum = f32[2,5] broadcast(sum), dimensions={0}
  ROOT div = f32[2,5] divide(exp, bsum)
}
ENTRY e {
  x = f32[2,5] parameter(0)
  ROOT r = f32[2,5] fusion(x), kind=kLoop, calls=softmax
}", ints NO, modes &[Exact];

    fusion_transpose_reshape_pad: "HloModule m
f {
  p0 = f32[3,4] parameter(0)
  p1 = f32[] parameter(1)
  t = f32[4,3] transpose(p0), dimensions={1,0}
  r = f32[2,6] reshape(t)
  ROOT pd = f32[4,8] pad(r, p1), padding=1_1x1_1
}
ENTRY e {
  x = f32[3,4] parameter(0)
  v = f32[] parameter(1)
  ROOT r = f32[4,8] fusion(x, v), kind=kLoop, calls=f
}", ints NO, modes &[Exact, Superset("the padding value maps from every output element")];

    fusion_dynamic_slice: "HloModule m
f {
  p0 = f32[8,3] parameter(0)
  p1 = s32[] parameter(1)
  z = s32[] constant(0)
  ds = f32[4,3] dynamic-slice(p0, p1, z), dynamic_slice_sizes={4,3}
  ROOT n = f32[3,4] transpose(ds), dimensions={1,0}
}
ENTRY e {
  x = f32[8,3] parameter(0)
  o = s32[] parameter(1)
  ROOT r = f32[3,4] fusion(x, o), kind=kLoop, calls=f
}", ints &[(1, &[6])], modes &[Exact, Skip];
}

mod conv_sweep;
mod corpus;
mod described;
mod physical;
mod random_fusions;
