//! Ops described since they were UNDEFINED: the batch-norm ops and copy-start / copy-done
//! (exact), scan (exact through the body where its carries are simple), checked in both directions against the evaluator (output-to-input with
//! [`check_module`]; input-to-output by comparing, for every operand element and output,
//! the output elements the maps reach with those that changed under perturbation).

use super::*;

/// Input-to-output maps of every operand of the root, against perturbation: for operand
/// `j`, output `k` and every element `e`, the outputs reached are those that changed.
pub(super) fn check_in_to_out(name: &str, module: &Module, args: &[Literal], operands: &[usize]) {
    check_in_to_out_mode(name, module, args, operands, true);
}

/// As [`check_in_to_out`], or (`exact` false) only that the outputs reached contain those
/// that changed: for superset maps.
pub(super) fn check_in_to_out_mode(
    name: &str,
    module: &Module,
    args: &[Literal],
    operands: &[usize],
    exact: bool,
) {
    let entry = module.entry();
    let root = module.instr_ref(module.entry_id(), entry.root()).unwrap();
    let base = run(module, args);
    for &j in operands {
        let op = entry.instr(root.instr().operands()[j]);
        let param = op.parameter_number().unwrap() as usize;
        let operand_dims = op.shape().dims().to_vec();
        let len = args[param].as_array().unwrap().data().len();
        let sets = indexing::input_to_output(&root, j)
            .unwrap_or_else(|e| panic!("{name}: input-to-output of operand {j}: {e}"));
        assert_eq!(sets.len(), output_count(&base), "{name}: outputs");
        let mut changed: Vec<Vec<BTreeSet<usize>>> = vec![vec![BTreeSet::new(); len]; sets.len()];
        for e in 0..len {
            let mut a = args.to_vec();
            let operand = args[param].as_array().unwrap();
            a[param] = array(op.shape(), values::perturbed(operand, e));
            let r = run(module, &a);
            for (k, outs) in changed.iter_mut().enumerate() {
                let (b0, b1) = (output_bits(&base, k), output_bits(&r, k));
                outs[e] = (0..b0.len()).filter(|&o| b0[o] != b1[o]).collect();
            }
        }
        for (k, set) in sets.iter().enumerate() {
            let out_shape = if root.instr().shape().is_tuple() {
                root.instr().shape().tuple_shapes()[k].clone()
            } else {
                root.instr().shape().clone()
            };
            let mut img = BTreeMap::new();
            if let OperandIndexing::Maps(_) = set {
                for m in set.maps() {
                    image(module, m, &operand_dims, out_shape.dims(), &[], &mut img);
                }
            } else {
                panic!("{name}: operand {j} to output {k} is UNDEFINED");
            }
            for (e, seen) in changed[k].iter().enumerate() {
                let claimed = img.get(&e).cloned().unwrap_or_default();
                if exact {
                    assert_eq!(
                        seen, &claimed,
                        "{name}: operand {j} element {e} to output {k}: observed vs input-to-output maps"
                    );
                } else {
                    assert!(
                        seen.is_subset(&claimed),
                        "{name}: operand {j} element {e} to output {k}: observed {seen:?}, maps claim {claimed:?}"
                    );
                }
            }
        }
    }
}

/// `f32` arguments for a batch-norm module, with the variance parameters (`positive`)
/// made positive so that every result is a number.
fn batch_norm_args(module: &Module, positive: &[usize], seed: u64) -> Vec<Literal> {
    let mut rng = XorShift(seed);
    let mut args = args_for(module, NO, &mut rng).unwrap();
    for &p in positive {
        let a = args[p].as_array().unwrap();
        let ArrayData::F32(v) = a.data() else {
            panic!("f32 variance")
        };
        let v: Vec<f32> = v.iter().map(|x| x.abs()).collect();
        args[p] = array(a.shape(), ArrayData::F32(v));
    }
    args
}

fn check_both(name: &str, hlo: &str, positive: &[usize]) {
    let module = hlo::parse_module(hlo).unwrap_or_else(|e| panic!("{name}: {e}"));
    let arity = module.entry().root_instr().operands().len();
    for seed in [0x5eed_0001, 0x5eed_0002] {
        let args = batch_norm_args(&module, positive, seed);
        check_module(name, &module, &args, &vec![Exact; arity], usize::MAX);
        check_in_to_out(name, &module, &args, &(0..arity).collect::<Vec<_>>());
    }
}

