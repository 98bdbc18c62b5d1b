//! Hash-consed affine expressions with floor division, ceiling division, modulo, min and max.
//!
//! Every distinct expression exists once in a process-wide interner, so an [`Expr`] is a
//! pointer: copying, equality and hashing are O(1). Nodes are never freed; memory is bounded by
//! the number of distinct expressions a process builds, which for a compiler is small.
//!
//! Builders fold constants with checked arithmetic. When folding would overflow `i64`, the node
//! is kept unfolded and evaluation reports [`crate::EvalError::Overflow`]: values never wrap.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{LazyLock, Mutex, OnceLock};

use hashbrown::HashTable;

use rustc_hash::FxHasher;
use smallvec::SmallVec;

/// Which family a variable belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum VarKind {
    /// A dimension of the source tensor (`d0`, `d1`, ...).
    Dim,
    /// A range variable (symbol) standing for a whole range of indices (`s0`, `s1`, ...).
    Range,
    /// A runtime variable whose value is only known when the program runs (`rt0`, ...).
    Runtime,
}

impl VarKind {
    /// The prefix used in the text form: `d`, `s` or `rt`.
    pub fn prefix(self) -> &'static str {
        match self {
            VarKind::Dim => "d",
            VarKind::Range => "s",
            VarKind::Runtime => "rt",
        }
    }
}

/// A variable: its kind and its position among the variables of that kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Var {
    /// Dimension, range or runtime variable.
    pub kind: VarKind,
    /// Index among the variables of the same kind.
    pub index: u32,
}

impl Var {
    /// Dimension variable `d{index}`.
    pub fn dim(index: u32) -> Var {
        Var {
            kind: VarKind::Dim,
            index,
        }
    }
    /// Range variable `s{index}`.
    pub fn range(index: u32) -> Var {
        Var {
            kind: VarKind::Range,
            index,
        }
    }
    /// Runtime variable `rt{index}`.
    pub fn runtime(index: u32) -> Var {
        Var {
            kind: VarKind::Runtime,
            index,
        }
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.kind.prefix(), self.index)
    }
}

/// The shape of one expression node; children are themselves interned [`Expr`]s.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ExprKind {
    /// An integer constant.
    Const(i64),
    /// A variable.
    Var(Var),
    /// `a + b`.
    Add(Expr, Expr),
    /// `a * b`.
    Mul(Expr, Expr),
    /// `a floordiv b`: the quotient rounded toward negative infinity.
    FloorDiv(Expr, Expr),
    /// `a ceildiv b`: the quotient rounded toward positive infinity.
    CeilDiv(Expr, Expr),
    /// `a mod b`: `a - b * (a floordiv b)`, never negative for a positive `b`.
    Mod(Expr, Expr),
    /// `min(a, b)`.
    Min(Expr, Expr),
    /// `max(a, b)`.
    Max(Expr, Expr),
}

/// A bit set of variable indices: bit `i` for index `i`, the top bit standing for "that
/// index or higher". 32 bits keep a [`Node`] within one cache line.
type VarMask = u32;

/// The top bit of a [`VarMask`] (the "or higher" bit).
const MASK_TOP: u32 = VarMask::BITS - 1;

fn var_bit(index: u32) -> VarMask {
    1 << index.min(MASK_TOP)
}

/// An interned node with facts computed once at creation.
///
/// Exactly one cache line, aligned to one: the simplifier's time on a stream of different maps
/// goes largely to cache misses on nodes, and an unaligned 80-byte node often spanned two lines.
#[derive(Debug)]
#[repr(align(64))]
pub struct Node {
    kind: ExprKind,
    /// Structural hash: the same across runs, so hash maps keyed by `Expr` behave reproducibly.
    hash: u64,
    /// Number of nodes in the tree (saturating).
    size: u32,
    dims: VarMask,
    ranges: VarMask,
    runtimes: VarMask,
    /// The flattened linear form and whether this node is its canonical sum, computed on
    /// first use: the simplifier asks for the same node's form many times (as a sum, as a
    /// dividend, in recombination), and both depend only on the node. `None` inside when
    /// flattening overflows.
    linear: OnceLock<Option<Box<Flattened>>>,
}

