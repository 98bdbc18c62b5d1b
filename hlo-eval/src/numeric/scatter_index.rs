//! Where each update element of a `scatter` goes, as XLA defines it: the index vector at
//! the update's scatter position (component `k` to operand dimension
//! `scatter_dims_to_operand_dims[k]`, operand batching dimensions taking the batch
//! coordinate), the update window dimensions walking the operand's window dimensions,
//! and a window that would reach outside the operand skipped. Updates are visited in
//! row-major update order (indices may repeat and the update computation need not
//! commute). Shared by the evaluator's `scatter` and the compiled CPU backend's, on
//! index vectors rather than literals.

use super::gather::IndexLayout;
use super::util::next_index;
use super::KernelError;

/// A scatter's dimension numbers, as dimension indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterDims {
    /// `update_window_dims` (dimensions of the updates).
    pub update_window_dims: Vec<usize>,
    /// `inserted_window_dims` (dimensions of the operand).
    pub inserted_window_dims: Vec<usize>,
    /// `scatter_dims_to_operand_dims`: the operand dimension of each index component.
    pub scatter_dims_to_operand_dims: Vec<usize>,
    /// `index_vector_dim` (the rank of the indices when they are implicit scalars).
    pub index_vector_dim: usize,
    /// `input_batching_dims` (dimensions of the operand).
    pub input_batching_dims: Vec<usize>,
    /// `scatter_indices_batching_dims` (dimensions of the indices).
    pub scatter_indices_batching_dims: Vec<usize>,
}

/// A scatter's placement of update elements into the operand, checked against the
/// operand, indices and update dimensions.
pub struct ScatterIndexing {
    operand_dims: Vec<usize>,
    update_dims: Vec<usize>,
    layout: IndexLayout,
    /// The start indices in row-major order.
    indices: Vec<i64>,
    to_operand: Vec<usize>,
    input_batching: Vec<usize>,
    /// Position among the indices' batch dimensions of each operand batching dimension.
    batching_positions: Vec<usize>,
    /// Update dimensions that are scatter (batch) positions, in order.
    update_scatter: Vec<usize>,
    /// Operand dimensions the update window walks, paired with `update_window`.
    operand_window: Vec<usize>,
    update_window: Vec<usize>,
    /// Window size per operand dimension.
    window_size: Vec<usize>,
}

fn check(ds: &[usize], rank: usize, what: &str) -> Result<(), KernelError> {
    match ds.iter().find(|&&d| d >= rank) {
        Some(d) => Err(KernelError::Invalid(format!(
            "{what}: dimension {d} out of range for rank {rank}"
        ))),
        None => Ok(()),
    }
}

impl ScatterIndexing {
    /// Checks the dimension numbers against the operand, indices and update dimensions;
    /// `indices` are the start indices in row-major order (as `i64`).
    pub fn new(
        operand_dims: &[usize],
        indices_dims: &[usize],
        indices: Vec<i64>,
        update_dims: &[usize],
        dn: &ScatterDims,
    ) -> Result<ScatterIndexing, KernelError> {
        const W: &str = "scatter";
        let rank = operand_dims.len();
        let ud = update_dims;
        let layout = IndexLayout::new(indices_dims.to_vec(), dn.index_vector_dim as i64, W)?;
        if indices.len() != indices_dims.iter().product::<usize>() {
            return Err(KernelError::Invalid(format!(
                "{W}: {} indices for dimensions {indices_dims:?}",
                indices.len()
            )));
        }
        let to_operand = dn.scatter_dims_to_operand_dims.clone();
        check(&to_operand, rank, "scatter scatter_dims_to_operand_dims")?;
        if to_operand.len() != layout.vector_len() {
            return Err(KernelError::Invalid(format!(
                "{W}: scatter_dims_to_operand_dims length differs from the index vector"
            )));
        }
        let inserted = &dn.inserted_window_dims;
        check(inserted, rank, "scatter inserted_window_dims")?;
        let ibatch = dn.input_batching_dims.clone();
        check(&ibatch, rank, "scatter input_batching_dims")?;
        let sbatch = &dn.scatter_indices_batching_dims;
        check(
            sbatch,
            layout.dims.len(),
            "scatter scatter_indices_batching_dims",
        )?;
        let uwin = dn.update_window_dims.clone();
        check(&uwin, ud.len(), "scatter update_window_dims")?;
        let uscatter: Vec<usize> = (0..ud.len()).filter(|d| !uwin.contains(d)).collect();
        let xwin: Vec<usize> = (0..rank)
            .filter(|d| !inserted.contains(d) && !ibatch.contains(d))
            .collect();
        if xwin.len() != uwin.len() || uscatter.len() != layout.batch_dims.len() {
            return Err(KernelError::Invalid(format!(
                "{W}: update dimensions do not match the operand and indices"
            )));
        }
        let sbatch_pos = layout.batching_positions(sbatch, W)?;
        let mut wsize = vec![1usize; rank];
        for (&x, &u) in xwin.iter().zip(&uwin) {
            wsize[x] = ud[u];
        }
        let xd = operand_dims;
        let shapes_agree = uscatter
            .iter()
            .zip(&layout.batch_dims)
            .all(|(&u, &b)| ud[u] == layout.dims[b])
            && xwin.iter().all(|&x| wsize[x] <= xd[x])
            && ibatch.len() == sbatch.len()
            && ibatch
                .iter()
                .zip(sbatch)
                .all(|(&x, &i)| xd[x] == layout.dims[i]);
        if !shapes_agree {
            return Err(KernelError::Invalid(format!(
                "{W}: update dimensions {ud:?} do not match the indices and operand"
            )));
        }
        Ok(ScatterIndexing {
            operand_dims: xd.to_vec(),
            update_dims: ud.to_vec(),
            layout,
            indices,
            to_operand,
            input_batching: ibatch,
            batching_positions: sbatch_pos,
            update_scatter: uscatter,
            operand_window: xwin,
            update_window: uwin,
            window_size: wsize,
        })
    }

