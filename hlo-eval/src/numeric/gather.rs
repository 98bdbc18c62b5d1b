//! `gather` in its general form (offset, collapsed and batching dimensions, any index
//! vector dimension) with XLA's clamping of start indices into the operand.

use super::util::{dim_list, dims_of, int_values, make_array, next_index, operand, take};
use super::KernelError;
use hlo::{Instruction, Literal};

/// How the dimensions of the start indices array are used: the index vector dimension
/// (if it is a real dimension) and the others, which are batch positions.
pub(crate) struct IndexLayout {
    /// Dimensions of the indices array.
    pub dims: Vec<usize>,
    /// Row-major strides of the indices array.
    pub strides: Vec<usize>,
    /// The index vector dimension, or `None` when it equals the rank (implicit 1).
    pub vector_dim: Option<usize>,
    /// The other dimensions, in order.
    pub batch_dims: Vec<usize>,
}

impl IndexLayout {
    pub(crate) fn new(dims: Vec<usize>, ivd: i64, what: &str) -> Result<IndexLayout, KernelError> {
        let rank = dims.len();
        let ivd = usize::try_from(ivd)
            .ok()
            .filter(|&d| d <= rank)
            .ok_or_else(|| KernelError::Invalid(format!("{what}: index_vector_dim {ivd}")))?;
        let vector_dim = (ivd < rank).then_some(ivd);
        let batch_dims = (0..rank).filter(|&d| Some(d) != vector_dim).collect();
        let strides = super::util::strides(&dims);
        Ok(IndexLayout {
            dims,
            strides,
            vector_dim,
            batch_dims,
        })
    }

    /// Length of each index vector.
    pub(crate) fn vector_len(&self) -> usize {
        self.vector_dim.map_or(1, |d| self.dims[d])
    }

    /// Flat offset of component `k` of the index vector at batch position `batch`.
    pub(crate) fn offset(&self, batch: &[usize], k: usize) -> usize {
        let mut off = self.vector_dim.map_or(0, |d| k * self.strides[d]);
        for (&d, &i) in self.batch_dims.iter().zip(batch) {
            off += i * self.strides[d];
        }
        off
    }

    /// Where each of the indices' batching dimensions `index_batching` stands among
    /// [`Self::batch_dims`]: an operand batching dimension takes the batch coordinate at
    /// that position. A batching dimension may not be the index vector dimension.
    pub(crate) fn batching_positions(
        &self,
        index_batching: &[usize],
        what: &str,
    ) -> Result<Vec<usize>, KernelError> {
        index_batching
            .iter()
            .map(|d| self.batch_dims.iter().position(|b| b == d))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                KernelError::Invalid(format!(
                    "{what}: a batching dimension is the index vector dimension"
                ))
            })
    }

    /// The unclamped start of the window at batch position `batch` in an operand of rank
    /// `rank`: component `k` of the index vector goes to operand dimension `to_operand[k]`,
    /// and operand batching dimension `operand_batching[i]` takes the batch coordinate at
    /// `batching_positions[i]`; every other dimension starts at 0.
    pub(crate) fn window_start(
        &self,
        indices: &[i64],
        batch: &[usize],
        to_operand: &[usize],
        operand_batching: &[usize],
        batching_positions: &[usize],
        rank: usize,
    ) -> Vec<i64> {
        let mut start = vec![0i64; rank];
        self.fill_window_start(
            indices,
            batch,
            to_operand,
            operand_batching,
            batching_positions,
            &mut start,
        );
        start
    }

    /// [`Self::window_start`] written into `start` (its length the operand's rank).
    pub(crate) fn fill_window_start(
        &self,
        indices: &[i64],
        batch: &[usize],
        to_operand: &[usize],
        operand_batching: &[usize],
        batching_positions: &[usize],
        start: &mut [i64],
    ) {
        start.fill(0);
        for (k, &d) in to_operand.iter().enumerate() {
            start[d] = indices[self.offset(batch, k)];
        }
        for (&d, &p) in operand_batching.iter().zip(batching_positions) {
            start[d] = batch[p] as i64;
        }
    }
}

