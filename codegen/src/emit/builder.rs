//! The kernel builder's state: buffer parameters, variables and their bounds, leaves
//! (values that come from buffers or are given), the memo of computed values, and the
//! indexing-map notes that become the loop nest's comments.

use std::collections::{BTreeSet, HashMap};

use affine::{Expr, IndexingMap, Interval, Var};
use hlo::{CompId, InstrId, Module};

use crate::error::CodegenError;
use crate::kir::{Access, BufferParam, ScalarType, Value, VarId};

/// Where a kernel's buffer parameter comes from, for the thunk builder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferSource {
    /// Operand `i` of the instruction the kernel implements.
    Operand(usize),
    /// Output `k` of the instruction (element `k` of a tuple result).
    Output(usize),
    /// A constant instruction inside a called computation.
    Constant(CompId, InstrId),
}

/// How a leaf value is obtained.
#[derive(Clone, Debug)]
pub(crate) enum Leaf {
    /// Read from a buffer parameter.
    Buffer(usize),
    /// A given scalar value (a reducer's parameter).
    Value(Value),
}

/// Key of a computed value: the instruction and the index it is evaluated at.
pub(crate) type MemoKey = (CompId, InstrId, Vec<Expr>);

/// The state of one kernel under construction.
pub(crate) struct Builder<'m> {
    pub module: &'m Module,
    /// What the kernel is generated for.
    pub target: &'m crate::EmitTarget,
    /// The instruction the kernel implements (for messages).
    pub instr_name: String,
    pub dims: Vec<Interval>,
    pub ranges: Vec<Interval>,
    pub runtimes: Vec<Interval>,
    pub vars: Vec<ScalarType>,
    pub locals: Vec<crate::kir::Local>,
    pub buffers: Vec<BufferParam>,
    pub sources: Vec<BufferSource>,
    pub leaves: HashMap<(CompId, InstrId), Leaf>,
    /// Frames of memoized values; a frame per open statement block.
    pub memo: Vec<HashMap<MemoKey, Vec<Value>>>,
    /// The composed map of every buffer access, as text (`bN <- map`), deterministic.
    pub notes: BTreeSet<String>,
    /// Guards of the conditional branches being built (for the notes).
    pub guards: Vec<crate::kir::Guard>,
    /// Loops of the output nest whose iterations are independent (each computes and
    /// stores its own outputs), set by the elementwise emitter: `row_lanes` may run
    /// their bodies as lanes.
    pub row_loops: Vec<Var>,
}

/// The largest divisor of `extent` between `want / 2` and `want` (a tile size that leaves
/// no remainder tile), else `want`.
pub(super) fn near_divisor(extent: i64, want: i64) -> i64 {
    (want / 2..=want)
        .rev()
        .find(|t| *t > 0 && extent % t == 0)
        .unwrap_or(want)
}

