//! Kernels: buffer parameters, the launch grid and the statement tree.

use affine::{Expr, Var};

use super::types::ScalarType;
use super::value::{Value, VarId};

/// How a kernel uses a buffer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read only.
    In,
    /// Written (every element the kernel produces), never read.
    Out,
    /// Read and written (an in-place update).
    InOut,
}

impl Access {
    /// Text form.
    pub fn name(self) -> &'static str {
        match self {
            Access::In => "in",
            Access::Out => "out",
            Access::InOut => "inout",
        }
    }
}

/// One buffer parameter: `bufs[i]` of the kernel function.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferParam {
    /// A readable name (the HLO value it holds).
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Logical dimensions.
    pub dims: Vec<i64>,
    /// Physical order: dimension numbers from minor to major.
    pub minor_to_major: Vec<i64>,
    /// How the kernel uses it.
    pub access: Access,
}

impl BufferParam {
    /// Elements in the buffer.
    pub fn element_count(&self) -> i64 {
        self.dims.iter().product()
    }

    /// Element stride of each logical dimension in the physical order.
    pub fn strides(&self) -> Vec<i64> {
        let mut strides = vec![0; self.dims.len()];
        let mut s = 1i64;
        for &d in &self.minor_to_major {
            if let Some(slot) = usize::try_from(d).ok().and_then(|d| strides.get_mut(d)) {
                *slot = s;
                s = s.saturating_mul(self.dims[d as usize]);
            }
        }
        strides
    }
}

/// The launch domain: `blocks` blocks of `threads` threads each, block `b` binding
/// `block_var = b` (when the kernel has one).
///
/// The body is the program of one block. Its statements outside [`LoopKind::Threads`] loops
/// are block-uniform (every thread of the block computes the same values); a `Threads`
/// loop distributes its iterations over the block's threads. Blocks are independent: a
/// backend may run them in any order and in parallel. A CPU backend runs a range of blocks
/// per call and the threads of a block one after another; a GPU backend maps blocks and
/// threads to its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// Number of blocks (at least 1).
    pub blocks: i64,
    /// The loop variable the block index binds, if any.
    pub block_var: Option<Var>,
    /// Threads per block (at least 1; 1 for kernels written for one thread per block).
    pub threads: i64,
}

impl Grid {
    /// A grid of `blocks` single-thread blocks.
    pub fn blocks(blocks: i64, block_var: Option<Var>) -> Self {
        Grid {
            blocks,
            block_var,
            threads: 1,
        }
    }
}

/// How a loop's iterations run. The grid's blocks are the parallelism across blocks;
/// these kinds are what a loop inside one block promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LoopKind {
    /// One iteration after another, in order (a loop-carried accumulator is allowed).
    #[default]
    Serial,
    /// Independent iterations over a contiguous run of elements: a backend may run them in
    /// SIMD lanes or unroll them. Still correct when run serially.
    Vectorized,
    /// Iterations distributed over the threads of the block: thread `t` of `T` runs
    /// iterations `lo + t`, `lo + t + T`, ... Iterations must be independent, except
    /// through block-shared locals separated by barriers outside the loop.
    Threads,
}

impl LoopKind {
    /// The suffix of `for` in the text form (`for`, `for.vector`, `for.threads`).
    pub fn keyword(self) -> &'static str {
        match self {
            LoopKind::Serial => "for",
            LoopKind::Vectorized => "for.vector",
            LoopKind::Threads => "for.threads",
        }
    }
}

/// Where a local array lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MemorySpace {
    /// One copy per thread (registers or thread-local memory on a GPU; the block's stack
    /// frame on a CPU).
    #[default]
    Private,
    /// One copy per block, shared by its threads (GPU shared memory); written in one
    /// `Threads` loop and read in another only across a [`Stmt::Barrier`].
    Block,
}

impl MemorySpace {
    /// The word in the text form (`local`, `shared`).
    pub fn keyword(self) -> &'static str {
        match self {
            MemorySpace::Private => "local",
            MemorySpace::Block => "shared",
        }
    }
}

