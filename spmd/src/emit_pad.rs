//! The instructions uneven shards need (XLA pads the last shards of a dimension that
//! does not split evenly): slicing the padding off an all-gathered dimension, padding a
//! whole dimension to a whole number of shards before a dynamic-slice, and masking the
//! padding with a neutral value before a reduction or a contraction reads it, so padding
//! never enters a sum or a max.

use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, PaddingConfig, PaddingDim, SliceDim};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, InstrId, Instruction, Literal, Opcode, Shape};

use crate::emit::{with_dims, Emit};
use crate::error::SpmdError;
use crate::tiling::Tiling;

impl Emit {
    /// `v` (dimensions `dims`) with dimension `d` cut to its first `n` elements.
    pub(crate) fn slice_prefix(
        &mut self,
        v: InstrId,
        like: &Shape,
        dims: &[i64],
        d: usize,
        n: i64,
    ) -> InstrId {
        let mut out = dims.to_vec();
        out[d] = n;
        let slice = (0..dims.len())
            .map(|i| SliceDim {
                start: 0,
                limit: out[i],
                stride: 1,
            })
            .collect();
        let i = self
            .op("slice", Opcode::Slice, with_dims(like, out), vec![v])
            .with_attr(AttrName::Slice, AttrValue::Slice(slice));
        self.b.add(i)
    }

    /// `v` (dimensions `have`) padded at the high end to `need` (with zeros: the padding
    /// is never read as data).
    pub(crate) fn pad_to(
        &mut self,
        v: InstrId,
        like: &Shape,
        have: &[i64],
        need: &[i64],
    ) -> Result<InstrId, SpmdError> {
        let ty = like
            .element_type()
            .ok_or_else(|| SpmdError::invalid("pad", "an array without element type"))?;
        let zero = self.zero(ty)?;
        let padding = PaddingConfig {
            dims: have
                .iter()
                .zip(need)
                .map(|(&h, &n)| PaddingDim {
                    low: 0,
                    high: n - h,
                    interior: 0,
                })
                .collect(),
        };
        let i = self
            .op(
                "pad",
                Opcode::Pad,
                with_dims(like, need.to_vec()),
                vec![v, zero],
            )
            .with_attr(AttrName::Padding, AttrValue::Padding(padding));
        Ok(self.b.add(i))
    }

    /// A scalar zero of `ty` (an `s32` zero converted).
    pub(crate) fn zero(&mut self, ty: ElementType) -> Result<InstrId, SpmdError> {
        let s32 = self.s32(0)?;
        if ty == ElementType::S32 {
            return Ok(s32);
        }
        let c = self.op("zero", Opcode::Convert, Shape::scalar(ty), vec![s32]);
        Ok(self.b.add(c))
    }

    /// An `s32[]` constant.
    fn s32(&mut self, v: i32) -> Result<InstrId, SpmdError> {
        let scalar = Shape::scalar(ElementType::S32);
        let lit = ArrayLiteral::new(scalar.clone(), ArrayData::S32(vec![v]))
            .map(Literal::Array)
            .ok_or_else(|| SpmdError::invalid("constant", "literal does not fit its shape"))?;
        let c = Instruction::constant(self.names.fresh("constant"), scalar, lit);
        Ok(self.b.add(c))
    }

    /// `v` (per-device shape `local` of an array of global dimensions `global`, tiled
    /// `t`) with every padding element along `dims` replaced by the scalar `fill`.
    pub(crate) fn mask_padding(
        &mut self,
        v: InstrId,
        local: &Shape,
        global: &[i64],
        t: &Tiling,
        dims: &[usize],
        fill: InstrId,
    ) -> Result<InstrId, SpmdError> {
        let ldims = local.dims().to_vec();
        let pred_shape = Shape::array(ElementType::Pred, ldims.clone());
        let index_shape = Shape::array(ElementType::S32, ldims.clone());
        let mut mask: Option<InstrId> = None;
        for &d in dims {
            let table: Vec<i32> = t
                .of_device
                .iter()
                .map(|idx| (idx[d] * ldims[d]) as i32)
                .collect();
            let offset = self.offset(table)?;
            let iota = self
                .op("iota", Opcode::Iota, index_shape.clone(), vec![])
                .with_attr(AttrName::IotaDimension, AttrValue::Int(d as i64));
            let iota = self.b.add(iota);
            let offset = self.broadcast(offset, index_shape.clone(), "offset");
            let add = self.op(
                "index",
                Opcode::Add,
                index_shape.clone(),
                vec![iota, offset],
            );
            let index = self.b.add(add);
            let limit = self.s32(global[d] as i32)?;
            let limit = self.broadcast(limit, index_shape.clone(), "limit");
            let lt = self
                .op(
                    "valid",
                    Opcode::Compare,
                    pred_shape.clone(),
                    vec![index, limit],
                )
                .with_attr(
                    AttrName::Direction,
                    AttrValue::ComparisonDirection(ComparisonDirection::Lt),
                );
            let lt = self.b.add(lt);
            mask = Some(match mask {
                None => lt,
                Some(m) => {
                    let and = self.op("valid", Opcode::And, pred_shape.clone(), vec![m, lt]);
                    self.b.add(and)
                }
            });
        }
        let Some(mask) = mask else { return Ok(v) };
        let fill = self.broadcast(fill, local.clone(), "fill");
        let select = self.op("masked", Opcode::Select, local.clone(), vec![mask, v, fill]);
        Ok(self.b.add(select))
    }
}
