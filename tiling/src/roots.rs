//! The outputs of a fused computation: its roots, and those of them whose shape differs
//! from the first root's (tiled through the tiles the first root's programs read of them;
//! `outputs` checks that those tiles partition them).
//!
//! Shared by the analysis (`analysis`, `analysis_text`) and the check of the other outputs
//! (`outputs`), so that neither depends on the other for it.

use hlo::{Computation, InstrId, Opcode};

use crate::TilingError;

/// The roots of the fused computation: the operands of a `tuple` root, else the root.
pub(crate) fn roots(comp: &Computation) -> Result<Vec<InstrId>, TilingError> {
    let root = comp.root();
    let r = comp.instr(root);
    if r.opcode() == Opcode::Tuple {
        return Ok(r.operands().to_vec());
    }
    if r.shape().is_tuple() {
        return Err(TilingError::NotTileable(format!(
            "the root `{}` has a tuple shape",
            r.name()
        )));
    }
    Ok(vec![root])
}

/// A root whose shape differs from the first root's.
#[derive(Clone, Debug)]
pub(crate) struct ExtraRoot {
    /// Its id in the fused computation.
    pub(crate) id: InstrId,
    /// Its name.
    pub(crate) name: String,
    /// Its dimensions.
    pub(crate) dims: Vec<i64>,
}

/// The roots of another shape than `root_dims` (a tuple-shaped root is not tileable).
pub(crate) fn extra_roots(
    comp: &Computation,
    root_ids: &[InstrId],
    root_dims: &[i64],
) -> Result<Vec<ExtraRoot>, TilingError> {
    let mut out = Vec::new();
    for &r in root_ids {
        let instr = comp.instr(r);
        if instr.shape().is_tuple() {
            return Err(TilingError::NotTileable(format!(
                "the output `{}` is a tuple",
                instr.name()
            )));
        }
        if instr.shape().dims() != root_dims && !out.iter().any(|e: &ExtraRoot| e.id == r) {
            out.push(ExtraRoot {
                id: r,
                name: instr.name().to_string(),
                dims: instr.shape().dims().to_vec(),
            });
        }
    }
    Ok(out)
}
