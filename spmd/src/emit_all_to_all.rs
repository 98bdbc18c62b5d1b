//! Resharding by all-to-all: where the split moves from one dimension to another (tiles
//! `k` along `a` become `k` along `b`, every other dimension as it was), each device
//! sends the `k` pieces of its tile along `b` to the devices that will hold them and
//! receives the pieces of `a` it lacks — one all-to-all of the local tile, instead of an
//! all-gather of `k` tiles and a slice (XLA's partitioner does the same). In HLO an
//! array all-to-all splits and concatenates the same dimension, so `b` is first reshaped
//! into `[k, b/k]`, the all-to-all exchanges along the `k` dimension (after it the
//! dimension counts `a`'s tiles), and a transpose and a reshape merge it into `a`.

use hlo::attrs::{AttrName, AttrValue, ReplicaGroups};
use hlo::{InstrId, Opcode, Shape};

use crate::emit::{local_shape, Emit};
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The dimensions `(a, b)` when `from` → `to` moves a split from `a` to `b` as one
/// all-to-all can: `k` tiles along `a` become `k` along `b`, both divide evenly, every
/// other dimension keeps each device's tile, and the device holding tile `i` along `a`
/// holds tile `i` along `b` afterwards.
pub(crate) fn moved_split(from: &Tiling, to: &Tiling, dims: &[i64]) -> Option<(usize, usize)> {
    let rank = dims.len();
    let changed: Vec<usize> = (0..rank)
        .filter(|&d| {
            from.tiles[d] != to.tiles[d]
                || from
                    .of_device
                    .iter()
                    .zip(&to.of_device)
                    .any(|(x, y)| x[d] != y[d])
        })
        .collect();
    let [x, y] = changed[..] else { return None };
    let (a, b) = match (from.tiles[x], from.tiles[y]) {
        (_, 1) => (x, y),
        (1, _) => (y, x),
        _ => return None,
    };
    let k = from.tiles[a];
    let fits = k > 1
        && from.tiles[b] == 1
        && to.tiles[a] == 1
        && to.tiles[b] == k
        && dims[a] % k == 0
        && dims[b] % k == 0;
    let same_devices = from
        .of_device
        .iter()
        .zip(&to.of_device)
        .all(|(f, t)| t[b] == f[a]);
    (fits && same_devices).then_some((a, b))
}

impl Emit {
    /// `v` (global shape `global`, tiled `from`) tiled `to` by one all-to-all, when the
    /// reshard only moves a split between two dimensions (`moved_split`); `None` otherwise.
    pub(crate) fn reshard_all_to_all(
        &mut self,
        v: InstrId,
        global: &Shape,
        from: &Tiling,
        to: &Tiling,
        what: &str,
    ) -> Result<Option<InstrId>, SpmdError> {
        let dims = global.dims().to_vec();
        let Some((a, b)) = moved_split(from, to, &dims) else {
            return Ok(None);
        };
        let k = from.tiles[a];
        let groups = from
            .groups_along(&[a])
            .map_err(|e| SpmdError::invalid(what, e))?;
        let local = local_shape(global, from, what)?.dims().to_vec();
        let ty = global
            .element_type()
            .ok_or_else(|| SpmdError::invalid(what, "an array without element type"))?;
        // The intermediate values have another rank: the default layout.
        let shape = |dims: Vec<i64>| Shape::array(ty, dims);
        // [.., b, ..] -> [.., k, b/k, ..]: piece j of the tile along b is row j of the
        // new dimension (at position b).
        let mut split = Vec::with_capacity(local.len() + 1);
        for (d, &n) in local.iter().enumerate() {
            if d == b {
                split.push(k);
                split.push(n / k);
            } else {
                split.push(n);
            }
        }
        let r = self.op("reshape", Opcode::Reshape, shape(split.clone()), vec![v]);
        let r = self.b.add(r);
        let channel = self.next_channel();
        let x = self
            .op(
                "all-to-all",
                Opcode::AllToAll,
                shape(split.clone()),
                vec![r],
            )
            .with_attr(AttrName::ChannelId, AttrValue::Int(channel))
            .with_attr(
                AttrName::ReplicaGroups,
                AttrValue::ReplicaGroups(Box::new(ReplicaGroups::List(groups))),
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![b as i64]));
        let x = self.b.add(x);
        // The new dimension now counts a's tiles: move it just before a, then merge.
        // Positions in `split`: dimension d < b at d, the new one at b, d >= b at d + 1.
        let pos = |d: usize| if d < b { d } else { d + 1 };
        let mut perm = Vec::with_capacity(split.len());
        for d in 0..local.len() {
            if d == a {
                perm.push(b as i64);
            }
            perm.push(pos(d) as i64);
        }
        let moved: Vec<i64> = perm.iter().map(|&p| split[p as usize]).collect();
        let t = self
            .op("transpose", Opcode::Transpose, shape(moved), vec![x])
            .with_attr(AttrName::Dimensions, AttrValue::IntList(perm));
        let t = self.b.add(t);
        let out = local_shape(global, to, what)?;
        let m = self.op("reshape", Opcode::Reshape, out, vec![t]);
        Ok(Some(self.b.add(m)))
    }
}
