//! Dynamic-slice, dynamic-update-slice, gather and scatter: start indices read from another
//! tensor are runtime variables (`rtK`) whose provenance is the index operand and the element
//! read; XLA's clamping of start indices is explicit (`min(max(rt, 0), hi)`).

use affine::{Expr, IndexingMap, Interval};

use super::util::{boxes, c, clamp, from_scalar, identity, index_range, map, to_scalar, OpView};
use crate::{IndexedMap, IndexingError, OperandIndexing, RuntimeVar};

/// Runtime variables for the start indices of a dynamic-(update-)slice, whose first start
/// operand is `first`; `space` is the map's variable space (dims, ranges).
struct Starts {
    runtimes: Vec<Interval>,
    /// Which operand and which element of it holds start `i`: scalars (`None`) or one
    /// rank-1 vector (`Some(i)`).
    sources: Vec<(usize, Option<i64>)>,
}

fn starts(v: &OpView<'_>, first: usize, rank: usize) -> Result<Starts, IndexingError> {
    let n = v.arity() - first;
    let vector = n == 1 && v.operand_dims(first)?.len() == 1;
    let mut runtimes = Vec::new();
    let mut sources = Vec::new();
    if vector && rank > 0 {
        let ty = v.operand_shape(first)?.element_type();
        for i in 0..rank {
            runtimes.push(index_range(ty));
            sources.push((first, Some(i as i64)));
        }
    } else {
        if n != rank {
            return Err(v.malformed(format!("{n} start indices for rank {rank}")));
        }
        for i in 0..rank {
            runtimes.push(index_range(v.operand_shape(first + i)?.element_type()));
            sources.push((first + i, None));
        }
    }
    Ok(Starts { runtimes, sources })
}

impl Starts {
    fn runtime_vars(
        &self,
        v: &OpView<'_>,
        dims: &[i64],
        ranges: &[i64],
    ) -> Result<Vec<RuntimeVar>, IndexingError> {
        self.sources
            .iter()
            .map(|&(op, elem)| {
                let results = elem.map(c).into_iter().collect();
                let m = IndexingMap::new(
                    boxes(dims),
                    boxes(ranges),
                    self.runtimes.clone(),
                    results,
                    vec![],
                )?;
                v.runtime_var(op, m)
            })
            .collect()
    }

    /// Maps from `dims` to every start index operand: `(d...) -> ()` (or the vector).
    fn index_operands(
        &self,
        v: &OpView<'_>,
        dims: &[i64],
    ) -> Result<Vec<OperandIndexing>, IndexingError> {
        let first = self.sources.first().map_or(v.arity(), |s| s.0);
        (first..v.arity())
            .map(|_| {
                if self.sources.iter().any(|s| s.1.is_some()) {
                    let m = map(
                        dims,
                        &[self.sources.len() as i64],
                        vec![Expr::range(0)],
                        vec![],
                    )?;
                    Ok(OperandIndexing::map(m))
                } else {
                    to_scalar(dims)
                }
            })
            .collect()
    }
}

fn clamped_starts(operand: &[i64], window: &[i64]) -> Vec<Expr> {
    operand
        .iter()
        .zip(window)
        .enumerate()
        .map(|(i, (&n, &w))| clamp(Expr::runtime(i as u32), n - w))
        .collect()
}

fn rt_set(map: IndexingMap, runtime: Vec<RuntimeVar>) -> OperandIndexing {
    OperandIndexing::single(IndexedMap { map, runtime })
}

pub(crate) fn dynamic_slice_out_to_in(
    v: &OpView<'_>,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let input = v.operand_dims(0)?;
    let st = starts(v, 1, input.len())?;
    if out.len() != input.len() || out.iter().zip(input).any(|(o, i)| o > i) {
        return Err(v.malformed("slice sizes do not fit the operand"));
    }
    let results = clamped_starts(input, out)
        .into_iter()
        .enumerate()
        .map(|(i, s)| Expr::dim(i as u32) + s)
        .collect();
    let m = IndexingMap::new(boxes(out), vec![], st.runtimes.clone(), results, vec![])?;
    let mut ops = vec![rt_set(m, st.runtime_vars(v, out, &[])?)];
    ops.extend(st.index_operands(v, out)?);
    Ok(ops)
}