// One line per node, also inside the arena's `Option` slots.
const _: () = assert!(std::mem::size_of::<Node>() == 64);
const _: () = assert!(std::mem::size_of::<Option<Node>>() == 64);

// The linear form a node caches is defined here, with the node: a `Linear` holds
// expressions and every node holds its `Linear`, so the two types name each other. What
// computes and uses the form is in `linear`.

/// A flattened sum of `(atom, coefficient)` terms plus a constant.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Linear {
    /// Terms with non-zero coefficients; after [`Linear::normalize`], sorted and distinct.
    pub terms: SmallVec<[(Expr, i64); 8]>,
    /// The constant summand.
    pub constant: i64,
}

/// A node's linear form, with whether the node is already the canonical sum of that form
/// (what [`Linear::to_expr`] would build): both are facts of the node, computed once.
#[derive(Debug)]
pub(crate) struct Flattened {
    /// The linear form of the node.
    pub(crate) form: Linear,
    /// `form.is_built_as(node)`.
    pub(crate) canonical: bool,
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.kind == other.kind
    }
}
impl Eq for Node {}
impl Hash for Node {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// An affine expression (with floordiv, ceildiv, mod, min, max). Cheap to copy; `==` is O(1).
#[derive(Clone, Copy)]
pub struct Expr(&'static Node);

impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}
impl Eq for Expr {}
impl Hash for Expr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

/// A power of two, so the shard index is a mask of the hash's high bits.
const SHARDS: usize = 32;

/// The process-wide interner, sharded so that threads building expressions rarely contend.
/// Each shard is a raw hash table keyed by the structural hash, so a lookup hashes once and
/// builds a node only when it is missing.
struct Interner {
    shards: Vec<Mutex<HashTable<&'static Node>>>,
}

static INTERNER: LazyLock<Interner> = LazyLock::new(|| Interner {
    shards: (0..SHARDS).map(|_| Mutex::new(HashTable::new())).collect(),
});

fn structural_hash(kind: &ExprKind) -> u64 {
    let mut h = FxHasher::default();
    match *kind {
        ExprKind::Const(c) => {
            0u8.hash(&mut h);
            c.hash(&mut h);
        }
        ExprKind::Var(v) => {
            1u8.hash(&mut h);
            v.hash(&mut h);
        }
        ExprKind::Add(a, b)
        | ExprKind::Mul(a, b)
        | ExprKind::FloorDiv(a, b)
        | ExprKind::CeilDiv(a, b)
        | ExprKind::Mod(a, b)
        | ExprKind::Min(a, b)
        | ExprKind::Max(a, b) => {
            (2 + kind_rank(kind)).hash(&mut h);
            a.0.hash.hash(&mut h);
            b.0.hash.hash(&mut h);
        }
    }
    h.finish()
}

/// Rank of a node kind in the canonical order (see [`Expr::canonical_cmp`]).
pub(crate) fn kind_rank(kind: &ExprKind) -> u8 {
    match kind {
        ExprKind::Var(_) => 0,
        ExprKind::Mul(..) => 1,
        ExprKind::FloorDiv(..) => 2,
        ExprKind::CeilDiv(..) => 3,
        ExprKind::Mod(..) => 4,
        ExprKind::Min(..) => 5,
        ExprKind::Max(..) => 6,
        ExprKind::Add(..) => 7,
        ExprKind::Const(_) => 8,
    }
}

/// Slots of the per-thread front cache of the interner (a power of two).
const FRONT_SLOTS: usize = 16384;

thread_local! {
    /// A direct-mapped cache of recently interned nodes, by hash: most nodes the simplifier
    /// builds already exist, and finding them here skips the shard's lock and probe.
    static FRONT: [std::cell::Cell<Option<&'static Node>>; FRONT_SLOTS] =
        const { [const { std::cell::Cell::new(None) }; FRONT_SLOTS] };
}

fn intern(kind: ExprKind) -> Expr {
    let hash = structural_hash(&kind);
    let slot = hash as usize & (FRONT_SLOTS - 1);
    let cached = FRONT.try_with(|front| front[slot].get()).ok().flatten();
    if let Some(node) = cached {
        if node.hash == hash && same_kind(&node.kind, &kind) {
            return Expr(node);
        }
    }
    let node = intern_shared(kind, hash);
    let _ = FRONT.try_with(|front| front[slot].set(Some(node.0)));
    node
}

/// `a == b`, inlined into the interner's probes (the derived comparison was an out-of-line
/// call on every lookup). Children compare by identity, as `Expr`'s `==` does.
#[inline(always)]
fn same_kind(a: &ExprKind, b: &ExprKind) -> bool {
    match (*a, *b) {
        (ExprKind::Const(x), ExprKind::Const(y)) => x == y,
        (ExprKind::Var(x), ExprKind::Var(y)) => x == y,
        (ExprKind::Add(a0, a1), ExprKind::Add(b0, b1))
        | (ExprKind::Mul(a0, a1), ExprKind::Mul(b0, b1))
        | (ExprKind::FloorDiv(a0, a1), ExprKind::FloorDiv(b0, b1))
        | (ExprKind::CeilDiv(a0, a1), ExprKind::CeilDiv(b0, b1))
        | (ExprKind::Mod(a0, a1), ExprKind::Mod(b0, b1))
        | (ExprKind::Min(a0, a1), ExprKind::Min(b0, b1))
        | (ExprKind::Max(a0, a1), ExprKind::Max(b0, b1)) => {
            std::ptr::eq(a0.0, b0.0) && std::ptr::eq(a1.0, b1.0)
        }
        _ => false,
    }
}

/// Finds or inserts `kind` in the process-wide interner.
fn intern_shared(kind: ExprKind, hash: u64) -> Expr {
    let shard = &INTERNER.shards[(hash >> 59) as usize & (SHARDS - 1)];
    // A poisoned shard only means another thread panicked while holding it; the table itself
    // is always consistent (insertion is the only mutation), so keep using it.
    let mut table = shard.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(node) = table.find(hash, |n| same_kind(&n.kind, &kind)) {
        return Expr(node);
    }
    let node = alloc_node(new_node(kind, hash));
    table.insert_unique(hash, node, |n| n.hash);
    Expr(node)
}

/// Nodes allocated per chunk: nodes live for the whole process, so they are carved from
/// leaked chunks instead of one heap allocation each (malloc was a tenth of the
/// simplifier's time on maps that create new nodes).
const NODE_CHUNK: usize = 256;

thread_local! {
    static NODE_ARENA: std::cell::RefCell<&'static mut [Option<Node>]> =
        const { std::cell::RefCell::new(&mut []) };
}

/// Moves `node` to storage that lives for the rest of the process.
fn alloc_node(node: Node) -> &'static Node {
    let mut node = Some(node);
    NODE_ARENA
        .try_with(|arena| {
            let node = node.take().expect("taken once");
            let mut arena = arena.borrow_mut();
            if arena.is_empty() {
                let chunk: Vec<Option<Node>> = (0..NODE_CHUNK).map(|_| None).collect();
                *arena = Box::leak(chunk.into_boxed_slice());
            }
            let (slot, rest) = std::mem::take(&mut *arena)
                .split_first_mut()
                .expect("a refilled chunk is not empty");
            *arena = rest;
            &*slot.insert(node)
        })
        // During thread teardown the arena is gone: fall back to one allocation.
        .unwrap_or_else(|_| Box::leak(Box::new(node.take().expect("not taken"))))
}

/// A node with its facts (size, variable masks) computed from its children.
fn new_node(kind: ExprKind, hash: u64) -> Node {
    let (size, dims, ranges, runtimes) = match kind {
        ExprKind::Const(_) => (1, 0, 0, 0),
        ExprKind::Var(v) => match v.kind {
            VarKind::Dim => (1, var_bit(v.index), 0, 0),
            VarKind::Range => (1, 0, var_bit(v.index), 0),
            VarKind::Runtime => (1, 0, 0, var_bit(v.index)),
        },
        ExprKind::Add(a, b)
        | ExprKind::Mul(a, b)
        | ExprKind::FloorDiv(a, b)
        | ExprKind::CeilDiv(a, b)
        | ExprKind::Mod(a, b)
        | ExprKind::Min(a, b)
        | ExprKind::Max(a, b) => (
            a.0.size.saturating_add(b.0.size).saturating_add(1),
            a.0.dims | b.0.dims,
            a.0.ranges | b.0.ranges,
            a.0.runtimes | b.0.runtimes,
        ),
    };
    Node {
        kind,
        hash,
        size,
        dims,
        ranges,
        runtimes,
        linear: OnceLock::new(),
    }
}

// Inherent `add`/`mul`/`neg`/`sub` are the folding builders; the operator traits in ops.rs
// call them, so both spellings build the same node without a trait import.
#[allow(clippy::should_implement_trait)]
impl Expr {
    /// The integer constant `c`.
    pub fn constant(c: i64) -> Expr {
        intern(ExprKind::Const(c))
    }
    /// The variable `v`.
    pub fn var(v: Var) -> Expr {
        intern(ExprKind::Var(v))
    }
    /// Dimension variable `d{i}`.
    pub fn dim(i: u32) -> Expr {
        Expr::var(Var::dim(i))
    }
    /// Range variable `s{i}`.
    pub fn range(i: u32) -> Expr {
        Expr::var(Var::range(i))
    }
    /// Runtime variable `rt{i}`.
    pub fn runtime(i: u32) -> Expr {
        Expr::var(Var::runtime(i))
    }
    /// Builds a node exactly as given, with no folding at all.
    pub fn raw(kind: ExprKind) -> Expr {
        intern(kind)
    }

