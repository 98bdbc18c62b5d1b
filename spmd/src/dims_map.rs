//! Which dimensions of an op's operands map one to one onto its result's (the result's
//! element `i` along the dimension is the operand's element `i`): a full slice, no
//! padding, not the concatenated, reversed or sorted dimension, a full dynamic slice or
//! gather slice or scatter window, a window of one. Forward propagation keeps operands'
//! tiles on these dimensions (`rules_window.rs`), backward propagation carries users'
//! wishes back along them (`backward.rs`).

use hlo::attrs::WindowDim;
use hlo::{Computation, Instruction, Opcode};

/// An operand the op reads element for element along some dimensions: `map[d]` is the
/// result dimension operand dimension `d` is identical to (`None`: read across, whole).
pub(crate) struct Data {
    pub operand: usize,
    pub map: Vec<Option<usize>>,
}

impl Data {
    /// Operand `operand` of rank `rank` whose dimensions in `keep` map to the same result
    /// dimensions.
    fn same(operand: usize, rank: usize, keep: impl Fn(usize) -> bool) -> Data {
        Data {
            operand,
            map: (0..rank).map(|d| keep(d).then_some(d)).collect(),
        }
    }
}

/// A window dimension that reads one element: result element `i` is operand element `i`.
pub(crate) fn trivial(w: &WindowDim) -> bool {
    w.size == 1
        && w.stride == 1
        && w.padding_low == 0
        && w.padding_high == 0
        && w.base_dilation == 1
        && w.window_dilation == 1
}

/// The operands `instr` reads element for element along the dimensions they map to its
/// result's, `None` for ops this file does not take.
pub(crate) fn data_of(comp: &Computation, instr: &Instruction) -> Option<Vec<Data>> {
    let dims_of = |i: usize| {
        instr
            .operand(i)
            .map(|o| comp.instr(o).shape().dims().to_vec())
            .unwrap_or_default()
    };
    let rank = |i: usize| dims_of(i).len();
    let data = match instr.opcode() {
        Opcode::Slice => {
            let dims = dims_of(0);
            let slice = instr.slice()?;
            vec![Data::same(0, dims.len(), |d| {
                slice
                    .get(d)
                    .is_some_and(|s| s.start == 0 && s.limit == dims[d] && s.stride == 1)
            })]
        }
        Opcode::Pad => {
            let padding = instr.padding()?;
            vec![Data::same(0, rank(0), |d| {
                padding
                    .dims
                    .get(d)
                    .is_some_and(|p| p.low == 0 && p.high == 0 && p.interior == 0)
            })]
        }
        Opcode::Concatenate => {
            let along = *instr.dimensions()?.first()? as usize;
            (0..instr.operands().len())
                .map(|i| Data::same(i, rank(i), |d| d != along))
                .collect()
        }
        Opcode::Reverse => {
            let reversed = instr.dimensions()?.to_vec();
            vec![Data::same(0, rank(0), |d| !reversed.contains(&(d as i64)))]
        }
        Opcode::Sort => {
            let along = *instr.dimensions()?.first()? as usize;
            (0..instr.operands().len())
                .map(|i| Data::same(i, rank(i), |d| d != along))
                .collect()
        }
        Opcode::DynamicSlice => {
            let dims = dims_of(0);
            let sizes = instr.dynamic_slice_sizes()?.to_vec();
            vec![Data::same(0, dims.len(), |d| {
                sizes.get(d) == Some(&dims[d])
            })]
        }
        Opcode::DynamicUpdateSlice => {
            let dims = dims_of(0);
            let update = dims_of(1);
            let full = |d: usize| update.get(d) == Some(&dims[d]);
            vec![
                Data::same(0, dims.len(), full),
                Data::same(1, dims.len(), full),
            ]
        }
        Opcode::ReduceWindow => {
            let window = instr.window()?.clone();
            let n = instr.operands().len() / 2;
            (0..n)
                .map(|i| Data::same(i, rank(i), |d| window.dims.get(d).is_some_and(trivial)))
                .collect()
        }
        Opcode::SelectAndScatter => {
            let window = instr.window()?.clone();
            let keep = |d: usize| window.dims.get(d).is_some_and(trivial);
            vec![Data::same(0, rank(0), keep), Data::same(1, rank(1), keep)]
        }
        Opcode::Gather => gather(&dims_of, instr)?,
        Opcode::Scatter => scatter(&dims_of, instr)?,
        _ => return None,
    };
    Some(data)
}

/// A gather's operand dimensions it slices whole (a full slice, not collapsed, not a
/// batching dimension: every index reads all of it) map to their offset dimensions; the
/// indices' batch dimensions map to the result's batch dimensions (the index vector and
/// batching dimensions stay whole).
fn gather(dims_of: &dyn Fn(usize) -> Vec<i64>, instr: &Instruction) -> Option<Vec<Data>> {
    let dn = instr.gather_dimension_numbers()?;
    let sizes = instr.gather_slice_sizes()?.to_vec();
    let dims = dims_of(0);
    let indices_rank = dims_of(1).len();
    let out_rank = instr.shape().dims().len();
    let has = |v: &[i64], d: usize| v.contains(&(d as i64));
    let mut operand = vec![None; dims.len()];
    let windows = (0..dims.len())
        .filter(|&d| !has(&dn.collapsed_slice_dims, d) && !has(&dn.operand_batching_dims, d));
    for (k, d) in windows.enumerate() {
        if sizes.get(d) == Some(&dims[d]) {
            operand[d] = dn.offset_dims.get(k).map(|&o| o as usize);
        }
    }
    let batch_out = (0..out_rank).filter(|&o| !has(&dn.offset_dims, o));
    let batch_in = (0..indices_rank).filter(|&d| d as i64 != dn.index_vector_dim);
    let mut indices = vec![None; indices_rank];
    for (d, o) in batch_in.zip(batch_out) {
        if !has(&dn.start_indices_batching_dims, d) {
            indices[d] = Some(o);
        }
    }
    Some(vec![
        Data {
            operand: 0,
            map: operand,
        },
        Data {
            operand: 1,
            map: indices,
        },
    ])
}

/// A scatter's operand dimensions its update windows cover whole (a full window, not
/// inserted, not a batching dimension) keep their tiles, in its operands and the
/// matching window dimensions of its updates; the indices stay whole.
fn scatter(dims_of: &dyn Fn(usize) -> Vec<i64>, instr: &Instruction) -> Option<Vec<Data>> {
    let dn = instr.scatter_dimension_numbers()?;
    let n = (instr.operands().len() - 1) / 2;
    let dims = dims_of(0);
    let updates = dims_of(n + 1);
    let has = |v: &[i64], d: usize| v.contains(&(d as i64));
    let mut operand = vec![None; dims.len()];
    let mut update = vec![None; updates.len()];
    let windows = (0..dims.len())
        .filter(|&d| !has(&dn.inserted_window_dims, d) && !has(&dn.input_batching_dims, d));
    for (k, d) in windows.enumerate() {
        let Some(&u) = dn.update_window_dims.get(k) else {
            continue;
        };
        if updates.get(u as usize) == Some(&dims[d]) {
            operand[d] = Some(d);
            update[u as usize] = Some(d);
        }
    }
    let mut data: Vec<Data> = (0..n)
        .map(|i| Data {
            operand: i,
            map: operand.clone(),
        })
        .collect();
    data.extend((0..n).map(|i| Data {
        operand: n + 1 + i,
        map: update.clone(),
    }));
    Some(data)
}
