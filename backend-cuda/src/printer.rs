//! Kernels as CUDA C: `extern "C" __global__` functions of one block, the block index from
//! `blockIdx.x`, loops over the block's threads strided by `blockDim.x`, block-shared locals
//! in `__shared__` memory, barriers as `__syncthreads()` and warp shuffles as
//! `__shfl_*_sync` on 32-bit words, atomic updates as `atomicAdd`/`atomicMin`/`atomicMax`
//! or an `atomicCAS` loop, index arithmetic in 32 bits where the kernel's ranges prove it
//! exact ([`crate::index32`], which also prints the elements of buffers and shared arrays).
//! Everything else (values, control flow) is the C printer's.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use affine::{Expr, Var};
use backend_cpu::c::{c_type, stmts_c, CDialect, MathStyle};
use codegen::kir::{Access, BinOp, Kernel, LoopKind, MemorySpace, ScalarType, ShuffleKind, Stmt};

use crate::error::CudaError;
use crate::index32::IndexWidths;
use crate::prelude::cuda_prelude;
use crate::unroll::rolled_loops;

/// What CUDA C prints differently from the CPU's C, for one kernel (whose ranges decide
/// the width of its index arithmetic).
pub struct CudaDialect {
    widths: IndexWidths,
    /// Serial loops printed rolled ([`crate::unroll`]).
    rolled: HashSet<String>,
}

impl CudaDialect {
    /// The dialect of kernel `k`.
    pub fn for_kernel(k: &Kernel) -> CudaDialect {
        CudaDialect {
            widths: IndexWidths::of(k),
            rolled: rolled_loops(k),
        }
    }

    /// The C type of index variable `name`.
    fn index_type(&self, name: &str) -> &'static str {
        if self.widths.is_narrow_named(name) {
            "int32_t"
        } else {
            "int64_t"
        }
    }
}

impl CDialect for CudaDialect {
    fn math(&self, _k: &Kernel) -> MathStyle {
        MathStyle::Device
    }

    fn loop_head(&self, kind: LoopKind, var: &str, lo: i64, hi: i64) -> String {
        let t = self.index_type(var);
        match kind {
            // A thread loop over a 32-bit variable counts a 64-bit one that the body
            // narrows ([`CDialect::loop_prologue`]): a 32-bit loop's trip count and
            // induction variables are visible to NVRTC, which then unrolls it by 4 and keeps
            // every address as a pointer that the loop carries (`slicing`'s copy: 12 -> 38
            // registers) for a loop that runs once or twice per thread.
            LoopKind::Threads if t == "int32_t" => format!(
                "for (int64_t {var}_w = {lo} + (int64_t)threadIdx.x; {var}_w <= {hi}; \
                 {var}_w += (int64_t)blockDim.x)"
            ),
            LoopKind::Threads => format!(
                "for (int64_t {var} = {lo} + (int64_t)threadIdx.x; {var} <= {hi}; \
                 {var} += (int64_t)blockDim.x)"
            ),
            LoopKind::Serial | LoopKind::Vectorized => {
                let rolled = if self.rolled.contains(var) {
                    "HLOC_ROLLED "
                } else {
                    ""
                };
                format!("{rolled}for ({t} {var} = {lo}; {var} <= {hi}; ++{var})")
            }
        }
    }

    fn loop_prologue(&self, kind: LoopKind, var: &str) -> Option<String> {
        (kind == LoopKind::Threads && self.index_type(var) == "int32_t")
            .then(|| format!("const int32_t {var} = (int32_t){var}_w;"))
    }

    fn index(&self, e: Expr) -> String {
        self.widths.expr(e)
    }

    fn element(&self, buf: usize, e: Expr) -> String {
        self.widths.element(buf, e)
    }

    fn local_element(&self, local: usize, e: Expr) -> String {
        self.widths.local_element(local, e)
    }

    fn index_value(&self, e: Expr) -> String {
        self.widths.value(e)
    }