    /// The node's kind (its operator and children).
    pub fn kind(self) -> ExprKind {
        self.0.kind
    }
    /// The constant value, if this is a constant.
    pub fn as_const(self) -> Option<i64> {
        match self.0.kind {
            ExprKind::Const(c) => Some(c),
            _ => None,
        }
    }
    /// The variable, if this is a bare variable.
    pub fn as_var(self) -> Option<Var> {
        match self.0.kind {
            ExprKind::Var(v) => Some(v),
            _ => None,
        }
    }
    /// Number of nodes in the tree (saturating at `u32::MAX`).
    pub fn size(self) -> u32 {
        self.0.size
    }
    /// The node's cache of its linear form (filled by `Expr::flattened` in `linear`).
    pub(crate) fn linear_cell(self) -> &'static OnceLock<Option<Box<Flattened>>> {
        &self.0.linear
    }
    /// The structural hash (stable across runs).
    pub fn structural_hash(self) -> u64 {
        self.0.hash
    }
    /// True if the expression contains no variable.
    pub fn is_constant_expr(self) -> bool {
        self.0.dims | self.0.ranges | self.0.runtimes == 0
    }
    /// Whether variable `v` may occur (exact for indices below 31, conservative above).
    pub fn may_use(self, v: Var) -> bool {
        let mask = match v.kind {
            VarKind::Dim => self.0.dims,
            VarKind::Range => self.0.ranges,
            VarKind::Runtime => self.0.runtimes,
        };
        mask & var_bit(v.index) != 0
    }
    /// Whether every variable that may occur in `self` may occur in `other` (a cheap
    /// necessary condition for `self`'s variables to be among `other`'s).
    pub(crate) fn vars_may_be_within(self, other: Expr) -> bool {
        (self.0.dims & !other.0.dims)
            | (self.0.ranges & !other.0.ranges)
            | (self.0.runtimes & !other.0.runtimes)
            == 0
    }
    /// Whether any variable of `kind` may occur.
    pub fn uses_kind(self, kind: VarKind) -> bool {
        match kind {
            VarKind::Dim => self.0.dims != 0,
            VarKind::Range => self.0.ranges != 0,
            VarKind::Runtime => self.0.runtimes != 0,
        }
    }
    /// The two children of a binary node.
    pub fn children(self) -> Option<(Expr, Expr)> {
        match self.0.kind {
            ExprKind::Const(_) | ExprKind::Var(_) => None,
            ExprKind::Add(a, b)
            | ExprKind::Mul(a, b)
            | ExprKind::FloorDiv(a, b)
            | ExprKind::CeilDiv(a, b)
            | ExprKind::Mod(a, b)
            | ExprKind::Min(a, b)
            | ExprKind::Max(a, b) => Some((a, b)),
        }
    }