pub(crate) fn dynamic_slice_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    if operand > 0 {
        return Ok(vec![from_scalar(out)?]);
    }
    let input = v.operand_dims(0)?;
    let st = starts(v, 1, input.len())?;
    let mut results = Vec::new();
    let mut cons = Vec::new();
    for (i, s) in clamped_starts(input, out).into_iter().enumerate() {
        let e = Expr::dim(i as u32) - s;
        cons.push((e, Interval::new(0, out[i] - 1)));
        results.push(e);
    }
    let m = IndexingMap::new(boxes(input), vec![], st.runtimes.clone(), results, cons)?;
    Ok(vec![rt_set(m, st.runtime_vars(v, input, &[])?)])
}

pub(crate) fn dus_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let upd = v.operand_dims(1)?;
    let st = starts(v, 2, out.len())?;
    if upd.len() != out.len() || upd.iter().zip(out).any(|(u, o)| u > o) {
        return Err(v.malformed("update does not fit the operand"));
    }
    let mut results = Vec::new();
    let mut cons = Vec::new();
    for (i, s) in clamped_starts(out, upd).into_iter().enumerate() {
        let e = Expr::dim(i as u32) - s;
        cons.push((e, Interval::new(0, upd[i] - 1)));
        results.push(e);
    }
    let m = IndexingMap::new(boxes(out), vec![], st.runtimes.clone(), results, cons)?;
    let mut ops = vec![identity(out), rt_set(m, st.runtime_vars(v, out, &[])?)];
    ops.extend(st.index_operands(v, out)?);
    Ok(ops)
}

pub(crate) fn dus_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    match operand {
        0 => Ok(vec![identity(out)]),
        1 => {
            let upd = v.operand_dims(1)?;
            let st = starts(v, 2, out.len())?;
            let results = clamped_starts(out, upd)
                .into_iter()
                .enumerate()
                .map(|(i, s)| Expr::dim(i as u32) + s)
                .collect();
            let m = IndexingMap::new(boxes(upd), vec![], st.runtimes.clone(), results, vec![])?;
            Ok(vec![rt_set(m, st.runtime_vars(v, upd, &[])?)])
        }
        _ => Ok(vec![from_scalar(out)?]),
    }
}

/// The dimensions of gather/scatter, normalized.
struct IndexedDims {
    /// Dimensions of the indices operand other than the index vector dimension, in order.
    index_batch: Vec<usize>,
    /// The index vector dimension, if it is a real dimension.
    ivd: Option<usize>,
    /// Number of components of an index vector.
    vec_len: usize,
}

fn indexed_dims(
    v: &OpView<'_>,
    indices: &[i64],
    ivd: i64,
    vec_len: usize,
) -> Result<IndexedDims, IndexingError> {
    let rank = indices.len();
    let ivd = usize::try_from(ivd)
        .ok()
        .filter(|&x| x <= rank)
        .ok_or_else(|| v.malformed("bad index_vector_dim"))?;
    let real = (ivd < rank).then_some(ivd);
    let expected = real.map_or(1, |d| indices[d] as usize);
    if vec_len != expected {
        return Err(v.malformed("index vector length does not match the index map"));
    }
    Ok(IndexedDims {
        index_batch: (0..rank).filter(|&d| Some(d) != real).collect(),
        ivd: real,
        vec_len,
    })
}

impl IndexedDims {
    /// The indices element holding component `k` for batch position `batch[j]`.
    fn element(&self, rank: usize, batch: &[Expr], k: Expr) -> Vec<Expr> {
        let mut r = vec![c(0); rank];
        for (j, &d) in self.index_batch.iter().enumerate() {
            r[d] = batch[j];
        }
        if let Some(d) = self.ivd {
            r[d] = k;
        }
        r
    }
}

fn to_usize(v: &OpView<'_>, xs: &[i64], rank: usize) -> Result<Vec<usize>, IndexingError> {
    xs.iter()
        .map(|&x| {
            usize::try_from(x)
                .ok()
                .filter(|&x| x < rank)
                .ok_or_else(|| v.malformed(format!("bad dimension {x}")))
        })
        .collect()
}

struct Gather {
    idx: IndexedDims,
    offset_dims: Vec<usize>,
    batch_out: Vec<usize>,
    window_dims: Vec<usize>,
    start_map: Vec<usize>,
    operand_batching: Vec<usize>,
    indices_batching: Vec<usize>,
    slice_sizes: Vec<i64>,
}

