//! # plan — the program as data, between fusion and the backends
//!
//! The executable's plan: the thunk sequence (in the entry computation's def-before-use
//! order: kernel launches with codegen's kernel for each, library calls, copies, loops,
//! conditionals), the buffers every value lives in, and their assignment to allocations
//! (temporaries reuse an allocation once their last user ran), with text dumps in the
//! style of XLA's `thunks.txt` and `buffer-assignment.txt`.
//!
//! Also here: the HLO rewrites the program builder relies on ([`OutlineFusedGemms`],
//! [`DotsToGemms`], [`MatchBoundaryLayouts`]; the driver registers them in its pipeline),
//! the comparator recognizer that picks sort library calls ([`sort_order`]), the
//! [`Backend`] and [`Executable`] traits every target implements (the runtime drives
//! them as trait objects), and the [`Profile`] a backend records.
//!
//! The crate produces data only: it runs no compiler and loads nothing.

mod alias_layouts;
mod backend;
mod boundary_layouts;
mod build;
pub mod collective;
mod communicator;
mod gemm;
mod gemm_dots;
pub mod memory;
mod outline;
mod print;
mod profile;
pub mod sort_order;
pub mod stream;
mod stream_axis;
pub mod stream_chain;
mod stream_group;
mod stream_peak;
mod stream_reorder;
mod stream_rhs;
mod streamed_parts;
mod thunk_names;

pub use backend::{
    Backend, BackendError, Executable, OutputBuffer, OwnedOutput, Prepared, PreparedRun, RawOutputs,
};
pub use boundary_layouts::MatchBoundaryLayouts;
pub use build::{build_program, build_program_with, BuildOptions};
pub use collective::{Collective, CollectiveKind, Grid, Phase};
pub use communicator::{
    current_communicator, with_communicator, CommError, CommOp, Communicator, Request, Ticket,
};
pub use gemm::{gemm_form, gemm_shape, GemmShape};
pub use gemm_dots::DotsToGemms;
pub use outline::{OutlineFusedGemms, OUTLINE_MIN_MULTIPLY_ADDS};
pub use print::{buffer_assignment_text, thunks_text};
pub use profile::{profile_label, Profile};
pub use sort_order::{recognize_comparator, KeyCompare, SortKey, SortOrder};
pub use streamed_parts::{kernel_into_gemm, streamed_parts, KernelIntoGemm, StreamedParts};

use codegen::kir::{Kernel, ScalarType};

/// A buffer value (the result of an instruction, or an alias of one).
pub type BufferId = usize;

/// What an allocation holds.
#[derive(Clone, Debug, PartialEq)]
pub enum AllocationKind {
    /// Entry parameter `n` (the caller's data).
    Parameter(usize),
    /// A constant's data (in physical layout order, filled once when loading).
    Constant(hlo::literal::ArrayLiteral),
    /// A temporary: a slice of the program's temp block at [`Allocation::offset`]
    /// (values live at the same time never overlap there; see [`memory::assign`]).
    Temp,
    /// Output `n`'s memory (the run hands it to the caller, so it lives apart).
    Output(usize),
}

/// One region of memory the executor binds buffers to.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// What it holds.
    pub kind: AllocationKind,
    /// Size in bytes.
    pub bytes: u64,
    /// Where a temporary lies in the temp block ([`Program::temp_block_bytes`]), or in
    /// its [`Allocation::parent`]; `None` for memory of its own (parameters, constants,
    /// outputs).
    pub offset: Option<u64>,
    /// The output allocation whose memory holds this temporary at `offset` (it dies
    /// before that output is written, as in XLA's maybe-live-out allocations); `None`:
    /// the temp block, or memory of its own.
    pub parent: Option<usize>,
}

/// A buffer value: where an instruction's (array) result lives.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    /// The instruction (and tuple index) it holds.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// The allocation it lives in (at offset 0).
    pub allocation: usize,
    /// First thunk that writes it (`None` for parameters and constants).
    pub defined_at: Option<usize>,
    /// Last thunk that reads it (the end for outputs).
    pub last_use: Option<usize>,
}