    fn bind_index(&self, var: Var, value: &str) -> String {
        let t = if self.widths.is_narrow(var) {
            "int32_t"
        } else {
            "int64_t"
        };
        format!("const {t} {var} = ({t})({value});")
    }

    fn barrier(&self) -> &'static str {
        "__syncthreads();"
    }

    fn shuffle(
        &self,
        t: ScalarType,
        kind: ShuffleKind,
        value: &str,
        offset: i64,
        width: i64,
    ) -> Option<String> {
        Some(format!(
            "hloc_shfl<{}, {}>({value}, {offset}u, {width})",
            kind == ShuffleKind::Xor,
            c_type(t)
        ))
    }

    /// CUDA's one-instruction atomics: `atomicAdd` on 32- and 64-bit integers (wrapping,
    /// as HLO's add), `f32` and `f64` (rounding to nearest, as XLA:GPU's scatter does),
    /// `atomicMin`/`atomicMax` on 32- and 64-bit integers. Float min/max (NaN-propagating,
    /// +0 above -0: not the integer order of the bits) and narrower types take the
    /// compare-and-swap loop.
    fn atomic_binary(&self, t: ScalarType, op: BinOp, addr: &str, x: &str) -> Option<String> {
        use ScalarType as T;
        let (f, cast) = match (op, t) {
            (BinOp::Add, T::S32) => ("atomicAdd", "int"),
            (BinOp::Add, T::U32) => ("atomicAdd", "unsigned int"),
            (BinOp::Add, T::S64 | T::U64) => ("atomicAdd", "unsigned long long"),
            (BinOp::Add, T::F32) => ("atomicAdd", "float"),
            (BinOp::Add, T::F64) => ("atomicAdd", "double"),
            (BinOp::Min, T::S32) => ("atomicMin", "int"),
            (BinOp::Min, T::U32) => ("atomicMin", "unsigned int"),
            (BinOp::Min, T::S64) => ("atomicMin", "long long"),
            (BinOp::Min, T::U64) => ("atomicMin", "unsigned long long"),
            (BinOp::Max, T::S32) => ("atomicMax", "int"),
            (BinOp::Max, T::U32) => ("atomicMax", "unsigned int"),
            (BinOp::Max, T::S64) => ("atomicMax", "long long"),
            (BinOp::Max, T::U64) => ("atomicMax", "unsigned long long"),
            _ => return None,
        };
        Some(format!("(void){f}(({cast} *)({addr}), ({cast})({x}))"))
    }

    fn atomic_load(&self, word: &str, ptr: &str) -> String {
        format!("hloc_atomic_load_{}({ptr})", word_suffix(word))
    }

    fn atomic_cas(&self, word: &str, ptr: &str, expected: &str, desired: &str) -> String {
        format!(
            "hloc_atomic_cas_{}({ptr}, {expected}, {desired})",
            word_suffix(word)
        )
    }
}

/// `u32` or `u64`: the suffix of the prelude's atomic word helpers for a C word type.
fn word_suffix(word: &str) -> &'static str {
    if word == "uint64_t" {
        "u64"
    } else {
        "u32"
    }
}

/// Bytes of static `__shared__` arrays one block may declare: CUDA's limit on every
/// architecture (more needs dynamic shared memory and an opt-in the printer does not use).
pub const STATIC_SHARED_BYTES: i64 = 48 * 1024;

/// Checks what the printer cannot print yet: in blocks of several threads, stores outside
/// the loops over threads (every thread would store).
fn check_printable(k: &Kernel) -> Result<(), CudaError> {
    let unsupported = |what: String| CudaError::Unsupported {
        kernel: k.name.clone(),
        what,
    };
    fn block_level_store(k: &Kernel, body: &[Stmt]) -> bool {
        body.iter().any(|s| match s {
            Stmt::Store { .. } | Stmt::Atomic { .. } => true,
            Stmt::LocalStore { local, .. } => {
                k.locals.get(*local).map(|l| l.space) == Some(MemorySpace::Block)
            }
            Stmt::Loop {
                kind: LoopKind::Threads,
                ..
            } => false,
            Stmt::Loop { body, .. } => block_level_store(k, body),
            Stmt::If {
                body, else_body, ..
            } => block_level_store(k, body) || block_level_store(k, else_body),
            _ => false,
        })
    }
    if k.block_local_bytes() > STATIC_SHARED_BYTES {
        return Err(unsupported(format!(
            "{} bytes of shared memory per block, over CUDA's {STATIC_SHARED_BYTES} for \
             static __shared__ arrays",
            k.block_local_bytes()
        )));
    }
    if k.grid.threads > 1 && block_level_store(k, &k.body) {
        return Err(unsupported(
            "a store outside the loops over the block's threads".into(),
        ));
    }
    Ok(())
}