    /// `self + rhs`, folding constants and `x + 0`.
    pub fn add(self, rhs: Expr) -> Expr {
        match (self.as_const(), rhs.as_const()) {
            (Some(a), Some(b)) => match a.checked_add(b) {
                Some(c) => Expr::constant(c),
                None => intern(ExprKind::Add(self, rhs)),
            },
            (Some(0), _) => rhs,
            (_, Some(0)) => self,
            _ => intern(ExprKind::Add(self, rhs)),
        }
    }
    /// `self * rhs`, folding constants, `x * 1` and `x * 0`; a constant factor goes right.
    pub fn mul(self, rhs: Expr) -> Expr {
        match (self.as_const(), rhs.as_const()) {
            (Some(a), Some(b)) => match a.checked_mul(b) {
                Some(c) => Expr::constant(c),
                None => intern(ExprKind::Mul(self, rhs)),
            },
            (Some(0), _) | (_, Some(0)) => Expr::constant(0),
            (Some(1), _) => rhs,
            (_, Some(1)) => self,
            (Some(_), None) => rhs.mul(self),
            (None, Some(c2)) => match self.kind() {
                // `(x * c1) * c2` is `x * (c1 * c2)`: one constant factor per product.
                ExprKind::Mul(x, k) => match k.as_const().and_then(|c1| c1.checked_mul(c2)) {
                    Some(c) => x.mul(Expr::constant(c)),
                    None => intern(ExprKind::Mul(self, rhs)),
                },
                _ => intern(ExprKind::Mul(self, rhs)),
            },
            _ => intern(ExprKind::Mul(self, rhs)),
        }
    }
    /// `-self`, as `self * -1`.
    pub fn neg(self) -> Expr {
        self.mul(Expr::constant(-1))
    }
    /// `self - rhs`, as `self + rhs * -1`.
    pub fn sub(self, rhs: Expr) -> Expr {
        self.add(rhs.neg())
    }
    /// A division-like node: constants fold through `op` (an overflow or a zero divisor
    /// keeps the node), and a divisor of 1 gives `by_one`.
    fn division(
        self,
        rhs: Expr,
        op: fn(i64, i64) -> Option<i64>,
        node: fn(Expr, Expr) -> ExprKind,
        by_one: Expr,
    ) -> Expr {
        match (self.as_const(), rhs.as_const()) {
            (Some(a), Some(b)) => op(a, b).map_or_else(|| intern(node(self, rhs)), Expr::constant),
            (_, Some(1)) => by_one,
            _ => intern(node(self, rhs)),
        }
    }
    /// `self floordiv rhs`, folding constants and `x floordiv 1`.
    pub fn floor_div(self, rhs: Expr) -> Expr {
        self.division(rhs, crate::arith::floor_div, ExprKind::FloorDiv, self)
    }
    /// `self ceildiv rhs`, folding constants and `x ceildiv 1`.
    pub fn ceil_div(self, rhs: Expr) -> Expr {
        self.division(rhs, crate::arith::ceil_div, ExprKind::CeilDiv, self)
    }
    /// `self mod rhs`, folding constants, `x mod 1` and `x mod -1`.
    pub fn modulo(self, rhs: Expr) -> Expr {
        if rhs.as_const() == Some(-1) {
            return Expr::constant(0);
        }
        self.division(
            rhs,
            crate::arith::floor_mod,
            ExprKind::Mod,
            Expr::constant(0),
        )
    }
    /// `min(self, rhs)`, folding constants and `min(x, x)`.
    pub fn min(self, rhs: Expr) -> Expr {
        match (self.as_const(), rhs.as_const()) {
            (Some(a), Some(b)) => Expr::constant(a.min(b)),
            _ if self == rhs => self,
            _ => intern(ExprKind::Min(self, rhs)),
        }
    }
    /// `max(self, rhs)`, folding constants and `max(x, x)`.
    pub fn max(self, rhs: Expr) -> Expr {
        match (self.as_const(), rhs.as_const()) {
            (Some(a), Some(b)) => Expr::constant(a.max(b)),
            _ if self == rhs => self,
            _ => intern(ExprKind::Max(self, rhs)),
        }
    }

