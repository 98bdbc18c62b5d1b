//! Elementwise ops (and `map`): the identity, or `(d...) -> ()` for a scalar operand.

use super::util::{from_scalar, identity, to_scalar, OpView};
use crate::{IndexingError, OperandIndexing};

pub(crate) fn out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    (0..v.arity())
        .map(|j| {
            let od = v.operand_dims(j)?;
            if od.is_empty() && !out.is_empty() {
                to_scalar(out)
            } else if od != out {
                Err(v.malformed(format!("operand {j} shape differs from the output shape")))
            } else {
                Ok(identity(out))
            }
        })
        .collect()
}

pub(crate) fn in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let od = v.operand_dims(operand)?;
    Ok(vec![if od.is_empty() && !out.is_empty() {
        from_scalar(out)?
    } else {
        identity(out)
    }])
}