impl<'m> Builder<'m> {
    /// Runs `f` in a memo frame of its own: values it computes are not reused after it
    /// (they are bound inside a statement block that ends with it).
    pub fn in_memo_frame<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.memo.push(Default::default());
        let r = f(self);
        self.memo.pop();
        r
    }

    /// Scalar computation `f` (a comparator, a combiner, select-and-scatter's select or
    /// scatter) applied to `args`, its parameters in order, inlined into `body` in a memo
    /// frame of its own. Each parameter must be a scalar of its argument's type; `op` and
    /// `what` (`"comparator"`, `"update computation"`) name the caller in an `Unsupported`
    /// error. The caller checks the result's type.
    pub fn inline_scalar_call(
        &mut self,
        f: CompId,
        args: Vec<Value>,
        op: &str,
        what: &str,
        body: &mut Vec<crate::kir::Stmt>,
    ) -> Result<Value, CodegenError> {
        let fc = self.module.computation(f);
        if fc.parameters().len() != args.len() {
            return Err(self.unsupported(op, format!("{what} of another arity")));
        }
        let mut params = Vec::with_capacity(args.len());
        for (p, v) in args.into_iter().enumerate() {
            let pid = fc
                .parameter(p)
                .ok_or_else(|| self.unsupported(op, format!("{what} without its parameters")))?;
            let s = fc.instr(pid).shape();
            if !s.dims().is_empty()
                || s.element_type().and_then(ScalarType::from_element) != Some(v.ty())
            {
                return Err(self.unsupported(
                    op,
                    format!("{what} whose parameters are not the operands' scalars"),
                ));
            }
            params.push(pid);
            self.leaves.insert((f, pid), Leaf::Value(v));
        }
        let r = self.in_memo_frame(|b| b.value(f, fc.root(), &[], false, body));
        for pid in params {
            self.leaves.remove(&(f, pid));
        }
        r
    }

    pub fn new(module: &'m Module, target: &'m crate::EmitTarget, instr_name: &str) -> Self {
        Builder {
            module,
            target,
            instr_name: instr_name.to_string(),
            dims: Vec::new(),
            ranges: Vec::new(),
            runtimes: Vec::new(),
            vars: Vec::new(),
            locals: Vec::new(),
            buffers: Vec::new(),
            sources: Vec::new(),
            leaves: HashMap::new(),
            memo: vec![HashMap::new()],
            notes: BTreeSet::new(),
            guards: Vec::new(),
            row_loops: Vec::new(),
        }
    }

    pub fn unsupported(&self, op: impl Into<String>, reason: impl Into<String>) -> CodegenError {
        CodegenError::unsupported(op, self.instr_name.clone(), reason)
    }

    /// A new scalar variable of type `ty`.
    pub fn new_var(&mut self, ty: ScalarType) -> VarId {
        self.vars.push(ty);
        VarId(self.vars.len() as u32 - 1)
    }

    /// A new local array of `len` elements of type `ty`.
    pub fn new_local(&mut self, name: String, ty: ScalarType, len: i64) -> usize {
        self.locals.push(crate::kir::Local {
            name,
            space: crate::kir::MemorySpace::Private,
            ty,
            len,
        });
        self.locals.len() - 1
    }

    /// A new range (loop) variable with bounds `iv`.
    pub fn new_range(&mut self, iv: Interval) -> Var {
        self.ranges.push(iv);
        Var::range(self.ranges.len() as u32 - 1)
    }

    /// A new runtime variable with bounds `iv`.
    pub fn new_runtime(&mut self, iv: Interval) -> Var {
        self.runtimes.push(iv);
        Var::runtime(self.runtimes.len() as u32 - 1)
    }

    /// Adds a buffer parameter for an array shape.
    pub fn add_buffer(
        &mut self,
        name: &str,
        shape: &hlo::Shape,
        access: Access,
        source: BufferSource,
    ) -> Result<usize, CodegenError> {
        let arr = shape
            .as_array()
            .ok_or_else(|| self.unsupported("tuple", format!("buffer `{name}` is not an array")))?;
        let ty = ScalarType::from_element(arr.element_type()).ok_or_else(|| {
            self.unsupported(
                arr.element_type().as_str(),
                format!("element type {} in kernels", arr.element_type().as_str()),
            )
        })?;
        let rank = arr.dims().len();
        let minor_to_major = arr
            .layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_else(|| (0..rank as i64).rev().collect());
        if minor_to_major.len() != rank {
            return Err(self.unsupported(
                "layout",
                format!("layout of `{name}` does not match its rank"),
            ));
        }
        self.buffers.push(BufferParam {
            name: name.to_string(),
            ty,
            dims: arr.dims().to_vec(),
            minor_to_major,
            access,
        });
        self.sources.push(source);
        Ok(self.buffers.len() - 1)
    }

    /// An empty map over the kernel's variables, constrained by the guards of the
    /// branches being built (to ask for ranges).
    fn context_map(&self) -> Result<IndexingMap, CodegenError> {
        IndexingMap::new(
            self.dims.clone(),
            self.ranges.clone(),
            self.runtimes.clone(),
            vec![],
            self.guards
                .iter()
                .flat_map(|g| g.conds.iter())
                .map(|(e, lo, hi)| (*e, Interval::new(*lo, *hi)))
                .collect(),
        )
        .map_err(|e| CodegenError::Internal(format!("kernel variables: {e}")))
    }

    /// The range of `e` over the kernel variables' bounds (and the guards being built).
    pub fn range_of(&self, e: Expr) -> Result<Interval, CodegenError> {
        if self.guards.iter().all(|g| g.conds.is_empty()) {
            // No constraint: the bounds alone, without building the context map.
            let (d, r, rt) = (&self.dims, &self.ranges, &self.runtimes);
            return Ok(affine::simplify::range_of_expr(e, d, r, rt));
        }
        Ok(self.context_map()?.range_of(e))
    }

    /// `e` simplified over the kernel variables' bounds.
    pub fn simplify(&self, e: Expr) -> Expr {
        affine::simplify::simplify_expr(e, &self.dims, &self.ranges, &self.runtimes)
    }

    /// The element offset of `index` in buffer `buf` (physical order), simplified.
    pub fn offset(&self, buf: usize, index: &[Expr]) -> Expr {
        let strides = self.buffers[buf].strides();
        let mut e = Expr::constant(0);
        for (i, s) in index.iter().zip(strides) {
            e = e + *i * Expr::constant(s);
        }
        self.simplify(e)
    }

    /// Records the map from the kernel's variables to an access of buffer `buf`.
    pub fn note(&mut self, buf: usize, index: &[Expr], guard: &crate::kir::Guard) {
        let map = IndexingMap::new(
            self.dims.clone(),
            self.ranges.clone(),
            self.runtimes.clone(),
            index.to_vec(),
            guard
                .conds
                .iter()
                .map(|(e, lo, hi)| (*e, Interval::new(*lo, *hi)))
                .collect(),
        );
        if let Ok(map) = map {
            self.notes
                .insert(format!("b{buf} {} <- {map}", self.buffers[buf].name));
        }
    }

    /// Looks a value up in the open memo frames.
    pub fn memo_get(&self, key: &MemoKey) -> Option<Vec<Value>> {
        self.memo.iter().rev().find_map(|f| f.get(key).cloned())
    }

    /// Remembers a value in the innermost frame.
    pub fn memo_put(&mut self, key: MemoKey, v: Vec<Value>) {
        if let Some(f) = self.memo.last_mut() {
            f.insert(key, v);
        }
    }
}
