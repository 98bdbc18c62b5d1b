//! XLA's regions numbering of nested tilings (`TilingMode::Regions`), checked by
//! enumeration: for every program id of every tiled instruction under a dot's contraction
//! (or a reduce's reduction), its tile holds exactly the elements that the step of that
//! program reads: the root tile of program `p`, carried down op by op through every
//! output→operand map, the range variable of an owner's own dimension restricted to the
//! step's indices.

use std::collections::{BTreeSet, HashMap};

use affine::enumerate::for_each_in_box;
use affine::{Interval, Point};
use indexing::OperandIndexing;
use tiling::propagate::{tiled_by_propagation_with, TilingMode};

type Elements = BTreeSet<Vec<i64>>;

/// A nested tiling: the owner's name and its sizes.
type Nested = (&'static str, &'static [i64]);

/// A fused computation, the nested tilings tried and the root tile sizes tried.
type RegionCase = (&'static str, &'static [Nested], &'static [&'static [i64]]);

/// Fusions whose instructions each feed one user (one path to the root).
const CASES: &[RegionCase] = &[
    (
        "fused {
  a = f32[8,12] parameter(0)
  b = f32[12,6] parameter(1)
  na = f32[8,12] negate(a)
  ROOT d = f32[8,6] dot(na, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}",
        &[("d", &[4]), ("d", &[5]), ("d", &[12])],
        &[&[4, 2], &[8, 6], &[3, 4]],
    ),
    (
        "fused {
  a = f32[12] parameter(0)
  ba = f32[2,4,12] broadcast(a), dimensions={2}
  q = f32[2,5,12] parameter(1)
  tq = f32[2,12,5] transpose(q), dimensions={0,2,1}
  ROOT d = f32[2,4,5] dot(ba, tq), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}",
        &[("d", &[4]), ("d", &[8])],
        &[&[1, 2, 5], &[2, 4, 2]],
    ),
    (
        "fused {
  a = f32[8,6] parameter(0)
  b = f32[6,12] parameter(1)
  ab = f32[8,12] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[8,12] exponential(ab)
  c = f32[12,4] parameter(2)
  ROOT d = f32[8,4] dot(e, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}",
        &[("d", &[4]), ("ab", &[2])],
        &[&[4, 2], &[8, 4]],
    ),
    (
        "add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused {
  p = f32[6,10] parameter(0)
  n = f32[6,10] negate(p)
  z = f32[] constant(0)
  ROOT r = f32[6] reduce(n, z), dimensions={1}, to_apply=add
}",
        &[("r", &[4]), ("r", &[3])],
        &[&[2], &[6]],
    ),
];

fn module_text(fused: &str) -> String {
    let comp_start = fused.find("fused {").expect("fused computation");
    let body = &fused[comp_start..];
    let root = body
        .lines()
        .find(|l| l.trim_start().starts_with("ROOT"))
        .expect("root");
    let shape = root.split('=').nth(1).expect("shape").split_whitespace();
    let shape = shape.into_iter().next().expect("shape").to_string();
    let params: Vec<&str> = body.lines().filter(|l| l.contains("parameter(")).collect();
    let mut entry = String::from("ENTRY e {\n");
    let mut args = Vec::new();
    for l in &params {
        let ty = l.split('=').nth(1).expect("type").split_whitespace().next();
        let n = l.split("parameter(").nth(1).expect("index");
        let n = n.trim_end_matches(')').trim();
        entry.push_str(&format!("  x{n} = {} parameter({n})\n", ty.expect("type")));
        args.push(format!("x{n}"));
    }
    args.sort();
    entry.push_str(&format!(
        "  ROOT f = {shape} fusion({}), kind=kCustom, calls=fused\n}}",
        args.join(", ")
    ));
    format!("HloModule m\n{fused}\n{entry}\n")
}