/// A statement of a kernel body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A comment (printed in the text form and in C).
    Comment(String),
    /// `for var in [lo, hi]` (inclusive bounds) over `body`.
    Loop {
        /// How the iterations run.
        kind: LoopKind,
        /// The loop variable (a dimension or range variable).
        var: Var,
        /// First value.
        lo: i64,
        /// Last value.
        hi: i64,
        /// The body.
        body: Vec<Stmt>,
    },
    /// An immutable scalar binding.
    Let {
        /// The variable.
        var: VarId,
        /// Its value.
        value: Value,
    },
    /// A mutable scalar (an accumulator) with its initial value.
    Decl {
        /// The variable.
        var: VarId,
        /// Initial value.
        value: Value,
    },
    /// Assignment to a mutable scalar.
    Assign {
        /// The variable (declared with [`Stmt::Decl`]).
        var: VarId,
        /// The new value.
        value: Value,
    },
    /// Binds a runtime index variable (`rtK`) to an integer value, as `s64`.
    BindIndex {
        /// The runtime variable.
        var: Var,
        /// Its value (an integer).
        value: Value,
    },
    /// `if guard { body } else { else_body }`.
    If {
        /// The condition.
        guard: super::value::Guard,
        /// Run when the guard holds.
        body: Vec<Stmt>,
        /// Run otherwise (may be empty).
        else_body: Vec<Stmt>,
    },
    /// Stores `value` at element `offset` of local array `local`.
    LocalStore {
        /// Local array number.
        local: usize,
        /// Element offset.
        offset: Expr,
        /// The value stored.
        value: Value,
    },
    /// Every thread of the block waits until all have reached this point, and their
    /// writes to block-shared locals before it are visible after it. Only at block level
    /// (never inside a `Threads` loop or under a guard that depends on one).
    Barrier,
    /// A warp shuffle: binds `var` (immutable, like [`Stmt::Let`]) to `value` as another
    /// thread of the same warp computed it. Threads are lanes in groups of `width`
    /// consecutive threads; lane `l` reads lane `l + offset` ([`ShuffleKind::Down`]) or
    /// `l ^ offset` ([`ShuffleKind::Xor`]), and its own value where that lane lies outside
    /// its group. Only directly inside a `Threads` loop giving each thread of the block one
    /// iteration (never under a guard or in a nested loop: every thread of the warp must
    /// reach it), so the warp's threads exchange registers without shared memory.
    Shuffle {
        /// The variable bound to the other lane's value.
        var: VarId,
        /// The value each lane offers.
        value: Value,
        /// Which lane is read.
        kind: ShuffleKind,
        /// The lane distance (`1 <= offset < width`).
        offset: i64,
        /// Lanes per group: a power of two, at most a warp (32), dividing the block.
        width: i64,
    },
    /// Stores `value` at element `offset` of buffer `buf`.
    Store {
        /// Buffer parameter number.
        buf: usize,
        /// Element offset (physical order).
        offset: Expr,
        /// The value stored.
        value: Value,
    },
    /// An atomic read-modify-write of element `offset` of buffer `buf`: `old` is bound to
    /// the element's value, `body` and `value` compute its new value from it, and no other
    /// thread or block of the launch writes the element in between, so updates of one
    /// element by many threads all count (a scatter whose indices may collide). A
    /// backend without concurrent threads prints it as a plain read, update and store;
    /// a GPU as one atomic instruction where `value` is `add`, `min` or `max` of `old`
    /// and a value not reading it (for the types the hardware has), else a
    /// compare-and-swap loop on the element's word. The body only computes (bindings and
    /// branches: no stores, loops, barriers or shuffles), as it may run several times.
    Atomic {
        /// Buffer parameter number (written: not an input).
        buf: usize,
        /// Element offset (physical order).
        offset: Expr,
        /// Bound to the element's value before the update (immutable, like a `Let`).
        old: VarId,
        /// Statements computing the new value.
        body: Vec<Stmt>,
        /// The element's new value (of the buffer's type).
        value: Value,
    },
}

/// Which lane a [`Stmt::Shuffle`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleKind {
    /// Lane `l + offset` (a tree reduction toward lane 0).
    Down,
    /// Lane `l ^ offset` (a butterfly: every lane ends with the whole result).
    Xor,
}

impl ShuffleKind {
    /// The word in the text form (`shuffle.down`, `shuffle.xor`).
    pub fn name(self) -> &'static str {
        match self {
            ShuffleKind::Down => "down",
            ShuffleKind::Xor => "xor",
        }
    }
}

/// Number of lanes in a warp: the widest [`Stmt::Shuffle`].
pub const WARP_LANES: i64 = 32;

/// A local array of a kernel: scratch memory (e.g. the accumulators of a tile of
/// column-reduction outputs), uninitialized until stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    /// A readable name (what it holds).
    pub name: String,
    /// Per thread or per block.
    pub space: MemorySpace,
    /// Element type.
    pub ty: ScalarType,
    /// Number of elements.
    pub len: i64,
}

