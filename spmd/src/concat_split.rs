//! Concatenate along a split dimension without gathering it. Output tile `k` along the
//! concatenated dimension `d` (`[k*L, (k+1)*L)`, `L = ceil(N / T)`) reads operand `j`
//! (at offset `o_j`, `N_j` long, tiles of `L_j = ceil(N_j / T)`) at `[k*L - o_j,
//! (k+1)*L - o_j) ∩ [0, N_j)`: pieces of one or more of its tiles. A piece of the device's
//! own tile is local; the others arrive by collective-permutes, in rounds where every
//! device sends at most one piece and receives at most one (each round's pieces cut, at a
//! per-device offset, to the round's longest). The device then lays its received pieces
//! and its own tiles side by side and takes its output tile from them with one gather
//! whose indices are a per-device table (row `partition-id` of a constant): the same
//! program on every device, each assembling its own piece. Devices move at most about one
//! output tile per operand instead of gathering every operand's whole dimension.

use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, InstrId, Instruction, Literal, Opcode, Shape};

use crate::context::{text, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::emit::{with_dims, Emit};
use crate::error::SpmdError;
use crate::tiling::{shard_len, Tiling};

/// The decision for a concatenate whose most split operand splits the concatenated
/// dimension: the result keeps that operand's tiling (every operand resharded to it);
/// `None` when no operand splits that dimension (the pass-through rule takes it).
pub(crate) fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<Decision, SpmdError>> {
    let d = *instr.dimensions()?.first()? as usize;
    let mut lead: Option<Tiling> = None;
    for i in 0..instr.operands().len() {
        let t = ctx.operand_array(instr, i).ok()?;
        if lead
            .as_ref()
            .is_none_or(|l| t.tile_count() > l.tile_count())
        {
            lead = Some(t.clone());
        }
    }
    let out = lead?;
    if out.tiles.get(d).is_none_or(|&t| t < 2) {
        return None;
    }
    let mut operands = Vec::with_capacity(instr.operands().len());
    for i in 0..instr.operands().len() {
        let now = ctx.operand_array(instr, i).ok()?;
        operands.push((*now != out).then(|| out.clone()));
    }
    let moved = operands.iter().filter(|o| o.is_some()).count();
    let mut why = format!(
        "concatenate along split dimension {d}: each device's tile from the operands' tiles \
         (collective-permutes where tile boundaries differ) instead of gathering; {}",
        text(&out)
    );
    if moved > 0 {
        why.push_str(&format!("; {moved} operand(s) resharded to it"));
    }
    Some(Ok(crate::context::simple(out, operands, why)))
}

/// Whether `instr`, decided `d`, is a concatenate this file emits (its local result
/// splits the concatenated dimension).
pub(crate) fn applies(instr: &Instruction, d: &Decision) -> bool {
    instr.opcode() == Opcode::Concatenate
        && match (&d.local, instr.dimensions().and_then(|x| x.first())) {
            (ValueTiling::Array(t), Some(&dim)) => {
                t.tiles.get(dim as usize).is_some_and(|&n| n > 1)
            }
            _ => false,
        }
}

/// One piece of an operand's tile that an output tile reads.
#[derive(Clone, Copy, Debug)]
struct Piece {
    /// Operand tile (along the dimension) holding it.
    src: i64,
    /// Output tile reading it.
    dst: i64,
    /// Start in the source tile.
    src_lo: i64,
    /// Start in the output tile.
    dst_lo: i64,
    len: i64,
}

/// Every piece of operand tiles (`n_j` long at offset `o_j`, tiles of `l_j`) that output
/// tiles of `l` read, `tiles` tiles.
fn pieces(o_j: i64, n_j: i64, l_j: i64, l: i64, tiles: i64) -> Vec<Piece> {
    let mut out = Vec::new();
    for k in 0..tiles {
        let lo = (k * l).max(o_j);
        let hi = ((k + 1) * l).min(o_j + n_j);
        let mut p = lo;
        while p < hi {
            let q = p - o_j;
            let s = q / l_j;
            let end = hi.min(o_j + (s + 1) * l_j);
            out.push(Piece {
                src: s,
                dst: k,
                src_lo: q - s * l_j,
                dst_lo: p - k * l,
                len: end - p,
            });
            p = end;
        }
    }
    out
}

/// Remote pieces dealt into rounds in which every tile sends at most one piece and
/// receives at most one.
fn rounds(remote: Vec<Piece>) -> Vec<Vec<Piece>> {
    let mut rounds: Vec<Vec<Piece>> = Vec::new();
    for p in remote {
        let free = rounds
            .iter()
            .position(|r| r.iter().all(|q| q.src != p.src && q.dst != p.dst));
        match free {
            Some(i) => rounds[i].push(p),
            None => rounds.push(vec![p]),
        }
    }
    rounds
}

impl Emit {
    /// This device's tile of the concatenation along `d` of `operands` (their local tiles,
    /// all tiled `t`; `lengths` their global lengths along `d`), of local shape `shape`.
    pub(crate) fn concat_split(
        &mut self,
        operands: &[InstrId],
        lengths: &[i64],
        d: usize,
        t: &Tiling,
        shape: &Shape,
        what: &str,
    ) -> Result<InstrId, SpmdError> {
        let tiles = t.tiles[d];
        let n: i64 = lengths.iter().sum();
        let l = shard_len(n, tiles);
        let groups = t
            .groups_along(&[d])
            .map_err(|e| SpmdError::invalid(what, e))?;
        let dev_tile: Vec<i64> = t.of_device.iter().map(|i| i[d]).collect();
        // The buffers laid side by side: each operand's own tile, then each round's piece.
        let mut parts: Vec<InstrId> = Vec::new();
        let mut width = 0i64;
        // index[k][i]: where output tile k's element i lies in the parts.
        let mut index = vec![vec![0i32; l as usize]; tiles as usize];
        let mut offset = 0i64;
        for (j, (&v, &n_j)) in operands.iter().zip(lengths).enumerate() {
            let local = self
                .b
                .get(v)
                .map(|i| i.shape().clone())
                .ok_or_else(|| SpmdError::invalid(what, format!("no operand {j}")))?;
            let l_j = local.dims()[d];
            let all = pieces(offset, n_j, l_j, l, tiles);
            offset += n_j;
            let (own, remote): (Vec<Piece>, Vec<Piece>) =
                all.into_iter().partition(|p| p.src == p.dst);
            if !own.is_empty() {
                for p in &own {
                    for i in 0..p.len {
                        index[p.dst as usize][(p.dst_lo + i) as usize] =
                            (width + p.src_lo + i) as i32;
                    }
                }
                parts.push(v);
                width += l_j;
            }
            for round in rounds(remote) {
                let m = round.iter().map(|p| p.len).max().unwrap_or(0);
                // Where each source tile cuts its piece (kept inside the tile).
                let mut start = vec![0i64; tiles as usize];
                for p in &round {
                    start[p.src as usize] = p.src_lo.min(l_j - m);
                }
                let table: Vec<i32> = dev_tile.iter().map(|&k| start[k as usize] as i32).collect();
                let piece = self.cut(v, &local, d, m, table)?;
                let pairs: Vec<Vec<i64>> = groups
                    .iter()
                    .flat_map(|g| {
                        round
                            .iter()
                            .map(|p| vec![g[p.src as usize], g[p.dst as usize]])
                    })
                    .collect();
                parts.push(self.permute(piece, pairs));
                for p in &round {
                    let at = width + p.src_lo - start[p.src as usize];
                    for i in 0..p.len {
                        index[p.dst as usize][(p.dst_lo + i) as usize] = (at + i) as i32;
                    }
                }
                width += m;
            }
        }
        let first = self
            .b
            .get(operands[0])
            .map(|i| i.shape().clone())
            .ok_or_else(|| SpmdError::invalid(what, "no operand"))?;
        let mut dims = first.dims().to_vec();
        dims[d] = width;
        let side = match parts.len() {
            1 => parts[0],
            _ => {
                let c = self
                    .op(
                        "concat-parts",
                        Opcode::Concatenate,
                        with_dims(&first, dims.clone()),
                        parts,
                    )
                    .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![d as i64]));
                self.b.add(c)
            }
        };
        let rows: Vec<i32> = dev_tile
            .iter()
            .flat_map(|&k| index[k as usize].iter().copied())
            .collect();
        let indices = self.index_row(rows, t.devices(), l)?;
        let mut slice_sizes = dims;
        slice_sizes[d] = 1;
        let offset_dims: Vec<i64> = (0..slice_sizes.len() as i64)
            .filter(|&q| q != d as i64)
            .collect();
        let g = self
            .op(
                "concat-tile",
                Opcode::Gather,
                shape.clone(),
                vec![side, indices],
            )
            .with_attr(AttrName::OffsetDims, AttrValue::IntList(offset_dims))
            .with_attr(
                AttrName::CollapsedSliceDims,
                AttrValue::IntList(vec![d as i64]),
            )
            .with_attr(AttrName::StartIndexMap, AttrValue::IntList(vec![d as i64]))
            .with_attr(AttrName::IndexVectorDim, AttrValue::Int(1))
            .with_attr(AttrName::SliceSizes, AttrValue::IntList(slice_sizes));
        Ok(self.b.add(g))
    }

    /// `m` elements of `v` (shape `shape`) along `d` from `table[partition id]` on.
    fn cut(
        &mut self,
        v: InstrId,
        shape: &Shape,
        d: usize,
        m: i64,
        table: Vec<i32>,
    ) -> Result<InstrId, SpmdError> {
        let dims = shape.dims().to_vec();
        let mut sizes = dims.clone();
        sizes[d] = m;
        if m == dims[d] {
            return Ok(v);
        }
        if table.iter().all(|&s| s == table[0]) {
            let slice = (0..dims.len())
                .map(|i| SliceDim {
                    start: if i == d { table[0] as i64 } else { 0 },
                    limit: if i == d { table[0] as i64 + m } else { dims[i] },
                    stride: 1,
                })
                .collect();
            let s = self
                .op(
                    "concat-piece",
                    Opcode::Slice,
                    with_dims(shape, sizes),
                    vec![v],
                )
                .with_attr(AttrName::Slice, AttrValue::Slice(slice));
            return Ok(self.b.add(s));
        }
        let mut operands = vec![v];
        for k in 0..dims.len() {
            operands.push(match k == d {
                true => self.offset(table.clone())?,
                false => self.offset(vec![0; table.len()])?,
            });
        }
        let ds = self
            .op(
                "concat-piece",
                Opcode::DynamicSlice,
                with_dims(shape, sizes.clone()),
                operands,
            )
            .with_attr(AttrName::DynamicSliceSizes, AttrValue::IntList(sizes));
        Ok(self.b.add(ds))
    }

    /// `s32[l, 1]`: row `partition id` of the `[devices, l]` table `rows`.
    fn index_row(&mut self, rows: Vec<i32>, devices: usize, l: i64) -> Result<InstrId, SpmdError> {
        let table_shape = Shape::array(ElementType::S32, vec![devices as i64, l]);
        let literal = ArrayLiteral::new(table_shape.clone(), ArrayData::S32(rows))
            .map(Literal::Array)
            .ok_or_else(|| SpmdError::invalid("concat index table", "literal does not fit"))?;
        let c = Instruction::constant(self.names.fresh("concat-index"), table_shape, literal);
        let c = self.b.add(c);
        let pid = self.offset((0..devices as i32).collect())?;
        let zero = self.offset(vec![0; devices])?;
        let row = Shape::array(ElementType::S32, vec![1, l]);
        let ds = self
            .op(
                "concat-index",
                Opcode::DynamicSlice,
                row,
                vec![c, pid, zero],
            )
            .with_attr(AttrName::DynamicSliceSizes, AttrValue::IntList(vec![1, l]));
        let ds = self.b.add(ds);
        let r = self.op(
            "concat-index",
            Opcode::Reshape,
            Shape::array(ElementType::S32, vec![l, 1]),
            vec![ds],
        );
        Ok(self.b.add(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every output position of every tile is covered exactly once, by the element the
    /// concatenation puts there.
    #[test]
    fn pieces_cover_each_output_tile() {
        for tiles in 2..=8 {
            for (a, b, c) in [(8, 8, 0), (3, 13, 0), (1, 2, 5), (16, 4, 9), (7, 7, 7)] {
                let lens: Vec<i64> = [a, b, c].into_iter().filter(|&x| x > 0).collect();
                let n: i64 = lens.iter().sum();
                let l = shard_len(n, tiles);
                let mut seen = vec![None; (l * tiles) as usize];
                let mut o = 0;
                for (j, &n_j) in lens.iter().enumerate() {
                    let l_j = shard_len(n_j, tiles);
                    for p in pieces(o, n_j, l_j, l, tiles) {
                        assert!(p.len > 0 && p.src_lo + p.len <= l_j && p.dst_lo + p.len <= l);
                        for i in 0..p.len {
                            let at = (p.dst * l + p.dst_lo + i) as usize;
                            assert!(seen[at].is_none(), "position {at} twice");
                            seen[at] = Some((j, p.src * l_j + p.src_lo + i));
                        }
                    }
                    o += n_j;
                }
                let mut o = 0;
                for (j, &n_j) in lens.iter().enumerate() {
                    for q in 0..n_j {
                        assert_eq!(seen[(o + q) as usize], Some((j, q)));
                    }
                    o += n_j;
                }
                assert!(seen[n as usize..].iter().all(Option::is_none));
            }
        }
    }

    #[test]
    fn rounds_send_and_receive_once() {
        let remote: Vec<Piece> = pieces(4, 16, 2, 3, 8)
            .into_iter()
            .filter(|p| p.src != p.dst)
            .collect();
        let count = remote.len();
        let r = rounds(remote);
        assert_eq!(r.iter().map(Vec::len).sum::<usize>(), count);
        for round in &r {
            for (i, p) in round.iter().enumerate() {
                for q in &round[i + 1..] {
                    assert!(p.src != q.src && p.dst != q.dst);
                }
            }
        }
    }
}