/// The logical shape of a parameter or output: element type, dims and layout.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySpec {
    /// The buffer holding it.
    pub buffer: BufferId,
    /// Element type.
    pub ty: ScalarType,
    /// The HLO element type.
    pub element_type: hlo::ElementType,
    /// Dimensions.
    pub dims: Vec<i64>,
    /// Physical order, minor to major.
    pub minor_to_major: Vec<i64>,
}

impl ArraySpec {
    /// Bytes of its elements, densely packed.
    pub fn byte_len(&self) -> usize {
        let count: usize = self.dims.iter().map(|&d| d.max(0) as usize).product();
        count * self.ty.byte_width() as usize
    }

    /// Checks that `bytes` holds exactly this array as parameter `index` (every backend's
    /// `prepare_bytes` asks, so the message is one).
    pub fn check_bytes(&self, index: usize, bytes: &[u8]) -> Result<(), BackendError> {
        let want = self.byte_len();
        if bytes.len() == want {
            return Ok(());
        }
        Err(BackendError::Argument {
            index,
            message: format!(
                "{} bytes for {}{:?} ({want} bytes)",
                bytes.len(),
                self.element_type.as_str(),
                self.dims,
            ),
        })
    }
}

/// One step of the executable.
#[derive(Clone, Debug, PartialEq)]
pub enum Thunk {
    /// Runs kernel `kernel` over `blocks` blocks with `args[i]` as `bufs[i]`.
    Kernel {
        /// Index into [`Program::kernels`].
        kernel: usize,
        /// The buffers bound to the kernel's parameters.
        args: Vec<BufferId>,
        /// Grid size.
        blocks: i64,
        /// The elements it touches, the largest buffer it reads or writes (to decide
        /// whether splitting its blocks across threads pays).
        elements: i64,
    },
    /// A loop: copies `init` into `state`, then runs `cond` (its result, `pred`, in
    /// `cond_result`) and, while it is true, `body`, copying `body_results` into `state`
    /// after every iteration (all read before any is written).
    While {
        /// The `while` instruction (for messages).
        name: String,
        /// The condition's thunks.
        cond: Vec<Thunk>,
        /// The buffer holding the condition's `pred` result.
        cond_result: BufferId,
        /// The body's thunks.
        body: Vec<Thunk>,
        /// The body's result leaves.
        body_results: Vec<BufferId>,
        /// The loop state (the while's result leaves), dedicated buffers.
        state: Vec<BufferId>,
        /// The initial values' buffers.
        init: Vec<BufferId>,
        /// The iterations, when known before the loop runs (`hlo::trip_count`: XLA's
        /// `known_trip_count`, or a counted loop's constant bounds and step); `None` when
        /// unknown. An estimate for weighing the body's kernels, never a bound the
        /// executors trust: they run `cond` every iteration.
        trips: Option<u64>,
    },
    /// Runs the branch chosen by `selector` (a `pred`: true is branch 0; an `s32`: out of
    /// range is the last branch), then copies its results into `results`.
    Conditional {
        /// The selector's buffer.
        selector: BufferId,
        /// Whether the selector is a `pred` (else `s32`).
        selector_is_pred: bool,
        /// Each branch: its thunks and result leaves.
        branches: Vec<(Vec<Thunk>, Vec<BufferId>)>,
        /// The conditional's result leaves, dedicated buffers.
        results: Vec<BufferId>,
    },
    /// A kernel writing a GEMM's operand and that GEMM, run block by block (see
    /// [`stream`]): block `b` of `producer` writes its `block_elements` operand elements
    /// (whole rows: of the lhs, or along `k`, `StreamAxis`) into a scratch slot
    /// of the operand buffer's allocation, and `gemm` multiplies those rows at once,
    /// while they are in cache. The blocks split into `slots` runs of consecutive blocks,
    /// one slot each, so runs may go in parallel.
    StreamedGemm {
        /// The producer, a [`Thunk::Kernel`].
        producer: Box<Thunk>,
        /// Which of the producer's arguments is the streamed operand (the lhs, or with
        /// `StreamAxis::Contraction` the operand it names).
        lhs_arg: usize,
        /// The operand elements one block writes (whole rows of it).
        block_elements: i64,
        /// Scratch slots of `group * block_elements` each in the operand's buffer (for a
        /// contraction stream, then one result-sized accumulator per slot but the first).
        slots: usize,
        /// Consecutive producer blocks written into a slot before one GEMM call multiplies
        /// their rows (a row stream; 1 for a contraction stream): the producer's grid is
        /// cut for its own work (64 blocks of a few rows), and a GEMM call on a few rows
        /// rereads the whole rhs, so the stream multiplies `group` blocks' rows at once
        /// (the planner picks it where it streams).
        group: i64,
        /// The GEMM, a [`Thunk::Gemm`] of one batch element over the producer's output.
        gemm: Box<Thunk>,
        /// Which of the GEMM's dimensions the blocks split: result rows (the blocks write
        /// lhs rows), or the contraction (the blocks write rows of `k` of the lhs or rhs,
        /// each block's product added into the result; see `StreamAxis`).
        axis: stream_axis::StreamAxis,
    },
    /// A library GEMM: `out = lhs x rhs` per batch element.
    Gemm {
        /// The matrices' shapes and strides.
        shape: GemmShape,
        /// The lhs buffer.
        lhs: BufferId,
        /// The rhs buffer.
        rhs: BufferId,
        /// The result buffer.
        out: BufferId,
    },
    /// A routine of the runtime's library over whole buffers (sort, top-k, scatter,
    /// select-and-scatter, LAPACK, random bits); its called computations are compiled
    /// as scalar-function kernels (see [`codegen::emit::emit_scalar_function`]).
    Library {
        /// What it computes.
        call: LibraryCall,
        /// The operands' buffers and layouts, in operand order.
        inputs: Vec<ArraySpec>,
        /// The results' buffers and layouts (the leaves of the result).
        outputs: Vec<ArraySpec>,
    },
    /// A step of an SPMD run that depends on the device: a collective (or one half of an
    /// async pair) or a replica/partition id, run through the backend's
    /// [`Communicator`].
    Collective {
        /// What it exchanges, with whom, and its phase.
        step: Box<Collective>,
        /// The operands (read by a whole collective and a start; none for a done).
        inputs: Vec<ArraySpec>,
        /// The results (written by a whole collective and a done; none for a start).
        outputs: Vec<ArraySpec>,
    },
    /// Copies `bytes` bytes from `src` to `dst`.
    Copy {
        /// Source.
        src: BufferId,
        /// Destination.
        dst: BufferId,
        /// Byte count.
        bytes: u64,
    },
}