impl Stmt {
    /// `body` under `guard`: the statements as they are when the guard always holds, else
    /// one `If` holding them (the emitters' one way to guard a block).
    pub fn guarded(guard: super::value::Guard, body: Vec<Stmt>) -> Vec<Stmt> {
        if guard.is_true() {
            body
        } else {
            vec![Stmt::If {
                guard,
                body,
                else_body: Vec::new(),
            }]
        }
    }

    /// A serial loop `for var in [lo, hi]`.
    pub fn serial_loop(var: Var, lo: i64, hi: i64, body: Vec<Stmt>) -> Stmt {
        Stmt::Loop {
            kind: LoopKind::Serial,
            var,
            lo,
            hi,
            body,
        }
    }
}

/// The update of a [`Stmt::Atomic`] as one binary operation, where it is one: `value` is
/// `op(old, x)` or `op(x, old)` with `op` one of `add`, `min`, `max` (commutative, so
/// the order does not matter) and `x` not reading `old`, with no body. A GPU has single
/// instructions for some of these (per type); the others take a compare-and-swap loop.
pub fn atomic_binary<'v>(
    old: VarId,
    body: &[Stmt],
    value: &'v Value,
) -> Option<(super::value::BinOp, &'v Value)> {
    use super::value::BinOp;
    let Value::Binary(op, a, b, _) = value else {
        return None;
    };
    if !body.is_empty() || !matches!(op, BinOp::Add | BinOp::Min | BinOp::Max) {
        return None;
    }
    let is_old = |v: &Value| matches!(v, Value::Var(id, _) if *id == old);
    if is_old(a) && !b.reads(old) {
        Some((*op, b))
    } else if is_old(b) && !a.reads(old) {
        Some((*op, a))
    } else {
        None
    }
}

/// Whether `body` has a barrier or a warp shuffle at any depth (a GPU backend then runs the
/// block's threads together; nothing moves across one).
pub fn has_barrier(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Barrier | Stmt::Shuffle { .. } => true,
        Stmt::Loop { body, .. } => has_barrier(body),
        Stmt::If {
            body, else_body, ..
        } => has_barrier(body) || has_barrier(else_body),
        Stmt::Atomic { body, .. } => has_barrier(body),
        _ => false,
    })
}

/// The end of the name of a local array holding one scalar per output row, where a kernel
/// runs its rows as vector lanes ([`Kernel::runs_rows_as_lanes`]).
pub const ROW_LANES: &str = "across rows";

/// One kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The function name (a C identifier).
    pub name: String,
    /// Buffer parameters, in `bufs[]` order.
    pub buffers: Vec<BufferParam>,
    /// The launch grid.
    pub grid: Grid,
    /// Bounds of the dimension variables (`d0`, ...) the body uses.
    pub dims: Vec<affine::Interval>,
    /// Bounds of the range variables (`s0`, ...) the body uses.
    pub ranges: Vec<affine::Interval>,
    /// Bounds of the runtime variables (`rt0`, ...) the body binds.
    pub runtimes: Vec<affine::Interval>,
    /// Types of the scalar variables, indexed by [`VarId`].
    pub vars: Vec<ScalarType>,
    /// Local arrays (`l0`, ...), indexed by [`Value::LocalLoad`]'s and
    /// [`Stmt::LocalStore`]'s `local`.
    pub locals: Vec<Local>,
    /// The body, run once per block.
    pub body: Vec<Stmt>,
}

impl Kernel {
    /// Elements the kernel writes (its largest output).
    pub fn output_elements(&self) -> i64 {
        self.buffers
            .iter()
            .filter(|b| b.access != Access::In)
            .map(BufferParam::element_count)
            .max()
            .unwrap_or(0)
    }

    /// Bytes of the block-shared local arrays (a GPU's shared memory per block).
    pub fn block_local_bytes(&self) -> i64 {
        self.locals
            .iter()
            .filter(|l| l.space == MemorySpace::Block)
            .map(|l| l.len * l.ty.byte_width() as i64)
            .sum()
    }

    /// Whether the kernel runs independent output rows as vector lanes (it has local
    /// arrays named with [`ROW_LANES`], as the CPU emitter's `row_lanes` makes them): its
    /// loops over lanes exist to be vectorized, so a backend compiles it for speed even
    /// where it touches few elements.
    pub fn runs_rows_as_lanes(&self) -> bool {
        self.locals.iter().any(|l| l.name.ends_with(ROW_LANES))
    }

    /// The elements the kernel touches, a measure of its work: the largest buffer it reads
    /// or writes (a reduction writes few elements but reads many).
    pub fn touched_elements(&self) -> i64 {
        self.buffers
            .iter()
            .map(BufferParam::element_count)
            .max()
            .unwrap_or(0)
    }
}
