//! Width-changing bitcast-convert in the elemental emitter: the bytes of `k` narrow
//! elements (the operand's last dimension, in memory order) are one wide element, and a
//! wide element is `k` narrow ones. Element `j` of the narrow side is bits
//! `[j * w, (j + 1) * w)` of the wide side (little-endian, as the buffers hold them when
//! the thunk builder aliases the two), assembled with shifts on unsigned integers.

use super::*;

/// The unsigned integer type of a width in bytes.
fn unsigned(width: u32) -> Option<ScalarType> {
    match width {
        1 => Some(ScalarType::U8),
        2 => Some(ScalarType::U16),
        4 => Some(ScalarType::U32),
        8 => Some(ScalarType::U64),
        _ => None,
    }
}

/// `v` as the unsigned integer of its width (bits unchanged).
fn as_bits(v: Value, width: u32) -> Option<Value> {
    let u = unsigned(width)?;
    Some(if v.ty() == u {
        v
    } else {
        Value::BitcastConvert(Box::new(v), u)
    })
}

impl Builder<'_> {
    /// The value of width-changing bitcast-convert `id` (operand type `from`, result type
    /// `to`, widths differ) at `index`.
    pub(super) fn reinterpret_width(
        &mut self,
        comp: CompId,
        id: InstrId,
        (from, to): (ScalarType, ScalarType),
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let (fw, tw) = (from.byte_width(), to.byte_width());
        let name = self.instr_name.clone();
        let unsupported =
            || CodegenError::unsupported("bitcast-convert", name.clone(), "between these types");
        if from == ScalarType::Pred
            || to == ScalarType::Pred
            || from.is_complex()
            || to.is_complex()
        {
            return Err(unsupported());
        }
        let (Some(fu), Some(tu)) = (unsigned(fw), unsigned(tw)) else {
            return Err(unsupported());
        };
        let g = self.maps(comp, id)?;
        let operand = self.module.computation(comp).instr(id).operands()[0];
        if fw > tw {
            // Wide to narrow: part `j` (the result's last index) of the wide element.
            let wide = self
                .plain_operand((comp, id), &g, 0, index, guarded, out)?
                .remove(0);
            let j = *index.last().ok_or_else(unsupported)?;
            let shift = Value::Convert(
                Box::new(Value::Index(
                    self.simplify(j * Expr::constant(i64::from(tw) * 8)),
                )),
                fu,
            );
            let bits = as_bits(wide, fw).ok_or_else(unsupported)?;
            let part = Value::Binary(BinOp::ShrLogical, Box::new(bits), Box::new(shift), fu);
            let narrow = Value::Convert(Box::new(part), tu);
            return Ok(vec![if to == tu {
                narrow
            } else {
                Value::BitcastConvert(Box::new(narrow), to)
            }]);
        }
        // Narrow to wide: the operand's last dimension (a range of `k` parts) folds in.
        let m = self
            .single(Opcode::BitcastConvert, &g, 0)?
            .ok_or_else(|| CodegenError::Internal("bitcast-convert operand never read".into()))?;
        let a = self
            .apply(m, index, None, guarded, out)?
            .ok_or_else(|| CodegenError::Internal("bitcast-convert operand never read".into()))?;
        let ([r], true) = (a.ranges.as_slice(), a.guard.is_true()) else {
            return Err(unsupported());
        };
        let k = i64::from(tw / fw);
        let mut acc: Option<Value> = None;
        for j in 0..k {
            let at = self.at_range(&a, *r, Expr::constant(j));
            let part = self.value(comp, operand, &at.index, guarded, out)?;
            let bits = as_bits(part, fw).ok_or_else(unsupported)?;
            let widened = Value::Convert(Box::new(bits), tu);
            let shifted = if j == 0 {
                widened
            } else {
                Value::Binary(
                    BinOp::Shl,
                    Box::new(widened),
                    Box::new(Value::Const(
                        tu,
                        Const::Int(i128::from(j * i64::from(fw) * 8)),
                    )),
                    tu,
                )
            };
            acc = Some(match acc {
                None => shifted,
                Some(prev) => Value::Binary(BinOp::Or, Box::new(prev), Box::new(shifted), tu),
            });
        }
        let wide = acc.ok_or_else(unsupported)?;
        Ok(vec![if to == tu {
            wide
        } else {
            Value::BitcastConvert(Box::new(wide), to)
        }])
    }
}
