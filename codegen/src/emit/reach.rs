//! What the elemental emitter can compute, instruction by instruction, from the same tables
//! its dispatch follows ([`scalar_ops::computes`], the complex-value tables, the kernel
//! scalar types): `codegen::HlocReach` asks it before a fusion forms, so a fusion the
//! emitter would refuse for one of these reasons is never formed.

use hlo::{Computation, InstrId, Opcode};

use super::scalar_ops;
use crate::kir::ScalarType;

/// Why the elemental emitter cannot compute instruction `id` of `comp`, as a phrase that
/// follows "is" ("an op without an elemental emitter (`acos`)"); `None` where these tables
/// do not refuse it (the emitter may still refuse it for how it is indexed).
pub(crate) fn unemittable(comp: &Computation, id: InstrId) -> Option<String> {
    let instr = comp.instr(id);
    let op = instr.opcode();
    if op == Opcode::Fusion {
        // A kernel already formed: its members were asked when it formed.
        return None;
    }
    if !scalar_ops::computes(op) {
        return Some(format!(
            "an op without an elemental emitter (`{}`)",
            op.as_str()
        ));
    }
    let shapes = if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().to_vec()
    } else {
        vec![instr.shape().clone()]
    };
    for s in &shapes {
        if let Some(et) = s.element_type() {
            if ScalarType::from_element(et).is_none() {
                return Some(format!(
                    "a value of element type {}, which kernels lack",
                    et.as_str()
                ));
            }
        }
    }
    let operand_complex = instr
        .operands()
        .first()
        .and_then(|&o| comp.instr(o).shape().element_type())
        .and_then(ScalarType::from_element)
        .is_some_and(|t| t.is_complex());
    if let Some(u) = scalar_ops::unary(op) {
        if operand_complex && !scalar_ops::unary_on_complex(u) {
            return Some(format!("`{}` of complex values", op.as_str()));
        }
    }
    if let Some(b) = scalar_ops::binary(op) {
        let complex = instr
            .shape()
            .element_type()
            .and_then(ScalarType::from_element)
            .is_some_and(|t| t.is_complex());
        if complex && !scalar_ops::binary_on_complex(b) {
            return Some(format!("`{}` of complex values", op.as_str()));
        }
    }
    if op == Opcode::Compare && operand_complex {
        if let Some(dir) = instr.comparison_direction() {
            if !scalar_ops::compare_on_complex(dir) {
                return Some("an ordered comparison of complex values".into());
            }
        }
    }
    None
}