/// A library routine of the runtime. Kernel numbers index [`Program::kernels`]: scalar
/// functions whose buffers are the called computation's parameters, then its results.
#[derive(Clone, Debug, PartialEq)]
pub enum LibraryCall {
    /// A stable sort of every operand along `dim`, ordered by the comparator (its
    /// parameters: operand 0's two elements, operand 1's, ...; it returns `pred`).
    Sort {
        /// The sorted dimension.
        dim: usize,
        /// The comparator kernel.
        comparator: usize,
        /// The comparator as a key order, when recognized ([`recognize_comparator`]):
        /// the runtime then sorts typed keys and calls the kernel for nothing.
        order: Option<SortOrder>,
    },
    /// The `k` first elements of every row (last dimension) in the order of the
    /// comparator (2 parameters: values; 4: values then `s32` indices), or without one,
    /// the total order (largest or smallest first), ties by lower index; results are the
    /// values and their indices.
    TopK {
        /// Elements kept per row.
        k: usize,
        /// Largest first (when there is no comparator).
        largest: bool,
        /// The comparator kernel, if any.
        comparator: Option<usize>,
        /// The order as keys: the `topk` opcode's total order, or a recognized
        /// comparator's (operand 0 the values, operand 1 the indices).
        order: Option<SortOrder>,
    },
    /// XLA's scatter: the results start as the operands; every update element is
    /// combined into them, in update order (sequential: indices may repeat); a window
    /// reaching outside the operand is skipped.
    Scatter {
        /// `update_window_dims`.
        update_window_dims: Vec<usize>,
        /// `inserted_window_dims`.
        inserted_window_dims: Vec<usize>,
        /// `scatter_dims_to_operand_dims`.
        scatter_dims_to_operand_dims: Vec<usize>,
        /// `index_vector_dim` (the rank of the indices when they are implicit scalars).
        index_vector_dim: usize,
        /// `input_batching_dims`.
        input_batching_dims: Vec<usize>,
        /// `scatter_indices_batching_dims`.
        scatter_indices_batching_dims: Vec<usize>,
        /// The combiner kernel (current values, then updates).
        combiner: usize,
    },
    /// `select-and-scatter`: each source element goes to the operand position that the
    /// select kernel picks in its window, combined there by the scatter kernel.
    SelectAndScatter {
        /// The window, one entry per dimension.
        window: Vec<hlo::attrs::WindowDim>,
        /// The select kernel.
        select: usize,
        /// The scatter kernel.
        scatter: usize,
    },
    /// `fft` over the `lengths.len()` trailing dimensions, through the runtime's FFT
    /// library (computed in `f64`, rounded once; inverses scaled by `1/n`).
    Fft {
        /// `FFT`, `IFFT`, `RFFT` or `IRFFT`.
        kind: FftKind,
        /// `fft_length`.
        lengths: Vec<usize>,
    },
    /// A LAPACK custom call JAX emits, through the runtime's linear-algebra library.
    Lapack(LapackCall),
    /// `rng-bit-generator`: the new state and the random bits, bit-exact with XLA.
    RngBitGenerator {
        /// Philox (else ThreeFry).
        philox: bool,
    },
}