    /// Rebuilds this node with new children, through the folding builders.
    pub fn with_children(self, a: Expr, b: Expr) -> Expr {
        match self.0.kind {
            ExprKind::Const(_) | ExprKind::Var(_) => self,
            ExprKind::Add(..) => a.add(b),
            ExprKind::Mul(..) => a.mul(b),
            ExprKind::FloorDiv(..) => a.floor_div(b),
            ExprKind::CeilDiv(..) => a.ceil_div(b),
            ExprKind::Mod(..) => a.modulo(b),
            ExprKind::Min(..) => a.min(b),
            ExprKind::Max(..) => a.max(b),
        }
    }

    /// Replaces every variable by `f(var)` (bottom-up, through the folding builders).
    pub fn substitute(self, f: &mut dyn FnMut(Var) -> Option<Expr>) -> Expr {
        match self.0.kind {
            ExprKind::Const(_) => self,
            ExprKind::Var(v) => f(v).unwrap_or(self),
            _ => {
                let (a, b) = self.children().expect("binary node");
                let (na, nb) = (a.substitute(f), b.substitute(f));
                if na == a && nb == b {
                    self
                } else {
                    self.with_children(na, nb)
                }
            }
        }
    }

    /// Every variable occurring in the expression, in canonical order, without repeats.
    pub fn variables(self) -> Vec<Var> {
        let masks = [
            (VarKind::Dim, self.0.dims),
            (VarKind::Range, self.0.ranges),
            (VarKind::Runtime, self.0.runtimes),
        ];
        if masks.iter().all(|(_, m)| m & var_bit(MASK_TOP) == 0) {
            // Exact from the masks: no traversal of (possibly heavily shared) subtrees.
            let mut out = Vec::new();
            for (kind, mask) in masks {
                let mut m = mask;
                while m != 0 {
                    let index = m.trailing_zeros();
                    out.push(Var { kind, index });
                    m &= m - 1;
                }
            }
            return out;
        }
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out.sort();
        out.dedup();
        out
    }
    fn collect_vars(self, out: &mut Vec<Var>) {
        match self.0.kind {
            ExprKind::Const(_) => {}
            ExprKind::Var(v) => out.push(v),
            _ => {
                let (a, b) = self.children().expect("binary node");
                a.collect_vars(out);
                b.collect_vars(out);
            }
        }
    }

