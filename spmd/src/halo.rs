//! Halos: a windowed op (reduce-window, convolution) on a split spatial dimension runs
//! on each device's tile extended by the elements its output tile's windows read from
//! the neighbouring tiles. The extent comes from the op's indexing map along that
//! dimension: output tile `k` (`[k*Lo, (k+1)*Lo)`) reads input `[k*Lo*s - lo,
//! (k*Lo + Lo - 1)*s - lo + (w-1)*dil + 1)` (stride `s`, low padding `lo`, window `w`,
//! window dilation `dil`), which reaches `left_k` elements before input tile `k`
//! (`[k*Li, (k+1)*Li)`) and `right_k` after it. Every device receives the largest
//! `left` from the tile before and `right` from the tile after (two collective-permutes),
//! sets the positions outside the array to the op's padding value (the init value of a
//! reduce-window, zero for a convolution), and cuts its own window out at an offset
//! looked up by partition id; the local op then runs without padding on that dimension.
//! A halo wider than one tile (a neighbour's neighbour) or base dilation is not taken:
//! the dimension is gathered instead.

use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, SliceDim, Window, WindowDim};
use hlo::{ElementType, InstrId, Instruction, Opcode, Shape};

use crate::context::{text, Ctx};
use crate::decision::{Decision, Halo, ValueTiling};
use crate::dims_map::trivial;
use crate::emit::{with_dims, Emit};
use crate::error::SpmdError;
use crate::tiling::{shard_len, Tiling};

/// The halo of a dimension of `n_in` elements split `tiles` ways (tile `k` on device
/// `d` is `tile_of[d]`) read by window `w` into `n_out` outputs, or `None` when it is not
/// one exchange with each neighbour.
pub(crate) fn plan(
    n_in: i64,
    n_out: i64,
    tiles: i64,
    tile_of: &[i64],
    w: &WindowDim,
) -> Option<(i64, i64, Vec<i64>, i64)> {
    if w.base_dilation != 1 || tiles < 2 || w.stride < 1 || w.window_dilation < 1 {
        return None;
    }
    let li = shard_len(n_in, tiles);
    let lo = shard_len(n_out, tiles);
    if lo < 1 {
        return None;
    }
    let span = (w.size - 1) * w.window_dilation + 1;
    let left = |k: i64| k * li - (k * lo * w.stride - w.padding_low);
    let right = |k: i64| ((k * lo + lo - 1) * w.stride - w.padding_low + span) - (k + 1) * li;
    let low = (0..tiles).map(left).max()?.max(0);
    let high = (0..tiles).map(right).max()?.max(0);
    if low > li || high > li {
        return None;
    }
    let length = (lo - 1) * w.stride + span;
    let offsets = tile_of.iter().map(|&k| low - left(k)).collect();
    Some((low, high, offsets, length))
}

/// `w` as the local op runs it on a halo-extended dimension: no padding.
pub(crate) fn unpadded(w: &WindowDim) -> WindowDim {
    WindowDim {
        padding_low: 0,
        padding_high: 0,
        ..w.clone()
    }
}

