//! Statements about expressions over unbounded integer variables: the form in which rewrite
//! rules are stated (and proven by z3 or checked by enumeration), and in which "these two
//! maps agree on this domain" is asked.

use std::fmt;

use crate::{Expr, IndexingMap, Point, VarKind};

/// A comparison operator.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// The operator's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
    /// Applies the comparison to two values.
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

/// `lhs cmp rhs`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Relation {
    /// Left side.
    pub lhs: Expr,
    /// Operator.
    pub cmp: Cmp,
    /// Right side.
    pub rhs: Expr,
}

impl Relation {
    /// Builds `lhs cmp rhs`.
    pub fn new(lhs: Expr, cmp: Cmp, rhs: Expr) -> Relation {
        Relation { lhs, cmp, rhs }
    }
    /// Evaluates the relation at a point: `None` if either side cannot be evaluated there
    /// (overflow, division by zero), which callers treat as "the point is not in scope".
    pub fn holds_at(&self, p: &Point<'_>) -> Option<bool> {
        Some(
            self.cmp
                .holds(self.lhs.eval(p).ok()?, self.rhs.eval(p).ok()?),
        )
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.lhs, self.cmp.as_str(), self.rhs)
    }
}

/// What a statement claims under its assumptions.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Goal {
    /// The two expressions have the same value.
    Equal(Expr, Expr),
    /// The two conjunctions are both true or both false.
    Equivalent(Vec<Relation>, Vec<Relation>),
}

/// `for all integer values of the variables: assumptions => goal`.
///
/// Variables are the expressions' variables, unbounded integers (their kind and index only
/// name them). Every division, ceildiv and mod in a statement must have a divisor that the
/// assumptions make non-zero.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Statement {
    /// Hypotheses.
    pub assumptions: Vec<Relation>,
    /// Claim.
    pub goal: Goal,
}

impl Statement {
    /// Checks the statement at one point: `Some(false)` if the assumptions hold and the goal
    /// fails (a counterexample), `Some(true)` if it holds or the assumptions fail, `None` if
    /// some side cannot be evaluated.
    pub fn check_at(&self, p: &Point<'_>) -> Option<bool> {
        for a in &self.assumptions {
            if !a.holds_at(p)? {
                return Some(true);
            }
        }
        match &self.goal {
            Goal::Equal(a, b) => Some(a.eval(p).ok()? == b.eval(p).ok()?),
            Goal::Equivalent(x, y) => {
                let all = |rs: &[Relation]| -> Option<bool> {
                    let mut ok = true;
                    for r in rs {
                        ok &= r.holds_at(p)?;
                    }
                    Some(ok)
                };
                Some(all(x)? == all(y)?)
            }
        }
    }

    /// The largest variable index of each kind used, plus one: the point arity needed.
    pub fn arity(&self) -> [usize; 3] {
        let mut n = [0usize; 3];
        let mut see = |e: Expr| {
            for v in e.variables() {
                let k = match v.kind {
                    VarKind::Dim => 0,
                    VarKind::Range => 1,
                    VarKind::Runtime => 2,
                };
                n[k] = n[k].max(v.index as usize + 1);
            }
        };
        for r in &self.assumptions {
            see(r.lhs);
            see(r.rhs);
        }
        match &self.goal {
            Goal::Equal(a, b) => {
                see(*a);
                see(*b);
            }
            Goal::Equivalent(x, y) => {
                for r in x.iter().chain(y) {
                    see(r.lhs);
                    see(r.rhs);
                }
            }
        }
        n
    }
}

/// The domain of a map as assumptions: every variable within its bounds, every constraint.
pub fn domain_assumptions(map: &IndexingMap) -> Vec<Relation> {
    let mut out = Vec::new();
    for kind in [VarKind::Dim, VarKind::Range, VarKind::Runtime] {
        for (i, b) in map.vars_of(kind).iter().enumerate() {
            let v = Expr::var(crate::Var {
                kind,
                index: i as u32,
            });
            out.push(Relation::new(v, Cmp::Ge, Expr::constant(b.lo)));
            out.push(Relation::new(v, Cmp::Le, Expr::constant(b.hi)));
        }
    }
    for c in map.constraints() {
        out.push(Relation::new(
            c.expr,
            Cmp::Ge,
            Expr::constant(c.interval.lo),
        ));
        out.push(Relation::new(
            c.expr,
            Cmp::Le,
            Expr::constant(c.interval.hi),
        ));
    }
    out
}
