//! Which attributes each opcode takes, and the kind of value each one holds.

use super::AttrName;
use crate::opcode::Opcode;

/// The kind of value an attribute holds (how the parser reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrKind {
    /// An integer.
    Int,
    /// `true`/`false`.
    Bool,
    /// A floating-point number.
    Float,
    /// `{1,2}`.
    IntList,
    /// `{{1,2},{3}}`.
    IntListList,
    /// Explicit or iota replica groups.
    ReplicaGroups,
    /// A quoted string.
    String,
    /// A bare identifier.
    Ident,
    /// `{A,B}` of identifiers.
    IdentList,
    /// A computation name.
    Computation,
    /// `{%a, %b}` of computation names.
    Computations,
    /// A window.
    Window,
    /// Convolution dimension labels.
    ConvDims,
    /// Slice ranges.
    Slice,
    /// A padding config.
    Padding,
    /// A fusion kind.
    FusionKind,
    /// A comparison direction.
    ComparisonDirection,
    /// A comparison type.
    ComparisonType,
    /// A shape.
    Shape,
    /// `{shape, ...}`.
    Shapes,
    /// A literal with its shape.
    Literal,
    /// Output-to-operand aliasing.
    Aliasing,
    /// Op metadata.
    Metadata,
    /// Frontend attributes.
    FrontendAttributes,
    /// A backend config (string or dictionary).
    BackendConfig,
    /// `{%a, %b}` of instruction names.
    Instructions,
    /// `{true, false}`.
    Bools,
    /// Kept verbatim (one balanced value).
    Opaque,
}

/// Attributes any instruction may carry (XLA's shared attributes). These stay on an
/// `async-start` when the short async form is parsed; every other attribute belongs to the
/// wrapped instruction.
pub fn is_generic(name: &AttrName) -> bool {
    generic_kind(name).is_some()
}

fn generic_kind(name: &AttrName) -> Option<AttrKind> {
    use AttrKind as K;
    use AttrName as N;
    Some(match name {
        N::Sharding => K::Opaque,
        N::FrontendAttributes => K::FrontendAttributes,
        N::Statistics => K::Opaque,
        N::ControlPredecessors => K::Instructions,
        N::Origin => K::Opaque,
        N::Metadata => K::Metadata,
        N::BackendConfig => K::BackendConfig,
        _ => return None,
    })
}