/// Evaluates `gather`.
pub(crate) fn gather(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    const W: &str = "gather";
    let x = operand(operands, 0, W)?;
    let idx = operand(operands, 1, W)?;
    let dn = instr
        .gather_dimension_numbers()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing index_vector_dim")))?;
    let sizes = instr
        .gather_slice_sizes()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing slice_sizes")))?;
    let xd = dims_of(x.shape(), W)?;
    let rank = xd.len();
    if sizes.len() != rank {
        return Err(KernelError::Invalid(format!(
            "{W}: slice_sizes has {} entries for rank {rank}",
            sizes.len()
        )));
    }
    let sizes: Vec<usize> = sizes
        .iter()
        .zip(&xd)
        .map(|(&s, &d)| usize::try_from(s).ok().filter(|&s| s <= d))
        .collect::<Option<_>>()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: slice sizes exceed the operand")))?;
    let layout = IndexLayout::new(dims_of(idx.shape(), W)?, dn.index_vector_dim, W)?;
    let start_map = dim_list(&dn.start_index_map, rank, "gather start_index_map")?;
    if start_map.len() != layout.vector_len() {
        return Err(KernelError::Invalid(format!(
            "{W}: start_index_map length differs from the index vector"
        )));
    }
    let collapsed = dim_list(
        &dn.collapsed_slice_dims,
        rank,
        "gather collapsed_slice_dims",
    )?;
    let obatch = dim_list(
        &dn.operand_batching_dims,
        rank,
        "gather operand_batching_dims",
    )?;
    let ibatch = dim_list(
        &dn.start_indices_batching_dims,
        layout.dims.len(),
        "gather start_indices_batching_dims",
    )?;
    let out_dims = dims_of(instr.shape(), W)?;
    let offset_dims = dim_list(&dn.offset_dims, out_dims.len(), "gather offset_dims")?;
    let out_batch: Vec<usize> = (0..out_dims.len())
        .filter(|d| !offset_dims.contains(d))
        .collect();
    if out_batch.len() != layout.batch_dims.len() {
        return Err(KernelError::Invalid(format!(
            "{W}: output batch rank differs from the indices' batch rank"
        )));
    }
    // Operand dimensions that offset dims walk, in order.
    let window_dims: Vec<usize> = (0..rank)
        .filter(|d| !collapsed.contains(d) && !obatch.contains(d))
        .collect();
    if window_dims.len() != offset_dims.len() {
        return Err(KernelError::Invalid(format!(
            "{W}: offset_dims do not match the uncollapsed slice dims"
        )));
    }
    // Operand batching dim i takes the indices' batch coordinate of dimension ibatch[i];
    // find that coordinate's position among the indices' batch dims.
    let obatch_pos = layout.batching_positions(&ibatch, W)?;
    let shapes_agree = out_batch
        .iter()
        .zip(&layout.batch_dims)
        .all(|(&o, &b)| out_dims[o] == layout.dims[b])
        && offset_dims
            .iter()
            .zip(&window_dims)
            .all(|(&o, &x)| out_dims[o] == sizes[x])
        && collapsed.iter().chain(&obatch).all(|&d| sizes[d] <= 1)
        && obatch.len() == ibatch.len()
        && obatch
            .iter()
            .zip(&ibatch)
            .all(|(&x, &i)| xd[x] == layout.dims[i]);
    if !shapes_agree {
        return Err(KernelError::Invalid(format!(
            "{W}: result shape {} does not match the indices and slice sizes",
            instr.shape()
        )));
    }
    let indices = int_values(idx, W)?;
    let xs = super::util::strides(&xd);
    let total: usize = out_dims.iter().product();
    let mut src = Vec::with_capacity(total);
    let mut o = vec![0usize; out_dims.len()];
    let mut batch = vec![0usize; out_batch.len()];
    for _ in 0..total {
        for (b, &d) in batch.iter_mut().zip(&out_batch) {
            *b = o[d];
        }
        let mut start =
            layout.window_start(&indices, &batch, &start_map, &obatch, &obatch_pos, rank);
        // XLA clamps so that the whole slice is inside the operand.
        for &d in &start_map {
            start[d] = start[d].clamp(0, (xd[d] - sizes[d]) as i64);
        }
        let mut off = 0usize;
        for d in 0..rank {
            off += start[d] as usize * xs[d];
        }
        for (&od, &xdim) in offset_dims.iter().zip(&window_dims) {
            off += o[od] * xs[xdim];
        }
        src.push(off);
        next_index(&mut o, &out_dims);
    }
    if src.iter().any(|&s| s >= x.data().len()) {
        return Err(KernelError::Invalid(format!(
            "{W}: window exceeds the operand"
        )));
    }
    make_array(instr.shape(), take(x.data(), &src), W)
}
