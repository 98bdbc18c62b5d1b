//! Instruction attributes (`dimensions={0}`, `window={...}`, `metadata={...}`, ...): names,
//! typed values, and which attributes each opcode takes.

mod display;
mod schema;
mod suggest;
mod types;

pub(crate) use display::{write_aliasing, write_int_list, write_int_list_list, write_slice};
pub use schema::{attr_kind, is_generic, AttrKind};
pub use suggest::unknown_attribute_message;
pub use types::{
    ComparisonDirection, ComparisonType, ConvDimensionNumbers, DotDimensionNumbers, FusionKind,
    GatherDimensionNumbers, MeshDeviceIds, OutputOperandAlias, PaddingConfig, PaddingDim,
    ReplicaGroups, ScatterDimensionNumbers, SliceDim, TextValue, Window, WindowDim,
};

use crate::ir::{CompId, InstrId, Metadata};
use crate::literal::Literal;
use crate::shape::Shape;

macro_rules! attr_names {
    ($($variant:ident => $text:literal,)*) => {
        /// An attribute name. Names the parser knows are variants; any other name is kept as
        /// [`AttrName::Other`].
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum AttrName {
            $(#[doc = concat!("`", $text, "=`")] $variant,)*
            /// A name the parser does not know.
            Other(Box<str>),
        }

        impl AttrName {
            /// Every name the parser knows, as written in HLO text.
            pub const KNOWN: &'static [&'static str] = &[$($text,)*];

            /// The name as written in HLO text.
            pub fn as_str(&self) -> &str {
                match self {
                    $(AttrName::$variant => $text,)*
                    AttrName::Other(s) => s,
                }
            }

            /// The name for a spelling; unknown spellings become [`AttrName::Other`].
            pub fn from_text(s: &str) -> AttrName {
                match s {
                    $($text => AttrName::$variant,)*
                    _ => AttrName::Other(s.into()),
                }
            }
        }
    };
}

attr_names! {
    Algorithm => "algorithm",
    ApiVersion => "api_version",
    AsyncExecutionThread => "async_execution_thread",
    BackendConfig => "backend_config",
    BatchGroupCount => "batch_group_count",
    Body => "body",
    BranchComputations => "branch_computations",
    CalledComputations => "called_computations",
    Calls => "calls",
    ChannelId => "channel_id",
    CollapsedSliceDims => "collapsed_slice_dims",
    Condition => "condition",
    ConstrainLayout => "constrain_layout",
    ControlPredecessors => "control-predecessors",
    ConvKind => "conv_kind",
    CrossProgramPrefetchIndex => "cross_program_prefetch_index",
    CustomCallHasSideEffect => "custom_call_has_side_effect",
    CustomCallTarget => "custom_call_target",
    DebugAttributes => "debug_attributes",
    Delta => "delta",
    DimLabels => "dim_labels",
    Dimensions => "dimensions",
    Direction => "direction",
    Distribution => "distribution",
    Domain => "domain",
    DynamicSliceSizes => "dynamic_slice_sizes",
    Epsilon => "epsilon",
    ExponentBits => "exponent_bits",
    FalseComputation => "false_computation",
    FeatureGroupCount => "feature_group_count",
    FeatureIndex => "feature_index",
    FftLength => "fft_length",
    FftType => "fft_type",
    FrontendAttributes => "frontend_attributes",
    HasDynamicRoot => "has_dynamic_root",
    IndexVectorDim => "index_vector_dim",
    Index => "index",
    IndicesAreSorted => "indices_are_sorted",
    InferredDimension => "inferred_dimension",
    InfeedConfig => "infeed_config",
    InputBatchingDims => "input_batching_dims",
    InsertedWindowDims => "inserted_window_dims",
    IotaDimension => "iota_dimension",
    IsAssociative => "is_associative",
    IsComposite => "is_composite",
    IsHostTransfer => "is_host_transfer",
    IsReverse => "is_reverse",
    IsStable => "is_stable",
    K => "k",
    Kind => "kind",
    Largest => "largest",
    LeftSide => "left_side",
    LhsBatchDims => "lhs_batch_dims",
    LhsContractingDims => "lhs_contracting_dims",
    LhsRaggedDims => "lhs_ragged_dims",
    Literal => "literal",
    Lower => "lower",
    MantissaBits => "mantissa_bits",
    Metadata => "metadata",
    Mode => "mode",
    NumCarries => "num_carries",
    OffsetDims => "offset_dims",
    OperandBatchingDims => "operand_batching_dims",
    OperandLayoutConstraints => "operand_layout_constraints",
    OperandPrecision => "operand_precision",
    Order => "order",
    Origin => "origin",
    OutfeedConfig => "outfeed_config",
    OutfeedShape => "outfeed_shape",
    OutputToOperandAliasing => "output_to_operand_aliasing",
    Padding => "padding",
    PaddingType => "padding_type",
    ParameterReplication => "parameter_replication",
    ReplicaGroups => "replica_groups",
    ResultAccuracy => "result_accuracy",
    RhsBatchDims => "rhs_batch_dims",
    RhsContractingDims => "rhs_contracting_dims",
    RhsGroupDims => "rhs_group_dims",
    Scatter => "scatter",
    ScatterDimsToOperandDims => "scatter_dims_to_operand_dims",
    ScatterIndicesBatchingDims => "scatter_indices_batching_dims",
    Schedule => "schedule",
    Select => "select",
    Sharding => "sharding",
    Slice => "slice",
    SliceSizes => "slice_sizes",
    SourceTargetPairs => "source_target_pairs",
    StartIndexMap => "start_index_map",
    StartIndicesBatchingDims => "start_indices_batching_dims",
    Statistics => "statistics",
    ToApply => "to_apply",
    TransposeA => "transpose_a",
    TrueComputation => "true_computation",
    Type => "type",
    UniqueIndices => "unique_indices",
    UnitDiagonal => "unit_diagonal",
    UpdateWindowDims => "update_window_dims",
    UseGlobalDeviceIds => "use_global_device_ids",
    Window => "window",
}