#[test]
fn batch_norm_inference_exact() {
    for (shape, f, n) in [("2,3,4", 1, 3), ("3,2", 0, 3), ("2,2,5", 2, 5)] {
        check_both(
            "batch_norm_inference",
            &format!(
                "HloModule m
ENTRY e {{
  x = f32[{shape}] parameter(0)
  s = f32[{n}] parameter(1)
  o = f32[{n}] parameter(2)
  m = f32[{n}] parameter(3)
  v = f32[{n}] parameter(4)
  ROOT r = f32[{shape}] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index={f}
}}"
            ),
            &[4],
        );
    }
}

#[test]
fn batch_norm_training_exact() {
    for (shape, f, n) in [("2,3,4", 1, 3), ("3,2", 1, 2), ("2,2,5", 2, 5)] {
        check_both(
            "batch_norm_training",
            &format!(
                "HloModule m
ENTRY e {{
  x = f32[{shape}] parameter(0)
  s = f32[{n}] parameter(1)
  o = f32[{n}] parameter(2)
  ROOT r = (f32[{shape}], f32[{n}], f32[{n}]) batch-norm-training(x, s, o), epsilon=0.001, feature_index={f}
}}"
            ),
            &[],
        );
    }
}

#[test]
fn batch_norm_grad_exact() {
    for (shape, f, n) in [("2,3,4", 1, 3), ("3,2", 1, 2), ("2,2,5", 0, 2)] {
        check_both(
            "batch_norm_grad",
            &format!(
                "HloModule m
ENTRY e {{
  x = f32[{shape}] parameter(0)
  s = f32[{n}] parameter(1)
  m = f32[{n}] parameter(2)
  v = f32[{n}] parameter(3)
  g = f32[{shape}] parameter(4)
  ROOT r = (f32[{shape}], f32[{n}], f32[{n}]) batch-norm-grad(x, s, m, v, g), epsilon=0.001, feature_index={f}
}}"
            ),
            &[3],
        );
    }
}

#[test]
fn copy_start_and_done_exact() {
    let hlo = "HloModule m
ENTRY e {
  x = f32[3,4] parameter(0)
  cs = (f32[3,4], f32[3,4], u32[]) copy-start(x)
  ROOT cd = f32[3,4] copy-done(cs)
}";
    let module = hlo::parse_module(hlo).unwrap();
    let mut rng = XorShift(7);
    let args = args_for(&module, NO, &mut rng).unwrap();
    // copy-start alone (a tuple root), both directions.
    let start = "HloModule m
ENTRY e {
  x = f32[3,4] parameter(0)
  ROOT cs = (f32[3,4], f32[3,4], u32[]) copy-start(x)
}";
    let ms = hlo::parse_module(start).unwrap();
    check_module("copy_start", &ms, &args, &[Exact], usize::MAX);
    check_in_to_out("copy_start", &ms, &args, &[0]);
    // copy-done of copy-start: composed maps of the pair (the fusion-free chain through
    // the entry) equal the identity.
    let root = module.instr("cd").unwrap();
    let maps = indexing::output_to_input(&root).unwrap();
    assert_eq!(
        indexing::format_grouped(&maps),
        "operand id = 0\n  (d0, d1) -> (d0, d1), domain: d0 in [0, 2], d1 in [0, 3]\n"
    );
    assert_eq!(
        format!("{:?}", run(&module, &args)),
        format!("{:?}", args[0])
    );
}