/// One kernel as a CUDA `__global__` function taking each buffer as a pointer parameter,
/// launched with `k.grid.blocks` blocks of `k.grid.threads` threads.
pub fn kernel_cu(k: &Kernel) -> Result<String, CudaError> {
    kernel_cu_bounded(k, None)
}

/// [`kernel_cu`], with `min_blocks` (blocks per multiprocessor) as the second argument of
/// `__launch_bounds__` when given ([`crate::bounds`] picks it for kernels that spill).
pub fn kernel_cu_bounded(k: &Kernel, min_blocks: Option<u32>) -> Result<String, CudaError> {
    check_printable(k)?;
    let mut out = String::new();
    // An in-place kernel's written pointers may name the same bytes, so they drop
    // `__restrict__`; its `in` pointers keep it (the plan makes every parameter holding an
    // overwritten operand `inout`), as the C printer does, and stay read-only-cache loads.
    let aliased = k.buffers.iter().any(|b| b.access == Access::InOut);
    let params: Vec<String> = k
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let cq = if b.access == Access::In { "const " } else { "" };
            let restrict = if aliased && b.access != Access::In {
                ""
            } else {
                "__restrict__ "
            };
            format!(
                "\n    {cq}{} *{restrict}b{i} /* {} {} */",
                c_type(b.ty),
                b.access.name(),
                b.name.replace("*/", "* /")
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "/* kernel {}: {} blocks of {} threads */",
        k.name, k.grid.blocks, k.grid.threads
    );
    let bounds = match min_blocks {
        Some(m) => format!("{}, {m}", k.grid.threads),
        None => k.grid.threads.to_string(),
    };
    let _ = writeln!(
        out,
        "extern \"C\" __global__ void __launch_bounds__({bounds}) {}({}) {{",
        k.name,
        params.join(",")
    );
    for (i, l) in k.locals.iter().enumerate() {
        let space = match l.space {
            MemorySpace::Block => "__shared__ __align__(16) ",
            MemorySpace::Private => "",
        };
        let _ = writeln!(
            out,
            "  {space}{} l{i}[{}]; // {} {}",
            c_type(l.ty),
            l.len,
            l.space.keyword(),
            l.name
        );
    }
    let dialect = CudaDialect::for_kernel(k);
    if let Some(v) = k.grid.block_var {
        let t = dialect.index_type(&v.to_string());
        let _ = writeln!(out, "  const {t} {v} = ({t})blockIdx.x;");
    }
    stmts_c(&mut out, k, &k.body, 1, &dialect);
    let _ = writeln!(out, "}}");
    Ok(out)
}

/// One self-contained CUDA module: the prelude, then every kernel.
pub fn module_cu(kernels: &[Kernel]) -> Result<String, CudaError> {
    module_cu_bounded(kernels, &HashMap::new())
}

/// [`module_cu`] with the kernels named in `min_blocks` printed by [`kernel_cu_bounded`].
pub fn module_cu_bounded(
    kernels: &[Kernel],
    min_blocks: &HashMap<String, u32>,
) -> Result<String, CudaError> {
    let mut out = cuda_prelude();
    for k in kernels {
        out.push('\n');
        out.push_str(&kernel_cu_bounded(k, min_blocks.get(&k.name).copied())?);
    }
    Ok(out)
}
