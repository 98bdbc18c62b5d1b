//! What one instruction reads: each operand's reads per output element, from the op's
//! output-to-input indexing maps (the points of its maps over its output elements), or from
//! the loops of the kernels whose maps' box overcounts (scans, scatters, dynamic-update-slices,
//! select-and-scatter). Also the shapes' sizes and the kernel a fused computation makes.
//! Leaf of the cost model: [`crate::cost_info`] keeps these counts per instruction.

use hlo::{CompId, InstrId, Module, Opcode};

use crate::ops;

/// The kernel that computes the whole computation `comp`, as a fusion computes its fused
/// computation: `(members, roots)`, the members being every instruction but the parameters
/// and the roots the root, or the operands of a tuple root. `None` when `comp` is not in
/// `module`.
pub fn computation_kernel(module: &Module, comp: CompId) -> Option<(Vec<InstrId>, Vec<InstrId>)> {
    let body = module.get_computation(comp)?;
    let members: Vec<InstrId> = body
        .instructions()
        .filter(|(_, i)| i.opcode() != Opcode::Parameter)
        .map(|(id, _)| id)
        .collect();
    let root = body.root_instr();
    let roots: Vec<InstrId> = if root.opcode() == Opcode::Tuple {
        root.operands().to_vec()
    } else {
        vec![body.root()]
    };
    Some((members, roots))
}

pub(crate) fn first_array(s: &hlo::Shape) -> Option<&hlo::Shape> {
    if s.is_tuple() {
        s.tuple_shapes().iter().find_map(first_array)
    } else {
        Some(s)
    }
}

/// `(elements, bytes)` of a shape (tuples summed).
pub fn shape_size(s: &hlo::Shape) -> (f64, f64) {
    if s.is_tuple() {
        return s.tuple_shapes().iter().fold((0.0, 0.0), |(e, b), t| {
            let (te, tb) = shape_size(t);
            (e + te, b + tb)
        });
    }
    let e = s.element_count().unwrap_or(0).max(0) as f64;
    let b = s.byte_size().unwrap_or(0).max(0) as f64;
    (e, b)
}

/// Enumerated exactly below this many points when a map has constraints.
const ENUMERATE_LIMIT: u128 = 1 << 16;

/// Reads of each operand per output element, from the op's output-to-input maps. An
/// operand whose maps are unknown is read once per element.
pub(crate) fn reads_per_element(
    module: &Module,
    instr: &hlo::InstrRef<'_>,
    out_elements: f64,
) -> Vec<f64> {
    let i = instr.instr();
    let c = instr.computation();
    let operand_elements: Vec<f64> = i
        .operands()
        .iter()
        .map(|&o| shape_size(c.instr(o).shape()).0)
        .collect();
    let fallback = |k: usize| {
        if out_elements > 0.0 {
            operand_elements[k] / out_elements
        } else {
            0.0
        }
    };
    let n = i.operands().len();
    if ops::is_bookkeeping(i.opcode()) || out_elements <= 0.0 {
        return (0..n).map(fallback).collect();
    }
    if let Some(scan) = ops::scan(i) {
        // The scan emitter reads each input element once and the init values once per
        // line, not a window per output element.
        let per_line = 1.0 / scan.len as f64;
        return (0..n)
            .map(|k| if k < n / 2 { 1.0 } else { per_line })
            .collect();
    }
    if i.opcode() == Opcode::Scatter && n >= 3 {
        // The scatter kernel walks its updates once (each update element and its index
        // read once, combined into one result element); its operands are the buffers it
        // updates. The maps' box charges every update per result element.
        let updates = (n - 1) / 2;
        return (0..n)
            .map(|k| if k < updates { 1.0 } else { fallback(k) })
            .collect();
    }
    if i.opcode() == Opcode::DynamicUpdateSlice && n >= 2 {
        // The in-place kernel walks its update once (each update element read once, the
        // start indices once); its operand is the buffer it updates. The maps' box (the
        // update's map constrained to the window, a box of the whole output) charged
        // every update element per output element: a [1,32,512] row into a [64,32,512]
        // scan output was priced at 110 us a step where it runs in 6.
        return (0..n)
            .map(|k| if k == 0 { 1.0 } else { fallback(k) })
            .collect();
    }
    if let Some(sas) = select_scatter_plan(instr) {
        // The kernel's loops, not the maps' box (every source window per element).
        let [x, src, init, _] = sas.per_element(out_elements, operand_elements[1]);
        return [x, src, init].into_iter().take(n).collect();
    }
    let _ = module;
    let Ok(groups) = indexing::output_to_input(instr) else {
        return (0..n).map(fallback).collect();
    };
    (0..n)
        .map(|k| {
            let mut points = 0.0;
            for g in &groups {
                match g.operands.get(k) {
                    Some(set) if !set.is_undefined() => {
                        for m in set.maps() {
                            points += map_points(&m.map);
                        }
                    }
                    _ => return fallback(k),
                }
            }
            points / out_elements
        })
        .collect()
}

/// The kernel plan of a select-and-scatter ([`crate::select_scatter::plan`]); `None` for
/// any other op or a window the kernel does not take.
pub(crate) fn select_scatter_plan(
    instr: &hlo::InstrRef<'_>,
) -> Option<crate::select_scatter::SasPlan> {
    let i = instr.instr();
    if i.opcode() != Opcode::SelectAndScatter || i.operands().len() != 3 {
        return None;
    }
    let c = instr.computation();
    let dims = |k: usize| c.instr(i.operands()[k]).shape().dims().to_vec();
    crate::select_scatter::plan(&i.window()?.dims, &dims(0), &dims(1))
}

/// Points of a map's domain: exact when it has constraints and is small, else its box.
pub fn map_points(map: &affine::IndexingMap) -> f64 {
    let bounds: Vec<affine::Interval> = map.dims().iter().chain(map.ranges()).copied().collect();
    let size = affine::enumerate::box_size(&bounds);
    if map.constraints().is_empty() || size > ENUMERATE_LIMIT {
        return size as f64;
    }
    let nd = map.dims().len();
    let runtimes: Vec<i64> = map.runtimes().iter().map(|r| r.lo).collect();
    let mut count = 0u64;
    affine::enumerate::for_each_in_box(&bounds, |flat| {
        let p = affine::Point {
            dims: &flat[..nd],
            ranges: &flat[nd..],
            runtimes: &runtimes,
        };
        if map.constraints_satisfied(&p).unwrap_or(true) {
            count += 1;
        }
        true
    });
    count as f64
}