    /// A total order on expressions that depends only on structure (never on addresses), used
    /// to order summands and constraints canonically: variables first (dims, then range, then
    /// runtime, by index), then products, floordiv, ceildiv, mod, min, max, sums, constants.
    pub fn canonical_cmp(self, other: Expr) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        if self == other {
            return Ordering::Equal;
        }
        let (ka, kb) = (self.0.kind, other.0.kind);
        let rank = kind_rank(&ka).cmp(&kind_rank(&kb));
        if rank != Ordering::Equal {
            return rank;
        }
        match (ka, kb) {
            (ExprKind::Const(a), ExprKind::Const(b)) => a.cmp(&b),
            (ExprKind::Var(a), ExprKind::Var(b)) => a.cmp(&b),
            _ => {
                let (a0, a1) = self.children().expect("binary node");
                let (b0, b1) = other.children().expect("binary node");
                a0.canonical_cmp(b0).then_with(|| a1.canonical_cmp(b1))
            }
        }
    }
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl PartialOrd for Expr {
    fn partial_cmp(&self, other: &Expr) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Expr {
    /// The canonical structural order ([`Expr::canonical_cmp`]).
    fn cmp(&self, other: &Expr) -> std::cmp::Ordering {
        self.canonical_cmp(*other)
    }
}
