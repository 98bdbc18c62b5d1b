//! Typed views of an instruction's attributes.
//!
//! Each accessor returns `None` when the attribute is absent or has another type (a
//! verifier reports those; the IR itself does not require attributes to be present).

use super::{CompId, Instruction, Metadata};
use crate::attrs::{
    AttrName, AttrValue, ComparisonDirection, ComparisonType, ConvDimensionNumbers,
    DotDimensionNumbers, FusionKind, GatherDimensionNumbers, OutputOperandAlias, PaddingConfig,
    ReplicaGroups, ScatterDimensionNumbers, SliceDim, TextValue, Window,
};

impl Instruction {
    fn int_attr(&self, name: AttrName) -> Option<i64> {
        match self.attr(&name)? {
            AttrValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    fn bool_attr(&self, name: AttrName) -> Option<bool> {
        match self.attr(&name)? {
            AttrValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn list_attr(&self, name: AttrName) -> Option<&[i64]> {
        match self.attr(&name)? {
            AttrValue::IntList(v) => Some(v),
            _ => None,
        }
    }

    fn comp_attr(&self, name: AttrName) -> Option<CompId> {
        match self.attr(&name)? {
            AttrValue::Computation(c) => Some(*c),
            _ => None,
        }
    }

    fn string_attr(&self, name: AttrName) -> Option<&str> {
        match self.attr(&name)? {
            AttrValue::String(s) | AttrValue::Ident(s) => Some(s),
            _ => None,
        }
    }

    /// `dimensions={...}` (broadcast, transpose, reduce, reverse, concatenate, sort, ...).
    pub fn dimensions(&self) -> Option<&[i64]> {
        self.list_attr(AttrName::Dimensions)
    }

    /// `slice={[start:limit:stride], ...}`.
    pub fn slice(&self) -> Option<&[SliceDim]> {
        match self.attr(&AttrName::Slice)? {
            AttrValue::Slice(v) => Some(v),
            _ => None,
        }
    }

    /// `dynamic_slice_sizes={...}`.
    pub fn dynamic_slice_sizes(&self) -> Option<&[i64]> {
        self.list_attr(AttrName::DynamicSliceSizes)
    }

    /// `padding=...` of a pad.
    pub fn padding(&self) -> Option<&PaddingConfig> {
        match self.attr(&AttrName::Padding)? {
            AttrValue::Padding(p) => Some(p),
            _ => None,
        }
    }

    /// `window={...}`.
    pub fn window(&self) -> Option<&Window> {
        match self.attr(&AttrName::Window)? {
            AttrValue::Window(w) => Some(w),
            _ => None,
        }
    }

    /// `dim_labels=...` of a convolution (or convolution-like custom call).
    pub fn conv_dimension_numbers(&self) -> Option<&ConvDimensionNumbers> {
        match self.attr(&AttrName::DimLabels)? {
            AttrValue::ConvDims(d) => Some(d),
            _ => None,
        }
    }

    /// `feature_group_count=` (1 when absent).
    pub fn feature_group_count(&self) -> i64 {
        self.int_attr(AttrName::FeatureGroupCount).unwrap_or(1)
    }

    /// `batch_group_count=` (1 when absent).
    pub fn batch_group_count(&self) -> i64 {
        self.int_attr(AttrName::BatchGroupCount).unwrap_or(1)
    }

    /// Dot dimension numbers from the `lhs_/rhs_contracting_dims` and `lhs_/rhs_batch_dims`
    /// attributes (absent lists are empty).
    pub fn dot_dimension_numbers(&self) -> DotDimensionNumbers {
        let get = |n| self.list_attr(n).map(<[i64]>::to_vec).unwrap_or_default();
        DotDimensionNumbers {
            lhs_contracting_dims: get(AttrName::LhsContractingDims),
            rhs_contracting_dims: get(AttrName::RhsContractingDims),
            lhs_batch_dims: get(AttrName::LhsBatchDims),
            rhs_batch_dims: get(AttrName::RhsBatchDims),
        }
    }

    /// Gather dimension numbers; `None` when `index_vector_dim` is absent.
    pub fn gather_dimension_numbers(&self) -> Option<GatherDimensionNumbers> {
        let get = |n| self.list_attr(n).map(<[i64]>::to_vec).unwrap_or_default();
        Some(GatherDimensionNumbers {
            offset_dims: get(AttrName::OffsetDims),
            collapsed_slice_dims: get(AttrName::CollapsedSliceDims),
            start_index_map: get(AttrName::StartIndexMap),
            index_vector_dim: self.int_attr(AttrName::IndexVectorDim)?,
            operand_batching_dims: get(AttrName::OperandBatchingDims),
            start_indices_batching_dims: get(AttrName::StartIndicesBatchingDims),
        })
    }

    /// `slice_sizes={...}` of a gather.
    pub fn gather_slice_sizes(&self) -> Option<&[i64]> {
        self.list_attr(AttrName::SliceSizes)
    }

    /// Scatter dimension numbers; `None` when `index_vector_dim` is absent.
    pub fn scatter_dimension_numbers(&self) -> Option<ScatterDimensionNumbers> {
        let get = |n| self.list_attr(n).map(<[i64]>::to_vec).unwrap_or_default();
        Some(ScatterDimensionNumbers {
            update_window_dims: get(AttrName::UpdateWindowDims),
            inserted_window_dims: get(AttrName::InsertedWindowDims),
            scatter_dims_to_operand_dims: get(AttrName::ScatterDimsToOperandDims),
            index_vector_dim: self.int_attr(AttrName::IndexVectorDim)?,
            input_batching_dims: get(AttrName::InputBatchingDims),
            scatter_indices_batching_dims: get(AttrName::ScatterIndicesBatchingDims),
        })
    }

    /// `direction=` of a compare.
    pub fn comparison_direction(&self) -> Option<ComparisonDirection> {
        match self.attr(&AttrName::Direction)? {
            AttrValue::ComparisonDirection(d) => Some(*d),
            _ => None,
        }
    }

    /// `type=` of a compare, if written; `order=TOTAL` (as newer JAX prints a total-order
    /// compare) is [`ComparisonType::TotalOrder`].
    pub fn comparison_type(&self) -> Option<ComparisonType> {
        match self.attr(&AttrName::Type) {
            Some(AttrValue::ComparisonType(t)) => Some(*t),
            _ => match self.attr(&AttrName::Order)? {
                AttrValue::Ident(o) if o == "TOTAL" => Some(ComparisonType::TotalOrder),
                _ => None,
            },
        }
    }

    /// `kind=` of a fusion.
    pub fn fusion_kind(&self) -> Option<FusionKind> {
        match self.attr(&AttrName::Kind)? {
            AttrValue::FusionKind(k) => Some(*k),
            _ => None,
        }
    }

    /// `custom_call_target=` of a custom call.
    pub fn custom_call_target(&self) -> Option<&str> {
        self.string_attr(AttrName::CustomCallTarget)
    }

    /// `backend_config=`.
    pub fn backend_config(&self) -> Option<&TextValue> {
        match self.attr(&AttrName::BackendConfig)? {
            AttrValue::BackendConfig(b) => Some(b),
            _ => None,
        }
    }

    /// `metadata={...}`.
    pub fn metadata(&self) -> Option<&Metadata> {
        match self.attr(&AttrName::Metadata)? {
            AttrValue::Metadata(m) => Some(m),
            _ => None,
        }
    }

    /// `frontend_attributes={...}` entries.
    pub fn frontend_attributes(&self) -> &[(String, TextValue)] {
        match self.attr(&AttrName::FrontendAttributes) {
            Some(AttrValue::FrontendAttributes(v)) => v,
            _ => &[],
        }
    }

    /// `sharding={...}`, typed.
    pub fn sharding(&self) -> Option<&crate::sharding_types::Sharding> {
        match self.attr(&AttrName::Sharding)? {
            AttrValue::Sharding(s) => Some(&s.sharding),
            _ => None,
        }
    }

    /// `sharding={...}` as written.
    pub fn sharding_text(&self) -> Option<&str> {
        match self.attr(&AttrName::Sharding)? {
            AttrValue::Sharding(s) => Some(&s.text),
            AttrValue::Opaque(s) => Some(s),
            _ => None,
        }
    }

    /// `to_apply=`.
    pub fn to_apply(&self) -> Option<CompId> {
        self.comp_attr(AttrName::ToApply)
    }

    /// `calls=` (fusion, async ops).
    pub fn calls(&self) -> Option<CompId> {
        self.comp_attr(AttrName::Calls)
    }

    /// `condition=` of a while.
    pub fn while_condition(&self) -> Option<CompId> {
        self.comp_attr(AttrName::Condition)
    }

    /// `body=` of a while.
    pub fn while_body(&self) -> Option<CompId> {
        self.comp_attr(AttrName::Body)
    }

    /// Branches of a conditional: `branch_computations={...}`, or
    /// `{true_computation, false_computation}`.
    pub fn branch_computations(&self) -> Option<Vec<CompId>> {
        if let Some(AttrValue::Computations(v)) = self.attr(&AttrName::BranchComputations) {
            return Some(v.clone());
        }
        Some(vec![
            self.comp_attr(AttrName::TrueComputation)?,
            self.comp_attr(AttrName::FalseComputation)?,
        ])
    }

    /// `index=` of a get-tuple-element.
    pub fn tuple_index(&self) -> Option<i64> {
        self.int_attr(AttrName::Index)
    }

    /// `iota_dimension=`.
    pub fn iota_dimension(&self) -> Option<i64> {
        self.int_attr(AttrName::IotaDimension)
    }

    /// `channel_id=`.
    pub fn channel_id(&self) -> Option<i64> {
        self.int_attr(AttrName::ChannelId)
    }

    /// `replica_groups=`.
    pub fn replica_groups(&self) -> Option<&ReplicaGroups> {
        match self.attr(&AttrName::ReplicaGroups)? {
            AttrValue::ReplicaGroups(g) => Some(g),
            _ => None,
        }
    }

    /// `output_to_operand_aliasing=`.
    pub fn output_to_operand_aliasing(&self) -> &[OutputOperandAlias] {
        match self.attr(&AttrName::OutputToOperandAliasing) {
            Some(AttrValue::Aliasing(v)) => v,
            _ => &[],
        }
    }

    /// `is_stable=` of sort/topk (false when absent).
    pub fn is_stable(&self) -> bool {
        self.bool_attr(AttrName::IsStable).unwrap_or(false)
    }

    /// `num_carries=` of scan: how many of the last operands are initial carries (0 when
    /// absent, the default of XLA's instruction proto).
    pub fn scan_num_carries(&self) -> i64 {
        self.int_attr(AttrName::NumCarries).unwrap_or(0)
    }

    /// `is_reverse=` of scan: the scan runs from the last position of the scanned
    /// dimension to the first (false when absent).
    pub fn scan_is_reverse(&self) -> bool {
        self.bool_attr(AttrName::IsReverse).unwrap_or(false)
    }

    /// The scanned dimension of scan: the one entry of `dimensions={d}` (`None` when the
    /// attribute is absent or does not hold exactly one dimension).
    pub fn scan_dimension(&self) -> Option<i64> {
        match self.dimensions()? {
            [d] => Some(*d),
            _ => None,
        }
    }

    /// `k=` of topk.
    pub fn topk_k(&self) -> Option<i64> {
        self.int_attr(AttrName::K)
    }

    /// `epsilon=` of the batch-norm ops.
    pub fn epsilon(&self) -> Option<f32> {
        match self.attr(&AttrName::Epsilon)? {
            AttrValue::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// `feature_index=` of the batch-norm ops.
    pub fn feature_index(&self) -> Option<i64> {
        self.int_attr(AttrName::FeatureIndex)
    }

    /// `exponent_bits=` and `mantissa_bits=` of reduce-precision.
    pub fn reduce_precision_bits(&self) -> Option<(i64, i64)> {
        Some((
            self.int_attr(AttrName::ExponentBits)?,
            self.int_attr(AttrName::MantissaBits)?,
        ))
    }

    /// `async_execution_thread=`.
    pub fn async_execution_thread(&self) -> Option<&str> {
        self.string_attr(AttrName::AsyncExecutionThread)
    }

    /// `fft_type=` (`FFT`, `IFFT`, `RFFT`, `IRFFT`).
    pub fn fft_type(&self) -> Option<&str> {
        self.string_attr(AttrName::FftType)
    }

    /// `fft_length=`.
    pub fn fft_length(&self) -> Option<&[i64]> {
        self.list_attr(AttrName::FftLength)
    }

    /// `distribution=` of rng (`rng_uniform`, `rng_normal`).
    pub fn rng_distribution(&self) -> Option<&str> {
        self.string_attr(AttrName::Distribution)
    }

    /// `operand_precision={...}`.
    pub fn operand_precision(&self) -> Option<&[String]> {
        match self.attr(&AttrName::OperandPrecision)? {
            AttrValue::IdentList(v) => Some(v),
            _ => None,
        }
    }
}