/// The kind of attribute `name` on an instruction with `opcode`, or `None` when the
/// opcode does not take that attribute (the parser then keeps it verbatim with a warning).
pub fn attr_kind(opcode: Opcode, name: &AttrName) -> Option<AttrKind> {
    use AttrKind as K;
    use AttrName as N;
    use Opcode as O;
    if let Some(k) = generic_kind(name) {
        return Some(k);
    }
    let collective = |name: &AttrName| -> Option<AttrKind> {
        match name {
            N::ReplicaGroups => Some(K::ReplicaGroups),
            N::ChannelId => Some(K::Int),
            N::ConstrainLayout | N::UseGlobalDeviceIds => Some(K::Bool),
            _ => None,
        }
    };
    let dot = |name: &AttrName| -> Option<AttrKind> {
        match name {
            N::LhsContractingDims | N::RhsContractingDims | N::LhsBatchDims | N::RhsBatchDims => {
                Some(K::IntList)
            }
            N::OperandPrecision => Some(K::IdentList),
            N::Algorithm => Some(K::Ident),
            _ => None,
        }
    };
    let conv_like = |name: &AttrName| -> Option<AttrKind> {
        match name {
            N::Window => Some(K::Window),
            N::DimLabels => Some(K::ConvDims),
            N::FeatureGroupCount | N::BatchGroupCount => Some(K::Int),
            N::OperandPrecision => Some(K::IdentList),
            _ => None,
        }
    };
    let kind = match (opcode, name) {
        (O::Parameter, N::ParameterReplication) => K::Bools,
        (O::Iota, N::IotaDimension) => K::Int,
        (O::TopK, N::K) => K::Int,
        (O::TopK, N::Largest | N::IsStable) => K::Bool,
        (
            O::Acos
            | O::Acosh
            | O::Asin
            | O::Asinh
            | O::Atanh
            | O::Expm1
            | O::Log
            | O::Log1p
            | O::Logistic
            | O::Sqrt
            | O::Cbrt
            | O::Rsqrt
            | O::Tanh
            | O::Erf
            | O::Sin
            | O::Sinh
            | O::Cos
            | O::Cosh
            | O::Tan
            | O::Exp,
            N::ResultAccuracy,
        ) => K::Opaque,
        (O::AllGather | O::AllGatherStart, N::Dimensions) => K::IntList,
        (O::AllGather | O::AllGatherStart, n) => collective(n)?,
        (O::AllReduce | O::AllReduceStart | O::ReduceScatter, N::ToApply) => K::Computation,
        (O::AllReduce | O::AllReduceStart | O::ReduceScatter, N::Mode) => K::Ident,
        (O::ReduceScatter, N::Dimensions) => K::IntList,
        (O::AllReduce | O::AllReduceStart | O::ReduceScatter, n) => collective(n)?,
        (O::AllToAll | O::RaggedAllToAll, N::Dimensions) => K::IntList,
        (O::CollectiveBroadcast | O::CollectiveReduce, N::HasDynamicRoot) => K::Bool,
        (O::AllToAll | O::RaggedAllToAll | O::CollectiveBroadcast, n) => collective(n)?,
        (O::CollectiveReduce, N::ToApply) => K::Computation,
        (O::CollectiveReduce, n) => collective(n)?,
        (
            O::CollectivePermute | O::CollectivePermuteStart,
            N::SourceTargetPairs | N::SliceSizes,
        ) => K::IntListList,
        (O::CollectivePermute | O::CollectivePermuteStart, N::ChannelId) => K::Int,
        (O::AsyncStart | O::AsyncUpdate | O::AsyncDone, N::Calls) => K::Computation,
        (O::AsyncStart | O::AsyncUpdate | O::AsyncDone, N::AsyncExecutionThread) => K::String,
        (O::AsyncStart | O::AsyncUpdate, N::OutputToOperandAliasing) => K::Aliasing,
        (O::CopyStart, N::CrossProgramPrefetchIndex) => K::Int,
        (O::Reshape, N::InferredDimension) => K::Int,
        (O::Sort, N::Dimensions) => K::IntList,
        (O::Sort, N::IsStable) => K::Bool,
        (O::Sort, N::ToApply) => K::Computation,
        (O::While, N::Condition | N::Body) => K::Computation,
        (O::Send | O::SendDone | O::Recv | O::RecvDone, N::ChannelId) => K::Int,
        (O::Send | O::SendDone | O::Recv | O::RecvDone, N::IsHostTransfer) => K::Bool,
        (O::GetTupleElement, N::Index) => K::Int,
        (O::Call, N::ToApply) => K::Computation,
        (O::Call, N::IsComposite) => K::Bool,
        (O::ReduceWindow, N::Window) => K::Window,
        (O::ReduceWindow, N::ToApply) => K::Computation,
        (O::Convolution, N::ConvKind) => K::Ident,
        (O::Convolution, N::Algorithm) => K::Ident,
        (O::Convolution, n) => conv_like(n)?,
        (O::Fft, N::FftType) => K::Ident,
        (O::Fft, N::FftLength) => K::IntList,
        (O::TriangularSolve, N::LeftSide | N::Lower | N::UnitDiagonal) => K::Bool,
        (O::TriangularSolve, N::TransposeA) => K::Ident,
        (O::Compare, N::Direction) => K::ComparisonDirection,
        (O::Compare, N::Type) => K::ComparisonType,
        (O::Compare, N::Order) => K::Ident,
        (O::Cholesky, N::Lower) => K::Bool,
        (
            O::Broadcast
            | O::Concatenate
            | O::Reverse
            | O::Transpose
            | O::Reduce
            | O::Map
            | O::GetDimensionSize
            | O::SetDimensionSize,
            N::Dimensions,
        ) => K::IntList,
        (O::Map | O::Reduce | O::Scan, N::ToApply) => K::Computation,
        (O::Scan, N::Dimensions) => K::IntList,
        (O::Scan, N::NumCarries) => K::Int,
        (O::Scan, N::IsReverse | N::IsAssociative) => K::Bool,
        (O::SelectAndScatter, N::Select | N::Scatter) => K::Computation,
        (O::SelectAndScatter, N::Window) => K::Window,
        (O::Slice, N::Slice) => K::Slice,
        (O::DynamicSlice, N::DynamicSliceSizes) => K::IntList,
        (O::BatchNormTraining | O::BatchNormInference | O::BatchNormGrad, N::Epsilon) => K::Float,
        (O::BatchNormTraining | O::BatchNormInference | O::BatchNormGrad, N::FeatureIndex) => {
            K::Int
        }
        (O::Pad, N::Padding) => K::Padding,
        (O::Fusion, N::Calls) => K::Computation,
        (O::Fusion, N::Kind) => K::FusionKind,
        (O::Fusion, N::OutputToOperandAliasing) => K::Aliasing,
        (O::Infeed, N::InfeedConfig) => K::String,
        (O::Outfeed, N::OutfeedConfig) => K::String,
        (O::Outfeed, N::OutfeedShape) => K::Shape,
        (O::Rng, N::Distribution) => K::Ident,
        (O::RngGetAndUpdateState, N::Delta) => K::Int,
        (O::RngBitGenerator, N::Algorithm) => K::Ident,
        (O::ReducePrecision, N::ExponentBits | N::MantissaBits) => K::Int,
        (O::Conditional, N::TrueComputation | N::FalseComputation) => K::Computation,
        (O::Conditional, N::BranchComputations) => K::Computations,
        (O::CustomCall, N::CustomCallTarget) => K::String,
        (O::CustomCall, N::OperandLayoutConstraints) => K::Shapes,
        (O::CustomCall, N::CustomCallHasSideEffect) => K::Bool,
        (O::CustomCall, N::ToApply) => K::Computation,
        (O::CustomCall, N::CalledComputations) => K::Computations,
        (O::CustomCall, N::OutputToOperandAliasing) => K::Aliasing,
        (O::CustomCall, N::PaddingType | N::Schedule | N::ApiVersion) => K::Ident,
        (O::CustomCall, N::Literal) => K::Literal,
        (O::CustomCall, n) => conv_like(n)?,
        (O::Dot | O::ScaledDot, n) => dot(n)?,
        (O::RaggedDot, N::LhsRaggedDims | N::RhsGroupDims) => K::IntList,
        (O::RaggedDot, n) => dot(n)?,
        (
            O::Gather,
            N::OffsetDims
            | N::CollapsedSliceDims
            | N::StartIndexMap
            | N::SliceSizes
            | N::OperandBatchingDims
            | N::StartIndicesBatchingDims,
        ) => K::IntList,
        (O::Gather | O::Scatter, N::IndexVectorDim) => K::Int,
        (O::Gather, N::IndicesAreSorted) => K::Bool,
        (
            O::Scatter,
            N::UpdateWindowDims
            | N::InsertedWindowDims
            | N::ScatterDimsToOperandDims
            | N::InputBatchingDims
            | N::ScatterIndicesBatchingDims,
        ) => K::IntList,
        (O::Scatter, N::ToApply) => K::Computation,
        (O::Scatter, N::IndicesAreSorted | N::UniqueIndices) => K::Bool,
        (O::Domain, N::Domain) => K::Opaque,
        _ => return None,
    };
    Some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(
            attr_kind(Opcode::Dot, &AttrName::LhsContractingDims),
            Some(AttrKind::IntList)
        );
        assert_eq!(attr_kind(Opcode::Add, &AttrName::Dimensions), None);
        assert_eq!(
            attr_kind(Opcode::Add, &AttrName::Metadata),
            Some(AttrKind::Metadata)
        );
        assert_eq!(attr_kind(Opcode::Add, &AttrName::Other("foo".into())), None);
        assert!(is_generic(&AttrName::Sharding));
        assert!(!is_generic(&AttrName::Dimensions));
    }
}
