//! Building the per-device entry computation: the instructions partitioning adds
//! (partition-id offsets, all-gathers, all-reduces, dynamic-slices) and resharding a
//! value from one tiling to another — one all-to-all where a split only moves between two
//! dimensions (`emit_all_to_all.rs`), else an all-gather along each dimension whose tiles the
//! target does not refine, then a dynamic-slice at offsets looked up by partition id where
//! the target splits finer.

use std::collections::HashMap;

use hlo::attrs::{AttrName, AttrValue, ReplicaGroups};
use hlo::ir::edit::NameGen;
use hlo::ir::ComputationBuilder;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{CompId, ElementType, InstrId, Instruction, Literal, Opcode, Shape};

use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The per-device shape of `global` under `t` (XLA's padded shards where a dimension
/// does not split evenly).
pub(crate) fn local_shape(global: &Shape, t: &Tiling, what: &str) -> Result<Shape, SpmdError> {
    let a = global
        .as_array()
        .ok_or_else(|| SpmdError::invalid(what, "expected an array"))?;
    if t.tiles.len() != a.dims().len() {
        return Err(SpmdError::invalid(what, "a tiling of another rank"));
    }
    Ok(with_dims(global, t.shard_dims(a.dims())))
}

/// `shape` (an array) with dimensions `dims`, its element type and layout kept.
pub(crate) fn with_dims(shape: &Shape, dims: Vec<i64>) -> Shape {
    match shape.as_array() {
        Some(a) => Shape::array_with(a.element_type(), dims, Vec::new(), a.layout().cloned()),
        None => shape.clone(),
    }
}

/// The entry computation under construction.
pub(crate) struct Emit {
    /// The instructions so far.
    pub b: ComputationBuilder,
    /// Fresh names.
    pub names: NameGen,
    channel: i64,
    partition: Option<InstrId>,
    offsets: HashMap<Vec<i32>, InstrId>,
}

impl Emit {
    /// An empty computation named `name`.
    pub fn new(name: &str, names: NameGen) -> Emit {
        Emit {
            b: ComputationBuilder::new(name),
            names,
            channel: 0,
            partition: None,
            offsets: HashMap::new(),
        }
    }

    /// A new instruction named after `base` (not yet added).
    pub(crate) fn op(
        &mut self,
        base: &str,
        opcode: Opcode,
        shape: Shape,
        operands: Vec<InstrId>,
    ) -> Instruction {
        Instruction::new(self.names.fresh(base), opcode, shape, operands)
    }

    /// Continues the channel ids after `last` (ids stay unique across the computations
    /// of a module).
    pub(crate) fn set_channel(&mut self, last: i64) {
        self.channel = last;
    }

    /// The last channel id used.
    pub(crate) fn channel(&self) -> i64 {
        self.channel
    }

    /// A fresh channel id.
    pub(crate) fn next_channel(&mut self) -> i64 {
        self.channel += 1;
        self.channel
    }

    /// This device's partition id as an `s32[]` (made once).
    fn partition_id(&mut self) -> InstrId {
        if let Some(p) = self.partition {
            return p;
        }
        let u = self.op(
            "partition-id",
            Opcode::PartitionId,
            Shape::scalar(ElementType::U32),
            vec![],
        );
        let u = self.b.add(u);
        let s = self.op(
            "partition-id.s32",
            Opcode::Convert,
            Shape::scalar(ElementType::S32),
            vec![u],
        );
        let s = self.b.add(s);
        self.partition = Some(s);
        s
    }

    /// `table[partition id]` as an `s32[]` (a constant where every device's is the same).
    pub(crate) fn offset(&mut self, table: Vec<i32>) -> Result<InstrId, SpmdError> {
        if let Some(&id) = self.offsets.get(&table) {
            return Ok(id);
        }
        let scalar = Shape::scalar(ElementType::S32);
        let literal = |shape: Shape, data: Vec<i32>| {
            ArrayLiteral::new(shape, ArrayData::S32(data))
                .map(Literal::Array)
                .ok_or_else(|| SpmdError::invalid("offset table", "literal does not fit its shape"))
        };
        let id = if table.iter().all(|&v| v == table[0]) {
            let c = Instruction::constant(
                self.names.fresh("constant"),
                scalar.clone(),
                literal(scalar, vec![table[0]])?,
            );
            self.b.add(c)
        } else {
            let pid = self.partition_id();
            let n = table.len() as i64;
            let shape = Shape::array(ElementType::S32, vec![n]);
            let c = Instruction::constant(
                self.names.fresh("offsets"),
                shape.clone(),
                literal(shape, table.clone())?,
            );
            let c = self.b.add(c);
            let one = Shape::array(ElementType::S32, vec![1]);
            let ds = self
                .op("offset", Opcode::DynamicSlice, one, vec![c, pid])
                .with_attr(AttrName::DynamicSliceSizes, AttrValue::IntList(vec![1]));
            let ds = self.b.add(ds);
            let r = self.op("offset", Opcode::Reshape, scalar, vec![ds]);
            self.b.add(r)
        };
        self.offsets.insert(table, id);
        Ok(id)
    }

    /// `broadcast(scalar)` to `shape`, named after `like`.
    pub fn broadcast(&mut self, scalar: InstrId, shape: Shape, like: &str) -> InstrId {
        let i = self
            .op(like, Opcode::Broadcast, shape, vec![scalar])
            .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![]));
        self.b.add(i)
    }

    /// `all-reduce(v)` over `groups` (global device ids) with `to_apply`.
    pub fn all_reduce(
        &mut self,
        v: InstrId,
        shape: Shape,
        groups: Vec<Vec<i64>>,
        to_apply: CompId,
    ) -> InstrId {
        let channel = self.next_channel();
        let i = self
            .op("all-reduce", Opcode::AllReduce, shape, vec![v])
            .with_attr(AttrName::ChannelId, AttrValue::Int(channel))
            .with_attr(
                AttrName::ReplicaGroups,
                AttrValue::ReplicaGroups(Box::new(ReplicaGroups::List(groups))),
            )
            .with_attr(AttrName::UseGlobalDeviceIds, AttrValue::Bool(true))
            .with_attr(AttrName::ToApply, AttrValue::Computation(to_apply));
        self.b.add(i)
    }

    fn all_gather(
        &mut self,
        v: InstrId,
        shape: Shape,
        dim: usize,
        groups: Vec<Vec<i64>>,
    ) -> InstrId {
        let channel = self.next_channel();
        let i = self
            .op("all-gather", Opcode::AllGather, shape, vec![v])
            .with_attr(AttrName::ChannelId, AttrValue::Int(channel))
            .with_attr(
                AttrName::ReplicaGroups,
                AttrValue::ReplicaGroups(Box::new(ReplicaGroups::List(groups))),
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![dim as i64]))
            .with_attr(AttrName::UseGlobalDeviceIds, AttrValue::Bool(true));
        self.b.add(i)
    }

    /// `v` (of global shape `global`, tiled `from`) as tiled `to`: an all-gather along
    /// each dimension whose tiles `to` does not refine (its padding sliced off), then a
    /// dynamic-slice at offsets looked up by partition id (after padding a whole dimension
    /// to a whole number of `to`'s shards).
    pub fn reshard(
        &mut self,
        v: InstrId,
        global: &Shape,
        from: &Tiling,
        to: &Tiling,
        what: &str,
    ) -> Result<InstrId, SpmdError> {
        if from == to {
            return Ok(v);
        }
        if let Some(v) = self.reshard_all_to_all(v, global, from, to, what)? {
            return Ok(v);
        }
        let dims = global.dims().to_vec();
        let rank = from.tiles.len();
        let mut cur = from.clone();
        let mut v = v;
        for d in 0..rank {
            if cur.refines(to, d, dims[d]) {
                continue;
            }
            let groups = cur
                .groups_along(&[d])
                .map_err(|e| SpmdError::invalid(what, e))?;
            let mut gathered = local_shape(global, &cur, what)?.dims().to_vec();
            gathered[d] *= cur.tiles[d];
            cur = cur.gathered(&[d]);
            v = self.all_gather(v, with_dims(global, gathered.clone()), d, groups);
            if gathered[d] != dims[d] {
                v = self.slice_prefix(v, global, &gathered, d, dims[d]);
            }
        }
        if cur == *to {
            return Ok(v);
        }
        let out = local_shape(global, to, what)?;
        let sizes = out.dims().to_vec();
        let have = local_shape(global, &cur, what)?.dims().to_vec();
        let need: Vec<i64> = (0..rank)
            .map(|d| sizes[d] * to.tiles[d] / cur.tiles[d])
            .collect();
        if have != need {
            v = self.pad_to(v, global, &have, &need)?;
        }
        let mut indices = Vec::with_capacity(rank);
        for d in 0..rank {
            let ratio = to.tiles[d] / cur.tiles[d];
            let table: Vec<i32> = to
                .of_device
                .iter()
                .map(|idx| ((idx[d] % ratio) * sizes[d]) as i32)
                .collect();
            indices.push(self.offset(table)?);
        }
        let mut operands = vec![v];
        operands.extend(indices);
        let ds = self
            .op("dynamic-slice", Opcode::DynamicSlice, out, operands)
            .with_attr(AttrName::DynamicSliceSizes, AttrValue::IntList(sizes));
        Ok(self.b.add(ds))
    }

    /// Tuple `v` (of global shape `global`, elements tiled `from`) with its elements tiled
    /// `to`: each element taken out, resharded, and the tuple made again.
    pub fn reshard_tuple(
        &mut self,
        v: InstrId,
        global: &Shape,
        from: &[Tiling],
        to: &[Tiling],
        what: &str,
    ) -> Result<InstrId, SpmdError> {
        let shapes = global.tuple_shapes();
        if shapes.len() != from.len() || from.len() != to.len() {
            return Err(SpmdError::invalid(what, "a tuple of another arity"));
        }
        let mut parts = Vec::with_capacity(shapes.len());
        let mut local = Vec::with_capacity(shapes.len());
        for (j, s) in shapes.iter().enumerate() {
            let piece = local_shape(s, &from[j], what)?;
            let g = self
                .op("get-tuple-element", Opcode::GetTupleElement, piece, vec![v])
                .with_attr(AttrName::Index, AttrValue::Int(j as i64));
            let g = self.b.add(g);
            parts.push(self.reshard(g, s, &from[j], &to[j], what)?);
            local.push(local_shape(s, &to[j], what)?);
        }
        let t = self.op("tuple", Opcode::Tuple, Shape::tuple(local), parts);
        Ok(self.b.add(t))
    }
}