/// The decision for a single-input reduce-window whose input splits a non-trivial window
/// dimension, when every such dimension takes a halo; `None` otherwise (the pass-through
/// rule then gathers those dimensions).
pub(crate) fn reduce_window(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    window: &Window,
) -> Option<Result<Decision, SpmdError>> {
    if instr.operands().len() != 2 || !instr.shape().is_array() {
        return None;
    }
    let t = ctx.operand_array(instr, 0).ok()?.clone();
    if window.dims.len() != t.tiles.len() {
        return None;
    }
    let n_in = ctx.operand_dims(instr, 0);
    let n_out = instr.shape().dims().to_vec();
    let mut halos = Vec::new();
    let mut local = window.clone();
    for (d, w) in window.dims.iter().enumerate() {
        if trivial(w) || t.tiles[d] == 1 {
            continue;
        }
        let tile_of: Vec<i64> = t.of_device.iter().map(|i| i[d]).collect();
        let (low, high, offsets, length) = plan(n_in[d], n_out[d], t.tiles[d], &tile_of, w)?;
        halos.push(Halo {
            operand: 0,
            dim: d,
            low,
            high,
            offsets,
            length,
            fill: Some(1),
        });
        local.dims[d] = unpadded(w);
    }
    if halos.is_empty() {
        return None;
    }
    let dims: Vec<usize> = halos.iter().map(|h| h.dim).collect();
    let why = format!(
        "reduce-window on split window dimension(s) {dims:?}: halos of {} exchanged with the neighbouring tiles; {}",
        halos
            .iter()
            .map(|h| format!("{}+{}", h.low, h.high))
            .collect::<Vec<_>>()
            .join(", "),
        text(&t)
    );
    Some(Ok(Decision {
        out: ValueTiling::Array(t.clone()),
        local: ValueTiling::Array(t),
        operands: vec![None, None],
        tuple_operands: Vec::new(),
        partial: None,
        window: Some(local),
        halos,
        called: Vec::new(),
        why,
    }))
}

