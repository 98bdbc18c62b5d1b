//! One composition step over sets of maps.

use hlo::Module;

use crate::fold::fold_and_normalize;
use crate::ops::util::OpView;
use crate::{IndexedMap, IndexingError, OperandIndexing};

/// Composes every map of `a` with every map of `b`, each folded and normalized; UNDEFINED
/// when either is.
pub(crate) fn compose_sets(
    module: &Module,
    a: &OperandIndexing,
    b: &OperandIndexing,
) -> Result<OperandIndexing, IndexingError> {
    let (OperandIndexing::Maps(am), OperandIndexing::Maps(bm)) = (a, b) else {
        let reason = match (a, b) {
            (_, OperandIndexing::Undefined(r)) | (OperandIndexing::Undefined(r), _) => r.clone(),
            _ => String::new(),
        };
        return Ok(OperandIndexing::Undefined(reason));
    };
    let mut out = OperandIndexing::none();
    for x in am.values() {
        for y in bm.values() {
            let mut z = x.compose(y)?;
            fold_and_normalize(module, &mut z)?;
            out.insert(z);
        }
    }
    Ok(out)
}

/// The identity map on output `k` of an instruction: where every composition starts.
pub(crate) fn identity_set(v: &OpView<'_>, k: usize) -> Result<OperandIndexing, IndexingError> {
    Ok(OperandIndexing::single(IndexedMap::plain(
        affine::IndexingMap::identity(v.out_dims(k)?),
    )))
}