    /// Calls `f(i, update, operand)` for every update element whose window lies inside
    /// the operand, in row-major update order: `i` is the update's row-major position,
    /// `update` its index and `operand` the operand index it combines into.
    pub fn for_each_update<E>(
        &self,
        mut f: impl FnMut(usize, &[usize], &[usize]) -> Result<(), E>,
    ) -> Result<(), E> {
        let (xd, ud) = (&self.operand_dims, &self.update_dims);
        let rank = xd.len();
        let total: usize = ud.iter().product();
        let mut u = vec![0usize; ud.len()];
        let mut batch = vec![0usize; self.update_scatter.len()];
        let mut start = vec![0i64; rank];
        let mut full = vec![0usize; rank];
        for ui in 0..total {
            for (b, &d) in batch.iter_mut().zip(&self.update_scatter) {
                *b = u[d];
            }
            self.layout.fill_window_start(
                &self.indices,
                &batch,
                &self.to_operand,
                &self.input_batching,
                &self.batching_positions,
                &mut start,
            );
            let in_bounds = (0..rank).all(|d| {
                start[d] >= 0 && start[d].saturating_add(self.window_size[d] as i64) <= xd[d] as i64
            });
            if in_bounds {
                for d in 0..rank {
                    full[d] = start[d] as usize;
                }
                for (&x, &w) in self.operand_window.iter().zip(&self.update_window) {
                    full[x] += u[w];
                }
                f(ui, &u, &full)?;
            }
            next_index(&mut u, ud);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of `x[4,2]` at indices `[3, 1, 5]`: the third window reaches outside and is
    /// skipped; the others visit their row in update order.
    #[test]
    fn rows_in_update_order_out_of_bounds_skipped() {
        let dn = ScatterDims {
            update_window_dims: vec![1],
            inserted_window_dims: vec![0],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
            input_batching_dims: vec![],
            scatter_indices_batching_dims: vec![],
        };
        let s = ScatterIndexing::new(&[4, 2], &[3, 1], vec![3, 1, 5], &[3, 2], &dn).unwrap();
        let mut seen = Vec::new();
        s.for_each_update(|i, u, x| {
            seen.push((i, u.to_vec(), x.to_vec()));
            Ok::<(), ()>(())
        })
        .unwrap();
        let want = vec![
            (0, vec![0, 0], vec![3, 0]),
            (1, vec![0, 1], vec![3, 1]),
            (2, vec![1, 0], vec![1, 0]),
            (3, vec![1, 1], vec![1, 1]),
        ];
        assert_eq!(seen, want);
    }

    #[test]
    fn rejects_dimensions_out_of_range() {
        let dn = ScatterDims {
            update_window_dims: vec![1],
            inserted_window_dims: vec![2],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
            input_batching_dims: vec![],
            scatter_indices_batching_dims: vec![],
        };
        assert!(ScatterIndexing::new(&[4, 2], &[3, 1], vec![0; 3], &[3, 2], &dn).is_err());
    }
}