impl Emit {
    /// `v` (this device's tile of an array of `n` elements along `h.dim`, tiled `t`)
    /// extended by its halos, positions outside the array set to `fill`, cut to the
    /// window `h` says.
    pub(crate) fn halo(
        &mut self,
        v: InstrId,
        n: i64,
        t: &Tiling,
        h: &Halo,
        fill: InstrId,
        what: &str,
    ) -> Result<InstrId, SpmdError> {
        let shape = self
            .b
            .get(v)
            .map(|i| i.shape().clone())
            .ok_or_else(|| SpmdError::invalid(what, "no operand"))?;
        let d = h.dim;
        let dims = shape.dims().to_vec();
        let li = dims[d];
        let groups = t
            .groups_along(&[d])
            .map_err(|e| SpmdError::invalid(what, e))?;
        let forward: Vec<Vec<i64>> = groups
            .iter()
            .flat_map(|g| g.windows(2).map(|p| vec![p[0], p[1]]))
            .collect();
        let backward: Vec<Vec<i64>> = forward.iter().map(|p| vec![p[1], p[0]]).collect();
        let mut parts = Vec::new();
        if h.low > 0 {
            let tail = self.slice_dim(v, &shape, d, li - h.low, li);
            parts.push(self.permute(tail, forward));
        }
        parts.push(v);
        if h.high > 0 {
            let head = self.slice_dim(v, &shape, d, 0, h.high);
            parts.push(self.permute(head, backward));
        }
        let ext_len = h.low + li + h.high;
        let mut ext_dims = dims.clone();
        ext_dims[d] = ext_len;
        let ext_shape = with_dims(&shape, ext_dims.clone());
        let mut ext = match parts.len() {
            1 => v,
            _ => {
                let c = self
                    .op("halo", Opcode::Concatenate, ext_shape.clone(), parts)
                    .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![d as i64]));
                self.b.add(c)
            }
        };
        // Global index of the extended tile's first element, per device.
        let first: Vec<i64> = t.of_device.iter().map(|i| i[d] * li - h.low).collect();
        if first.iter().any(|&f| f < 0 || f + ext_len > n) {
            ext = self.mask_outside(ext, &ext_shape, d, &first, n, fill)?;
        }
        if h.offsets.iter().all(|&o| o == 0) && h.length == ext_len {
            return Ok(ext);
        }
        let mut operands = vec![ext];
        for k in 0..dims.len() {
            let table = match k == d {
                true => h.offsets.iter().map(|&o| o as i32).collect(),
                false => vec![0; t.devices()],
            };
            operands.push(self.offset(table)?);
        }
        let mut sizes = ext_dims;
        sizes[d] = h.length;
        let ds = self
            .op(
                "halo-window",
                Opcode::DynamicSlice,
                with_dims(&shape, sizes.clone()),
                operands,
            )
            .with_attr(AttrName::DynamicSliceSizes, AttrValue::IntList(sizes));
        Ok(self.b.add(ds))
    }

    /// `v` (shape `shape`) cut to `[start, limit)` along `d`.
    fn slice_dim(
        &mut self,
        v: InstrId,
        shape: &Shape,
        d: usize,
        start: i64,
        limit: i64,
    ) -> InstrId {
        let dims = shape.dims();
        let mut out = dims.to_vec();
        out[d] = limit - start;
        let slice = (0..dims.len())
            .map(|i| match i == d {
                true => SliceDim {
                    start,
                    limit,
                    stride: 1,
                },
                false => SliceDim {
                    start: 0,
                    limit: dims[i],
                    stride: 1,
                },
            })
            .collect();
        let i = self
            .op("halo-part", Opcode::Slice, with_dims(shape, out), vec![v])
            .with_attr(AttrName::Slice, AttrValue::Slice(slice));
        self.b.add(i)
    }

    /// `collective-permute(v)` over `pairs` of partition ids (a device no pair targets
    /// receives zeros).
    pub(crate) fn permute(&mut self, v: InstrId, pairs: Vec<Vec<i64>>) -> InstrId {
        let shape = self
            .b
            .get(v)
            .map(|i| i.shape().clone())
            .unwrap_or_else(|| Shape::scalar(ElementType::F32));
        let channel = self.next_channel();
        let i = self
            .op(
                "collective-permute",
                Opcode::CollectivePermute,
                shape,
                vec![v],
            )
            .with_attr(AttrName::ChannelId, AttrValue::Int(channel))
            .with_attr(AttrName::SourceTargetPairs, AttrValue::IntListList(pairs));
        self.b.add(i)
    }

    /// `v` with the positions along `d` whose global index (`first[device]` + position)
    /// lies outside `[0, n)` set to scalar `fill`.
    fn mask_outside(
        &mut self,
        v: InstrId,
        shape: &Shape,
        d: usize,
        first: &[i64],
        n: i64,
        fill: InstrId,
    ) -> Result<InstrId, SpmdError> {
        let dims = shape.dims().to_vec();
        let index_shape = Shape::array(ElementType::S32, dims.clone());
        let pred_shape = Shape::array(ElementType::Pred, dims);
        let offset = self.offset(first.iter().map(|&f| f as i32).collect())?;
        let iota = self
            .op("iota", Opcode::Iota, index_shape.clone(), vec![])
            .with_attr(AttrName::IotaDimension, AttrValue::Int(d as i64));
        let iota = self.b.add(iota);
        let offset = self.broadcast(offset, index_shape.clone(), "offset");
        let index = self.op(
            "index",
            Opcode::Add,
            index_shape.clone(),
            vec![iota, offset],
        );
        let index = self.b.add(index);
        let compare = |limit: i64, dir: ComparisonDirection, s: &mut Emit| {
            let c = s.offset(vec![limit as i32; first.len()])?;
            let c = s.broadcast(c, index_shape.clone(), "limit");
            let cmp = s
                .op("valid", Opcode::Compare, pred_shape.clone(), vec![index, c])
                .with_attr(AttrName::Direction, AttrValue::ComparisonDirection(dir));
            Ok::<InstrId, SpmdError>(s.b.add(cmp))
        };
        let ge = compare(0, ComparisonDirection::Ge, self)?;
        let lt = compare(n, ComparisonDirection::Lt, self)?;
        let valid = self.op("valid", Opcode::And, pred_shape, vec![ge, lt]);
        let valid = self.b.add(valid);
        let fill = self.broadcast(fill, shape.clone(), "fill");
        let s = self.op(
            "halo-masked",
            Opcode::Select,
            shape.clone(),
            vec![valid, v, fill],
        );
        Ok(self.b.add(s))
    }
}