/// Scan: output-to-input through the body, exact where every carry an output reads is
/// accumulating (reads itself through the identity) or fresh (reads no carry); input-to-output
/// the inverse of those exact maps. Both are checked exact against the evaluator for every
/// module but the last (a carry read through a reverse: the per-op supersets, containment).
#[test]
fn scan_supersets() {
    const WHY: &str = "scan: the body may read less than every earlier slice and the whole init";
    // The carry sums every element of each slice, and every output element is the carry:
    // the maps are exactly what this body reads.
    let cumsum = |reverse: &str, dim: usize| {
        format!(
            "HloModule m
add {{
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT a = f32[] add(p, q)
}}
body {{
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  c = f32[] parameter(2)
  z = f32[] constant(0)
  sx = f32[] reduce(x, z), dimensions={{0}}, to_apply=add
  sy = f32[] reduce(y, z), dimensions={{0}}, to_apply=add
  s = f32[] add(c, sx)
  t = f32[] add(s, sy)
  o = f32[3] broadcast(t), dimensions={{}}
  ROOT r = (f32[3], f32[]) tuple(o, t)
}}
ENTRY e {{
  xs = f32[{xs}] parameter(0)
  ys = f32[{xs}] parameter(1)
  init = f32[] parameter(2)
  ROOT scan = (f32[{xs}], f32[]) scan(xs, ys, init), dimensions={{{dim}}}, num_carries=1{reverse}, to_apply=body
}}",
            xs = if dim == 0 { "4,3" } else { "3,4" },
        )
    };
    let mut modules = vec![];
    for reverse in ["", ", is_reverse=true"] {
        for dim in [0, 1] {
            modules.push((
                format!("running sum dim {dim}{reverse}"),
                cumsum(reverse, dim),
            ));
        }
    }
    // A row-wise running sum along dimension 1 (an elementwise carry of one element per
    // row, XLA's 2-D scan test): an input element reaches only its own row.
    for reverse in ["", ", is_reverse=true"] {
        modules.push((
            format!("row-wise running sum{reverse}"),
            format!(
                "HloModule m
body {{
  x = f32[4] parameter(0)
  c = f32[4] parameter(1)
  a = f32[4] add(x, c)
  ROOT t = (f32[4], f32[4]) tuple(a, a)
}}
ENTRY e {{
  xs = f32[4,5] parameter(0)
  init = f32[4] parameter(1)
  ROOT scan = (f32[4,5], f32[4]) scan(xs, init), dimensions={{1}}, num_carries=1{reverse}, to_apply=body
}}"
            ),
        ));
    }
    // Reads only its own slice and no carry: the maps are strict supersets here.
    modules.push((
        "slice-wise".to_string(),
        "HloModule m
body {
  x = f32[2] parameter(0)
  c = f32[] parameter(1)
  n = f32[2] negate(x)
  d = f32[] add(c, c)
  ROOT r = (f32[2], f32[]) tuple(n, d)
}
ENTRY e {
  xs = f32[3,2] parameter(0)
  init = f32[] parameter(1)
  ROOT scan = (f32[3,2], f32[]) scan(xs, init), dimensions={0}, num_carries=1, is_reverse=true, to_apply=body
}"
        .to_string(),
    ));
    // Two carries, one of them never read by an output.
    modules.push((
        "two carries".to_string(),
        "HloModule m
body {
  x = f32[2] parameter(0)
  a = f32[2] parameter(1)
  b = f32[] parameter(2)
  s = f32[2] multiply(a, x)
  bb = f32[2] broadcast(b), dimensions={}
  o = f32[2] add(s, bb)
  ROOT r = (f32[2], f32[2], f32[]) tuple(o, s, b)
}
ENTRY e {
  xs = f32[5,2] parameter(0)
  a0 = f32[2] parameter(1)
  b0 = f32[] parameter(2)
  ROOT scan = (f32[5,2], f32[2], f32[]) scan(xs, a0, b0), dimensions={0}, num_carries=2, to_apply=body
}"
        .to_string(),
    ));
    // A fresh carry: each output is the previous step's slice (doubled), the init at the
    // first step; forward and reverse, along either dimension.
    for (reverse, dim) in [("", 0), (", is_reverse=true", 1)] {
        modules.push((
            format!("delayed dim {dim}{reverse}"),
            format!(
                "HloModule m
body {{
  x = f32[3] parameter(0)
  c = f32[3] parameter(1)
  d = f32[3] add(x, x)
  ROOT r = (f32[3], f32[3]) tuple(c, d)
}}
ENTRY e {{
  xs = f32[{xs}] parameter(0)
  init = f32[3] parameter(1)
  ROOT scan = (f32[{xs}], f32[3]) scan(xs, init), dimensions={{{dim}}}, num_carries=1{reverse}, to_apply=body
}}",
                xs = if dim == 0 { "4,3" } else { "3,4" },
            ),
        ));
    }
    // An elementwise running product next to a carry read through a slice of the slice.
    modules.push((
        "running product".to_string(),
        "HloModule m
body {
  x = f32[4] parameter(0)
  c = f32[4] parameter(1)
  p = f32[4] multiply(c, x)
  s = f32[2] slice(p), slice={[1:3]}
  ROOT r = (f32[2], f32[4]) tuple(s, p)
}
ENTRY e {
  xs = f32[3,4] parameter(0)
  init = f32[4] parameter(1)
  ROOT scan = (f32[3,2], f32[4]) scan(xs, init), dimensions={0}, num_carries=1, to_apply=body
}"
        .to_string(),
    ));
    let supersets = modules.len();
    // A carry read through a reverse of itself: neither fresh nor accumulating.
    modules.push((
        "reversing carry".to_string(),
        "HloModule m
body {
  x = f32[3] parameter(0)
  c = f32[3] parameter(1)
  r = f32[3] reverse(c), dimensions={0}
  a = f32[3] add(r, x)
  ROOT t = (f32[3], f32[3]) tuple(a, a)
}
ENTRY e {
  xs = f32[4,3] parameter(0)
  init = f32[3] parameter(1)
  ROOT scan = (f32[4,3], f32[3]) scan(xs, init), dimensions={0}, num_carries=1, to_apply=body
}"
        .to_string(),
    ));
    for (n, (name, hlo)) in modules.into_iter().enumerate() {
        let module = hlo::parse_module(&hlo).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(errors) = hlo::verifier::verify(&module) {
            panic!("{name}: {errors:?}");
        }
        let arity = module.entry().root_instr().operands().len();
        let mut rng = XorShift(0x5ca7_0001);
        let args = args_for(&module, NO, &mut rng).unwrap();
        let out_to_in = if n < supersets { Exact } else { Superset(WHY) };
        check_module(&name, &module, &args, &vec![out_to_in; arity], usize::MAX);
        check_in_to_out_mode(
            &name,
            &module,
            &args,
            &(0..arity).collect::<Vec<_>>(),
            n < supersets,
        );
    }
}