fn gather(v: &OpView<'_>) -> Result<Gather, IndexingError> {
    let dn = v
        .instr
        .gather_dimension_numbers()
        .ok_or_else(|| v.malformed("missing gather dimension numbers"))?;
    let (operand, indices, out) = (v.operand_dims(0)?, v.operand_dims(1)?, v.out_dims(0)?);
    let slice_sizes = v
        .instr
        .gather_slice_sizes()
        .ok_or_else(|| v.malformed("missing slice_sizes"))?
        .to_vec();
    if slice_sizes.len() != operand.len() {
        return Err(v.malformed("slice_sizes does not match the operand rank"));
    }
    let idx = indexed_dims(v, indices, dn.index_vector_dim, dn.start_index_map.len())?;
    let offset_dims = to_usize(v, &dn.offset_dims, out.len())?;
    let collapsed = to_usize(v, &dn.collapsed_slice_dims, operand.len())?;
    let operand_batching = to_usize(v, &dn.operand_batching_dims, operand.len())?;
    let indices_batching = to_usize(v, &dn.start_indices_batching_dims, indices.len())?;
    let start_map = to_usize(v, &dn.start_index_map, operand.len())?;
    let batch_out: Vec<usize> = (0..out.len())
        .filter(|d| !offset_dims.contains(d))
        .collect();
    let window_dims: Vec<usize> = (0..operand.len())
        .filter(|d| !collapsed.contains(d) && !operand_batching.contains(d))
        .collect();
    if window_dims.len() != offset_dims.len()
        || batch_out.len() != idx.index_batch.len()
        || operand_batching.len() != indices_batching.len()
    {
        return Err(v.malformed("gather dimension numbers do not fit the shapes"));
    }
    Ok(Gather {
        idx,
        offset_dims,
        batch_out,
        window_dims,
        start_map,
        operand_batching,
        indices_batching,
        slice_sizes,
    })
}

impl Gather {
    /// The start of the slice along operand dimension `o`, given the output batch indices.
    fn start(&self, o: usize, operand: &[i64], batch: &[Expr]) -> Expr {
        if let Some(k) = self.start_map.iter().position(|&x| x == o) {
            return clamp(Expr::runtime(k as u32), operand[o] - self.slice_sizes[o]);
        }
        if let Some(m) = self.operand_batching.iter().position(|&x| x == o) {
            let t = self.indices_batching[m];
            if let Some(j) = self.idx.index_batch.iter().position(|&x| x == t) {
                return batch[j];
            }
        }
        c(0)
    }

    fn runtime_vars(
        &self,
        v: &OpView<'_>,
        dims: &[i64],
        ranges: &[i64],
        runtimes: &[Interval],
        batch: &[Expr],
    ) -> Result<Vec<RuntimeVar>, IndexingError> {
        let rank = v.operand_dims(1)?.len();
        (0..self.idx.vec_len)
            .map(|k| {
                let m = IndexingMap::new(
                    boxes(dims),
                    boxes(ranges),
                    runtimes.to_vec(),
                    self.idx.element(rank, batch, c(k as i64)),
                    vec![],
                )?;
                v.runtime_var(1, m)
            })
            .collect()
    }
}

pub(crate) fn gather_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let g = gather(v)?;
    let (operand, indices, out) = (v.operand_dims(0)?, v.operand_dims(1)?, v.out_dims(0)?);
    let batch: Vec<Expr> = g.batch_out.iter().map(|&d| Expr::dim(d as u32)).collect();
    let runtimes = vec![index_range(v.operand_shape(1)?.element_type()); g.idx.vec_len];
    let mut results = Vec::new();
    for o in 0..operand.len() {
        let offset = match g.window_dims.iter().position(|&x| x == o) {
            Some(j) => Expr::dim(g.offset_dims[j] as u32),
            None => c(0),
        };
        results.push(g.start(o, operand, &batch) + offset);
    }
    let m = IndexingMap::new(boxes(out), vec![], runtimes.clone(), results, vec![])?;
    let rts = g.runtime_vars(v, out, &[], &runtimes, &batch)?;
    let (ranges, k) = match g.idx.ivd {
        Some(_) => (vec![g.idx.vec_len as i64], Expr::range(0)),
        None => (vec![], c(0)),
    };
    let im = map(
        out,
        &ranges,
        g.idx.element(indices.len(), &batch, k),
        vec![],
    )?;
    Ok(vec![rt_set(m, rts), OperandIndexing::map(im)])
}