/// The indices of a tile along each dimension (the unmasked ones, inside `dims`).
fn tile_elements(offsets: &[i64], sizes: &[i64], strides: &[i64], dims: &[i64]) -> Elements {
    let per: Vec<Vec<i64>> = offsets
        .iter()
        .zip(sizes)
        .zip(strides)
        .zip(dims)
        .map(|(((&o, &s), &st), &d)| {
            (0..s)
                .map(|k| o + k * st)
                .filter(|&i| (0..d).contains(&i))
                .collect()
        })
        .collect();
    let mut out = vec![Vec::new()];
    for l in &per {
        out = out
            .iter()
            .flat_map(|p| {
                l.iter().map(move |&v| {
                    let mut q: Vec<i64> = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    out.into_iter().collect()
}

/// The elements of every operand of `instr` that the elements `of` of its output read, the
/// range variables of its own dimensions (the first ones of its maps) restricted to `steps`.
fn read_by(instr: &hlo::InstrRef<'_>, of: &Elements, steps: &[Interval]) -> Vec<Option<Elements>> {
    let grouped = tiling::output_to_input(instr).expect("indexing");
    grouped[0]
        .operands
        .iter()
        .map(|set| {
            let OperandIndexing::Maps(maps) = set else {
                return None;
            };
            let mut out = Elements::new();
            for m in maps.values() {
                let m = &m.map;
                let mut ranges: Vec<Interval> = m.ranges().to_vec();
                for (r, s) in ranges.iter_mut().zip(steps) {
                    *r = Interval::new(r.lo.max(s.lo), r.hi.min(s.hi));
                }
                for e in of {
                    for_each_in_box(&ranges, |sym| {
                        let p = Point {
                            dims: e,
                            ranges: sym,
                            runtimes: &[],
                        };
                        if m.constraints_satisfied(&p).expect("point") {
                            out.insert(m.evaluate(&p).expect("point"));
                        }
                        true
                    });
                }
            }
            Some(out)
        })
        .collect()
}

/// One nested tiling above an instruction: its tile size and step count.
#[derive(Clone, Copy)]
struct Level {
    size: i64,
    steps: i64,
}

fn check(fused: &str, nested: (&str, &[i64]), sizes: &[i64]) -> usize {
    let text = module_text(fused);
    let module = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let f = module.instr("f").expect("fusion");
    let nested_list = vec![(nested.0.to_string(), nested.1.to_vec())];
    let got = tiled_by_propagation_with(&f, sizes, &nested_list, TilingMode::Regions)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let first = tiled_by_propagation_with(&f, sizes, &nested_list, TilingMode::FirstStep)
        .expect("first-step numbering");
    assert_eq!(got.num_programs(), first.num_programs());
    let comp_id = f.instr().calls().expect("calls");
    let comp = module.computation(comp_id);
    let root = comp.root();
    let root_dims = comp.instr(root).shape().dims().to_vec();
    let counts: Vec<i64> = root_dims
        .iter()
        .zip(sizes)
        .map(|(&d, &s)| (d + s - 1) / s)
        .collect();
    // Regions of every instruction: the levels of the owners above it, outermost first.
    let mut regions: HashMap<hlo::InstrId, Vec<Level>> = HashMap::new();
    regions.insert(root, Vec::new());
    for &id in comp.def_before_use_order().iter().rev() {
        let Some(region) = regions.get(&id).cloned() else {
            continue;
        };
        let h = module.instr_ref(comp_id, id).expect("instr");
        let mut inner = region;
        if h.name() == nested.0 {
            let extent = match h.instr().opcode() {
                hlo::Opcode::Reduce => {
                    let d = h.instr().dimensions().expect("dims")[0] as usize;
                    comp.instr(h.instr().operands()[0]).shape().dims()[d]
                }
                _ => {
                    let dn = h.instr().dot_dimension_numbers();
                    let l = dn.lhs_contracting_dims[0] as usize;
                    comp.instr(h.instr().operands()[0]).shape().dims()[l]
                }
            };
            let size = nested.1[0];
            inner.push(Level {
                size,
                steps: (extent + size - 1) / size,
            });
        }
        for &op in h.instr().operands() {
            regions.insert(op, inner.clone());
        }
    }
    let programs: i64 = counts.iter().product();
    let mut checked = 0;
    for line in &got.instructions {
        let id = comp
            .find(&line.name)
            .unwrap_or_else(|| panic!("{}", line.name));
        let region = &regions[&id];
        let steps: i64 = region.iter().map(|l| l.steps).product();
        let domain = line.tile_offsets.dims()[0];
        assert_eq!(
            (domain.lo, domain.hi),
            (0, programs * steps - 1),
            "{}: {got}",
            line.name
        );
        for pid in 0..programs * steps {
            // Decode: pid = ((p * n_1 + s_1) * n_2 + s_2) ...
            let mut rest = pid;
            let mut step = vec![0; region.len()];
            for (k, l) in region.iter().enumerate().rev() {
                step[k] = rest % l.steps;
                rest /= l.steps;
            }
            let want = elements_at(
                &module, comp_id, id, nested.0, rest, &step, region, sizes, &counts,
            );
            let offsets = line
                .tile_offsets
                .evaluate(&Point {
                    dims: &[pid],
                    ranges: &[],
                    runtimes: &[],
                })
                .expect("offsets");
            let dims = comp.instr(id).shape().dims().to_vec();
            let have = tile_elements(&offsets, &line.tile_sizes, &line.tile_strides, &dims);
            assert_eq!(
                have, want,
                "{} at pid {pid} (program {rest}, steps {step:?}), sizes {sizes:?}, nested \
                 {nested:?}:\n{got}",
                line.name
            );
            checked += 1;
        }
    }
    checked
}

/// The elements of `target` that step `step` (one per level of `region`) of program `p`
/// reads, by walking from the root down the one path to `target`.
#[allow(clippy::too_many_arguments)]
fn elements_at(
    module: &hlo::Module,
    comp_id: hlo::CompId,
    target: hlo::InstrId,
    owner: &str,
    p: i64,
    step: &[i64],
    region: &[Level],
    sizes: &[i64],
    counts: &[i64],
) -> Elements {
    let comp = module.computation(comp_id);
    let root = comp.root();
    let root_dims = comp.instr(root).shape().dims().to_vec();
    let mut rest = p;
    let mut origin = vec![0; counts.len()];
    for i in (0..counts.len()).rev() {
        origin[i] = (rest % counts[i]) * sizes[i];
        rest /= counts[i];
    }
    let ones = vec![1; sizes.len()];
    let mut sets: HashMap<hlo::InstrId, Elements> = HashMap::new();
    sets.insert(root, tile_elements(&origin, sizes, &ones, &root_dims));
    let mut level = 0;
    for &id in comp.def_before_use_order().iter().rev() {
        let Some(of) = sets.get(&id).cloned() else {
            continue;
        };
        if id == target {
            return of;
        }
        let h = module.instr_ref(comp_id, id).expect("instr");
        let mut restrict = Vec::new();
        // Only the nested owner on the path to the target is in its region.
        if h.name() == owner && level < region.len() && is_above(module, comp_id, id, target) {
            let l = region[level];
            let lo = step[level] * l.size;
            restrict.push(Interval::new(lo, lo + l.size - 1));
            level += 1;
        }
        for (j, set) in read_by(&h, &of, &restrict).into_iter().enumerate() {
            if let (Some(set), Some(&op)) = (set, h.instr().operands().get(j)) {
                sets.insert(op, set);
            }
        }
    }
    sets.remove(&target).unwrap_or_default()
}

/// Whether `target` is reached through the operands of `id`.
fn is_above(
    module: &hlo::Module,
    comp_id: hlo::CompId,
    id: hlo::InstrId,
    target: hlo::InstrId,
) -> bool {
    let comp = module.computation(comp_id);
    let mut stack = vec![id];
    while let Some(i) = stack.pop() {
        if i == target {
            return true;
        }
        stack.extend(comp.instr(i).operands().iter().copied());
    }
    false
}

#[test]
fn regions_tiles_hold_what_each_step_reads() {
    let mut checked = 0;
    for (fused, nested, size_lists) in CASES {
        for &n in *nested {
            for &sizes in *size_lists {
                checked += check(fused, n, sizes);
            }
        }
    }
    assert!(checked > 500, "only {checked} program ids checked");
}