/// The kinds of `fft`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftKind {
    /// Complex to complex, forward.
    Fft,
    /// Complex to complex, inverse.
    Ifft,
    /// Real to complex (the first `n/2 + 1` frequencies of the last dimension).
    Rfft,
    /// Complex (Hermitian half) to real.
    Irfft,
}

/// The LAPACK custom calls (`lapack_?potrf_ffi`, `lapack_?trsm_ffi`, `lapack_?getrf_ffi`,
/// `lapack_?geqrf_ffi`, `lapack_?orgqr_ffi`, `lapack_?syevd_ffi`, `lapack_?gesdd_ffi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LapackCall {
    /// Cholesky factor in the lower (or upper) triangle; the other is left as it was;
    /// results: the factor and `info` per matrix.
    Potrf {
        /// Lower triangle.
        lower: bool,
    },
    /// Triangular solve `op(A) X = B` (left) or `X op(A) = B`.
    Trsm {
        /// `side = L`.
        left: bool,
        /// `uplo = L`.
        lower: bool,
        /// `trans_x = T` (or `C`: the same for real matrices).
        transpose: bool,
        /// `diag = U`.
        unit_diagonal: bool,
    },
    /// LU with partial pivoting; results: the factors, 1-based pivot rows, `info`.
    Getrf,
    /// Householder QR (`geqrf`); results: `R` over the reflectors, and the `tau`s.
    Geqrf,
    /// The first columns of `Q` from `geqrf`'s reflectors and `tau`s (`orgqr`).
    Orgqr,
    /// Symmetric eigendecomposition (`syevd`) of the lower (or upper) triangle; results:
    /// the eigenvectors as columns, the eigenvalues in nondecreasing order, `info`.
    Syevd {
        /// `uplo = L`.
        lower: bool,
    },
    /// Singular value decomposition (`gesdd`); results: the operand's buffer (left as
    /// it was), the singular values in nonincreasing order, `U`, `V^T` (square or thin,
    /// as their shapes say; `mode = N` asks for the values alone, and gets both too),
    /// `info`.
    Gesdd,
}