pub(crate) fn gather_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let g = gather(v)?;
    let (input, indices, out) = (v.operand_dims(0)?, v.operand_dims(1)?, v.out_dims(0)?);
    let mut results = vec![c(0); out.len()];
    if operand == 1 {
        // Index element (batch..., k) is used by every output of its batch position.
        let mut ranges = Vec::new();
        for (j, &d) in g.idx.index_batch.iter().enumerate() {
            results[g.batch_out[j]] = Expr::dim(d as u32);
        }
        for &od in &g.offset_dims {
            results[od] = Expr::range(ranges.len() as u32);
            ranges.push(out[od]);
        }
        return Ok(vec![OperandIndexing::map(map(
            indices,
            &ranges,
            results,
            vec![],
        )?)]);
    }
    let ranges: Vec<i64> = g.batch_out.iter().map(|&d| out[d]).collect();
    let batch: Vec<Expr> = (0..ranges.len() as u32).map(Expr::range).collect();
    for (j, &d) in g.batch_out.iter().enumerate() {
        results[d] = batch[j];
    }
    let runtimes = vec![index_range(v.operand_shape(1)?.element_type()); g.idx.vec_len];
    let mut cons = Vec::new();
    for o in 0..input.len() {
        let rel = Expr::dim(o as u32) - g.start(o, input, &batch);
        match g.window_dims.iter().position(|&x| x == o) {
            Some(j) => {
                cons.push((rel, Interval::new(0, g.slice_sizes[o] - 1)));
                results[g.offset_dims[j]] = rel;
            }
            None => cons.push((rel, Interval::point(0))),
        }
    }
    let m = IndexingMap::new(
        boxes(input),
        boxes(&ranges),
        runtimes.clone(),
        results,
        cons,
    )?;
    let rts = g.runtime_vars(v, input, &ranges, &runtimes, &batch)?;
    Ok(vec![rt_set(m, rts)])
}

struct Scatter {
    n: usize,
    idx: IndexedDims,
    update_window: Vec<usize>,
    update_scatter: Vec<usize>,
    operand_window: Vec<usize>,
    to_operand: Vec<usize>,
    input_batching: Vec<usize>,
    indices_batching: Vec<usize>,
}

fn scatter(v: &OpView<'_>) -> Result<Scatter, IndexingError> {
    let n = (v.arity().saturating_sub(1)) / 2;
    if n == 0 || v.arity() != 2 * n + 1 {
        return Err(v.malformed("scatter needs operands, indices and as many updates"));
    }
    let dn = v
        .instr
        .scatter_dimension_numbers()
        .ok_or_else(|| v.malformed("missing scatter dimension numbers"))?;
    let (operand, indices, updates) = (
        v.operand_dims(0)?,
        v.operand_dims(n)?,
        v.operand_dims(n + 1)?,
    );
    let idx = indexed_dims(
        v,
        indices,
        dn.index_vector_dim,
        dn.scatter_dims_to_operand_dims.len(),
    )?;
    let update_window = to_usize(v, &dn.update_window_dims, updates.len())?;
    let inserted = to_usize(v, &dn.inserted_window_dims, operand.len())?;
    let input_batching = to_usize(v, &dn.input_batching_dims, operand.len())?;
    let indices_batching = to_usize(v, &dn.scatter_indices_batching_dims, indices.len())?;
    let to_operand = to_usize(v, &dn.scatter_dims_to_operand_dims, operand.len())?;
    let update_scatter: Vec<usize> = (0..updates.len())
        .filter(|d| !update_window.contains(d))
        .collect();
    let operand_window: Vec<usize> = (0..operand.len())
        .filter(|d| !inserted.contains(d) && !input_batching.contains(d))
        .collect();
    if operand_window.len() != update_window.len()
        || update_scatter.len() != idx.index_batch.len()
        || input_batching.len() != indices_batching.len()
    {
        return Err(v.malformed("scatter dimension numbers do not fit the shapes"));
    }
    Ok(Scatter {
        n,
        idx,
        update_window,
        update_scatter,
        operand_window,
        to_operand,
        input_batching,
        indices_batching,
    })
}

impl Scatter {
    /// Start of the update window along operand dim `o` and the window's size there.
    fn start(&self, o: usize, updates: &[i64], batch: &[Expr]) -> (Expr, i64) {
        let size = match self.operand_window.iter().position(|&x| x == o) {
            Some(j) => updates[self.update_window[j]],
            None => 1,
        };
        if let Some(k) = self.to_operand.iter().position(|&x| x == o) {
            return (Expr::runtime(k as u32), size);
        }
        if let Some(m) = self.input_batching.iter().position(|&x| x == o) {
            let t = self.indices_batching[m];
            if let Some(j) = self.idx.index_batch.iter().position(|&x| x == t) {
                return (batch[j], size);
            }
        }
        (c(0), size)
    }

