//! Maps between physical shapes (`output_to_input_physical`, `input_to_output_physical`)
//! against an independent model of layouts: an element's place in memory is the sum of its
//! indices times the layout's strides, and a physical index is the row-major position of
//! that place in the physical shape. For every element, the physical maps must reach exactly
//! the physical places of the elements the logical maps reach (the logical maps are checked
//! against the evaluator elsewhere).

use super::*;
use indexing::{GroupedIndexing, OperandIndexing};

/// A shape's logical dimensions, its physical dimensions and the stride of each logical
/// dimension in memory.
struct Placement {
    dims: Vec<i64>,
    physical: Vec<i64>,
    strides: Vec<i64>,
}

impl Placement {
    fn of(shape: &Shape) -> Placement {
        let dims = shape.dims().to_vec();
        let m2m: Vec<usize> = match shape.layout() {
            Some(l) => l.minor_to_major.iter().map(|&d| d as usize).collect(),
            None => (0..dims.len()).rev().collect(),
        };
        let mut strides = vec![0; dims.len()];
        let mut s = 1;
        for &d in &m2m {
            strides[d] = s;
            s *= dims[d];
        }
        let physical = m2m.iter().rev().map(|&d| dims[d]).collect();
        Placement {
            dims,
            physical,
            strides,
        }
    }

    /// The physical index of a logical index.
    fn physical_index(&self, logical: &[i64]) -> Vec<i64> {
        let mut place: i64 = logical.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
        let mut out = vec![0; self.physical.len()];
        for (k, &n) in self.physical.iter().enumerate().rev() {
            out[k] = place % n;
            place /= n;
        }
        out
    }
}

type Relation = BTreeSet<(Vec<i64>, Vec<i64>)>;

/// Every (source, target) pair of a set of maps without runtime variables.
fn relation(
    set: &OperandIndexing,
    mut place: impl FnMut(&[i64], &[i64]) -> (Vec<i64>, Vec<i64>),
) -> Relation {
    assert!(!set.is_undefined(), "a described op");
    let mut out = Relation::new();
    for m in set.maps() {
        assert!(
            m.runtime.is_empty(),
            "no runtime variables in these modules"
        );
        let map = &m.map;
        let nd = map.dims().len();
        let bounds: Vec<Interval> = map.dims().iter().chain(map.ranges()).copied().collect();
        for_each_in_box(&bounds, |flat| {
            let p = Point {
                dims: &flat[..nd],
                ranges: &flat[nd..],
                runtimes: &[],
            };
            if map.contains_point(&p).unwrap() {
                let target = map.evaluate(&p).unwrap();
                out.insert(place(&flat[..nd], &target));
            }
            true
        });
    }
    out
}

fn as_is(a: &[i64], b: &[i64]) -> (Vec<i64>, Vec<i64>) {
    (a.to_vec(), b.to_vec())
}

/// Checks both directions of the root of `text` against the placement model.
fn check(text: &str) {
    let module = hlo::parse_module(text).expect("test module parses");
    let root = module
        .instr_ref(module.entry_id(), module.entry().root())
        .unwrap();
    let c = root.computation();
    let out = Placement::of(root.instr().shape());
    let operands: Vec<Placement> = root
        .instr()
        .operands()
        .iter()
        .map(|&o| Placement::of(c.instr(o).shape()))
        .collect();
    let logical: Vec<GroupedIndexing> = indexing::output_to_input(&root).unwrap();
    let physical = indexing::output_to_input_physical(&root).unwrap();
    for (j, op) in operands.iter().enumerate() {
        let expected = relation(&logical[0].operands[j], |i, t| {
            (out.physical_index(i), op.physical_index(t))
        });
        let got = relation(&physical[0].operands[j], as_is);
        assert_eq!(got, expected, "{text}\nout-to-in, operand {j}");
        assert!(!got.is_empty() || op.dims.iter().product::<i64>() == 0 || out.dims.is_empty());
        let logical = indexing::input_to_output(&root, j).unwrap();
        let physical = indexing::input_to_output_physical(&root, j).unwrap();
        let expected = relation(&logical[0], |i, t| {
            (op.physical_index(i), out.physical_index(t))
        });
        let got = relation(&physical[0], as_is);
        assert_eq!(got, expected, "{text}\nin-to-out, operand {j}");
    }
}

#[test]
fn physical_maps_follow_the_layouts() {
    let modules = [
        "HloModule m\nENTRY e {\n  p = f32[2,3,4] parameter(0)\n  ROOT x = f32[2,3,4]{1,0,2} exponential(p)\n}",
        "HloModule m\nENTRY e {\n  p = f32[2,3,4]{1,0,2} parameter(0)\n  ROOT x = f32[2,3,4] exponential(p)\n}",
        "HloModule m\nENTRY e {\n  p = f32[2,3,4]{0,2,1} parameter(0)\n  q = f32[2,3,4]{2,0,1} parameter(1)\n  ROOT x = f32[2,3,4]{1,2,0} add(p, q)\n}",
        "HloModule m\nENTRY e {\n  p = f32[3,5]{0,1} parameter(0)\n  ROOT t = f32[5,3]{0,1} transpose(p), dimensions={1,0}\n}",
        "HloModule m\nENTRY e {\n  p = f32[3]{0} parameter(0)\n  ROOT b = f32[3,4,2]{0,2,1} broadcast(p), dimensions={0}\n}",
        "HloModule m\nENTRY e {\n  p = f32[4,6]{0,1} parameter(0)\n  ROOT r = f32[2,2,6]{1,2,0} reshape(p)\n}",
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[4,3,2]{0,2,1} parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[4,2]{0,1} reduce(p, z), dimensions={1}, to_apply=add\n}",
        "HloModule m\nENTRY e {\n  a = f32[3,4]{0,1} parameter(0)\n  b = f32[4,5]{0,1} parameter(1)\n  ROOT d = f32[3,5]{0,1} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        "HloModule m\nENTRY e {\n  a = f32[2,3]{0,1} parameter(0)\n  b = f32[2,2]{1,0} parameter(1)\n  ROOT c = f32[2,5]{0,1} concatenate(a, b), dimensions={1}\n}",
        "HloModule m\nENTRY e {\n  p = f32[6,4]{0,1} parameter(0)\n  ROOT s = f32[2,3]{0,1} slice(p), slice={[1:5:2], [0:3]}\n}",
        "HloModule m\nf {\n  p = f32[3,4]{0,1} parameter(0)\n  t = f32[4,3]{0,1} transpose(p), dimensions={1,0}\n  ROOT b = f32[12]{0} bitcast(t)\n}\nENTRY e {\n  a = f32[3,4]{0,1} parameter(0)\n  ROOT r = f32[12]{0} fusion(a), kind=kLoop, calls=f\n}",
    ];
    for text in modules {
        check(text);
    }
}

#[test]
fn tiled_layouts_are_not_described() {
    let module = hlo::parse_module(
        "HloModule m\nENTRY e {\n  p = f32[8,128]{1,0:T(8,128)} parameter(0)\n  ROOT x = f32[8,128] exponential(p)\n}",
    )
    .unwrap();
    let root = module.instr("x").unwrap();
    let maps = indexing::output_to_input_physical(&root).unwrap();
    assert!(maps[0].operands[0].is_undefined());
}