/// A typed attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// An integer (`index=0`).
    Int(i64),
    /// `true` / `false`.
    Bool(bool),
    /// A floating-point number (`epsilon=0.001`), stored as XLA stores it (`f32`).
    Float(f32),
    /// `{0,1}`.
    IntList(Vec<i64>),
    /// `{{0,1},{1,2}}`.
    IntListList(Vec<Vec<i64>>),
    /// Replica groups, explicit or iota.
    ReplicaGroups(Box<ReplicaGroups>),
    /// A quoted string, unescaped (`custom_call_target="foo"`).
    String(String),
    /// A bare identifier (`fft_type=FFT`, `distribution=rng_uniform`).
    Ident(String),
    /// `{A, B}` of identifiers (`operand_precision={HIGH,DEFAULT}`).
    IdentList(Vec<String>),
    /// A computation reference (`to_apply=%add`).
    Computation(CompId),
    /// `{%a, %b}` of computation references.
    Computations(Vec<CompId>),
    /// `window={...}`.
    Window(Window),
    /// `dim_labels=b01f_01io->b01f`.
    ConvDims(Box<ConvDimensionNumbers>),
    /// `slice={[0:2], [1:3:2]}`.
    Slice(Vec<SliceDim>),
    /// `padding=0_0x1_1_0`.
    Padding(PaddingConfig),
    /// `kind=kLoop`.
    FusionKind(FusionKind),
    /// `direction=LT`.
    ComparisonDirection(ComparisonDirection),
    /// `type=TOTALORDER`.
    ComparisonType(ComparisonType),
    /// A shape (`outfeed_shape=...`).
    Shape(Box<Shape>),
    /// `{shape, shape}` (`operand_layout_constraints=`).
    Shapes(Vec<Shape>),
    /// A literal with its shape (`literal=s32[2] {1, 2}`).
    Literal(Box<Literal>),
    /// `output_to_operand_aliasing={...}`.
    Aliasing(Vec<OutputOperandAlias>),
    /// `metadata={...}`.
    Metadata(Box<Metadata>),
    /// `frontend_attributes={key="value", ...}`, in written order.
    FrontendAttributes(Vec<(String, TextValue)>),
    /// `backend_config="..."` or `backend_config={...}`.
    BackendConfig(TextValue),
    /// `{%a, %b}` of instructions of the same computation (`control-predecessors=`).
    Instructions(Vec<InstrId>),
    /// `{true, false}` (`parameter_replication=`).
    Bools(Vec<bool>),
    /// `sharding={...}`: the typed sharding with the text it was read from.
    Sharding(Box<crate::sharding_types::ShardingAttr>),
    /// A known attribute kept verbatim because nothing interprets it yet (`origin=`,
    /// `statistics=`, `domain=`, `result_accuracy=`).
    Opaque(String),
    /// An attribute the parser does not know, kept verbatim.
    Raw(String),
}

/// One `name=value` attribute of an instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    /// The name.
    pub name: AttrName,
    /// The value.
    pub value: AttrValue,
}

impl Attribute {
    /// A new attribute.
    pub fn new(name: AttrName, value: AttrValue) -> Attribute {
        Attribute { name, value }
    }
}