impl LibraryCall {
    /// A short name for dumps.
    pub fn name(&self) -> &'static str {
        match self {
            LibraryCall::Sort { .. } => "sort",
            LibraryCall::TopK { .. } => "topk",
            LibraryCall::Scatter { .. } => "scatter",
            LibraryCall::SelectAndScatter { .. } => "select-and-scatter",
            LibraryCall::Fft {
                kind: FftKind::Fft, ..
            } => "fft",
            LibraryCall::Fft {
                kind: FftKind::Ifft,
                ..
            } => "ifft",
            LibraryCall::Fft {
                kind: FftKind::Rfft,
                ..
            } => "rfft",
            LibraryCall::Fft {
                kind: FftKind::Irfft,
                ..
            } => "irfft",
            LibraryCall::Lapack(LapackCall::Potrf { .. }) => "lapack.potrf",
            LibraryCall::Lapack(LapackCall::Trsm { .. }) => "lapack.trsm",
            LibraryCall::Lapack(LapackCall::Getrf) => "lapack.getrf",
            LibraryCall::Lapack(LapackCall::Geqrf) => "lapack.geqrf",
            LibraryCall::Lapack(LapackCall::Orgqr) => "lapack.orgqr",
            LibraryCall::Lapack(LapackCall::Syevd { .. }) => "lapack.syevd",
            LibraryCall::Lapack(LapackCall::Gesdd) => "lapack.gesdd",
            LibraryCall::RngBitGenerator { philox: true } => "rng-bit-generator.philox",
            LibraryCall::RngBitGenerator { philox: false } => "rng-bit-generator.threefry",
        }
    }
}

/// A compiled module's plan: kernels, thunks, buffers and allocations.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The module's name.
    pub name: String,
    /// Every kernel, named uniquely.
    pub kernels: Vec<Kernel>,
    /// The thunk sequence.
    pub thunks: Vec<Thunk>,
    /// Buffer values.
    pub buffers: Vec<Buffer>,
    /// Allocations.
    pub allocations: Vec<Allocation>,
    /// Entry parameters, in parameter order.
    pub parameters: Vec<ArraySpec>,
    /// Outputs (the root's leaves in flattened tuple order).
    pub outputs: Vec<ArraySpec>,
    /// Whether the root is a tuple (outputs are returned as one).
    pub tuple_output: bool,
    /// Live bytes at the schedule's peak (parameters, constants and outputs included;
    /// the temp block's gaps excluded).
    pub peak_bytes: u64,
    /// Size of the temp block every temporary lives in at its offset.
    pub temp_block_bytes: u64,
}

impl Program {
    /// Bytes of every allocation as XLA counts them: parameters, constants, outputs and
    /// the temp block (its slices not counted twice).
    pub fn buffer_bytes(&self) -> u64 {
        let own: u64 = self
            .allocations
            .iter()
            .filter(|a| a.offset.is_none())
            .map(|a| a.bytes)
            .sum();
        own + self.temp_block_bytes
    }

    /// Bytes of temporaries as XLA defines them: the temp block (outputs, parameters and
    /// constants excluded).
    pub fn temp_bytes(&self) -> u64 {
        self.temp_block_bytes
    }

    /// Number of library-call thunks (nested sequences included).
    pub fn library_calls(&self) -> usize {
        fn count(ts: &[Thunk]) -> usize {
            ts.iter()
                .map(|t| match t {
                    Thunk::Gemm { .. } | Thunk::Library { .. } | Thunk::StreamedGemm { .. } => 1,
                    Thunk::While { cond, body, .. } => count(cond) + count(body),
                    Thunk::Conditional { branches, .. } => {
                        branches.iter().map(|(b, _)| count(b)).sum()
                    }
                    _ => 0,
                })
                .sum()
        }
        count(&self.thunks)
    }
}