/// Scan through its body: a stacked output that reads no carry reads only the input slices
/// at its own position, through the body's maps (here a reverse within the slice and a
/// broadcast of one element); the final carry (doubled at every step: accumulating) reads
/// only the init. Exact against the evaluator in both.
#[test]
fn scan_stacked_outputs_through_the_body() {
    let exact = "HloModule m
body {
  x = f32[3] parameter(0)
  y = f32[2] parameter(1)
  r = f32[3] reverse(x), dimensions={0}
  s = f32[1] slice(y), slice={[1:2]}
  s0 = f32[] reshape(s)
  b = f32[3] broadcast(s0), dimensions={}
  o = f32[3] add(r, b)
  ROOT t = (f32[3], f32[2]) tuple(o, y)
}
ENTRY e {
  xs = f32[4,3] parameter(0)
  ys = f32[4,2] parameter(1)
  ROOT scan = (f32[4,3], f32[4,2]) scan(xs, ys), dimensions={0}, num_carries=0, to_apply=body
}";
    let with_carry = "HloModule m
body {
  x = f32[2] parameter(0)
  c = f32[] parameter(1)
  n = f32[2] negate(x)
  d = f32[] add(c, c)
  ROOT r = (f32[2], f32[]) tuple(n, d)
}
ENTRY e {
  xs = f32[2,3] parameter(0)
  init = f32[] parameter(1)
  ROOT scan = (f32[2,3], f32[]) scan(xs, init), dimensions={1}, num_carries=1, is_reverse=true, to_apply=body
}";
    for (name, hlo) in [("no carries", exact), ("a carry", with_carry)] {
        let module = hlo::parse_module(hlo).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(errors) = hlo::verifier::verify(&module) {
            panic!("{name}: {errors:?}");
        }
        let arity = module.entry().root_instr().operands().len();
        let mut rng = XorShift(0x5ca7_0002);
        let args = args_for(&module, NO, &mut rng).unwrap();
        check_module(name, &module, &args, &vec![Exact; arity], usize::MAX);
    }
}