    /// The map from `dims`/`ranges` to the update element, constraints and runtime vars
    /// shared by both directions: `o` are the operand (output) indices.
    #[allow(clippy::too_many_arguments)]
    fn window(
        &self,
        operand: &[i64],
        updates: &[i64],
        o: &[Expr],
        batch: &[Expr],
    ) -> (Vec<Expr>, Vec<(Expr, Interval)>) {
        let mut upd = vec![c(0); updates.len()];
        for (j, &d) in self.update_scatter.iter().enumerate() {
            upd[d] = batch[j];
        }
        let mut cons = Vec::new();
        for (od, &n) in operand.iter().enumerate() {
            let (start, size) = self.start(od, updates, batch);
            // XLA skips an update whose window leaves the operand: starts stay in bounds.
            if start
                .as_var()
                .is_some_and(|v| v.kind == affine::VarKind::Runtime)
            {
                cons.push((start, Interval::new(0, n - size)));
            }
            let rel = o[od] - start;
            match self.operand_window.iter().position(|&x| x == od) {
                Some(j) => {
                    cons.push((rel, Interval::new(0, size - 1)));
                    upd[self.update_window[j]] = rel;
                }
                None => cons.push((rel, Interval::point(0))),
            }
        }
        (upd, cons)
    }
}

pub(crate) fn scatter_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let s = scatter(v)?;
    let out = v.operand_dims(0)?;
    let indices = v.operand_dims(s.n)?;
    let updates = v.operand_dims(s.n + 1)?;
    let ranges: Vec<i64> = s.update_scatter.iter().map(|&d| updates[d]).collect();
    let batch: Vec<Expr> = (0..ranges.len() as u32).map(Expr::range).collect();
    let o: Vec<Expr> = (0..out.len() as u32).map(Expr::dim).collect();
    let (upd, cons) = s.window(out, updates, &o, &batch);
    let runtimes = vec![index_range(v.operand_shape(s.n)?.element_type()); s.idx.vec_len];
    let m = IndexingMap::new(boxes(out), boxes(&ranges), runtimes.clone(), upd, cons)?;
    let rts = (0..s.idx.vec_len)
        .map(|k| {
            let rm = IndexingMap::new(
                boxes(out),
                boxes(&ranges),
                runtimes.clone(),
                s.idx.element(indices.len(), &batch, c(k as i64)),
                vec![],
            )?;
            v.runtime_var(s.n, rm)
        })
        .collect::<Result<Vec<_>, IndexingError>>()?;
    let mut ops = vec![identity(out); s.n];
    // Any index may send an update to any output element: every index is read (superset).
    let all: Vec<Expr> = (0..indices.len() as u32).map(Expr::range).collect();
    ops.push(OperandIndexing::map(map(out, indices, all, vec![])?));
    ops.extend(vec![rt_set(m, rts); s.n]);
    Ok(ops)
}

pub(crate) fn scatter_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let s = scatter(v)?;
    let out = v.operand_dims(0)?;
    let indices = v.operand_dims(s.n)?;
    let updates = v.operand_dims(s.n + 1)?;
    let one = if operand < s.n {
        identity(out)
    } else if operand == s.n {
        let all: Vec<Expr> = (0..out.len() as u32).map(Expr::range).collect();
        OperandIndexing::map(map(indices, out, all, vec![])?)
    } else {
        // Update element u lands on operand index start + window offset.
        let batch: Vec<Expr> = s
            .update_scatter
            .iter()
            .map(|&d| Expr::dim(d as u32))
            .collect();
        let runtimes = vec![index_range(v.operand_shape(s.n)?.element_type()); s.idx.vec_len];
        let mut results = Vec::new();
        let mut cons = Vec::new();
        for (od, &n) in out.iter().enumerate() {
            let (start, size) = s.start(od, updates, &batch);
            if start
                .as_var()
                .is_some_and(|v| v.kind == affine::VarKind::Runtime)
            {
                cons.push((start, Interval::new(0, n - size)));
            }
            let off = match s.operand_window.iter().position(|&x| x == od) {
                Some(j) => Expr::dim(s.update_window[j] as u32),
                None => c(0),
            };
            results.push(start + off);
        }
        let m = IndexingMap::new(boxes(updates), vec![], runtimes.clone(), results, cons)?;
        let rts = (0..s.idx.vec_len)
            .map(|k| {
                let rm = IndexingMap::new(
                    boxes(updates),
                    vec![],
                    runtimes.clone(),
                    s.idx.element(indices.len(), &batch, c(k as i64)),
                    vec![],
                )?;
                v.runtime_var(s.n, rm)
            })
            .collect::<Result<Vec<_>, IndexingError>>()?;
        rt_set(m, rts)
    };
    Ok(vec![one; s.n])
}
