//! Turning a rule's textual statements ([`super::rules::Spec`]) into [`Statement`]s over
//! pattern variables, for proofs and sampling checks.

use crate::formula::{Cmp, Goal, Relation, Statement};
use crate::parse::{parse_expr, Names};
use crate::{Expr, Var};

use super::rules::{Claim, Spec};

const KEYWORDS: &[&str] = &["floordiv", "ceildiv", "mod", "min", "max"];

/// A statement with the names of its pattern variables.
#[derive(Clone, Debug)]
pub struct NamedStatement {
    /// The statement; pattern variable `i` (in order of first appearance) is `d{i}`.
    pub statement: Statement,
    /// Each pattern variable's name and variable.
    pub names: Vec<(String, Var)>,
    /// Variables to enumerate when a proof needs linear instances, with their ranges.
    pub instantiate: Vec<(Var, std::ops::RangeInclusive<i64>)>,
}

impl NamedStatement {
    /// The variable of a pattern name.
    pub fn var(&self, name: &str) -> Option<Var> {
        self.names.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

fn identifiers(text: &str, out: &mut Vec<String>) {
    let mut cur = String::new();
    for ch in text.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            cur.push(ch);
        } else {
            if cur.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && !KEYWORDS.contains(&cur.as_str())
                && !out.contains(&cur)
            {
                out.push(cur.clone());
            }
            cur.clear();
        }
    }
}

fn relation(text: &str, names: &Names) -> Result<Relation, String> {
    for (op, cmp) in [
        ("==", Cmp::Eq),
        ("!=", Cmp::Ne),
        ("<=", Cmp::Le),
        (">=", Cmp::Ge),
        ("<", Cmp::Lt),
        (">", Cmp::Gt),
    ] {
        if let Some(at) = text.find(op) {
            let lhs = expr(&text[..at], names)?;
            let rhs = expr(&text[at + op.len()..], names)?;
            return Ok(Relation::new(lhs, cmp, rhs));
        }
    }
    Err(format!("`{text}` has no comparison"))
}

fn expr(text: &str, names: &Names) -> Result<Expr, String> {
    parse_expr(text.trim(), names).map_err(|e| format!("`{}`: {e}", text.trim()))
}

impl Spec {
    /// Parses the statement. Errors name the offending text.
    pub fn statement(&self) -> Result<NamedStatement, String> {
        let mut idents = Vec::new();
        let texts: Vec<&str> = match self.claim {
            Claim::Rewrite(l, r) => vec![l, r],
            Claim::Equivalent(a, b) => a.iter().chain(b).copied().collect(),
        };
        for t in self.assume.iter().chain(&texts) {
            identifiers(t, &mut idents);
        }
        let mut names = Names::new();
        let mut named = Vec::new();
        for (i, n) in idents.iter().enumerate() {
            let v = Var::dim(i as u32);
            names.declare(n, v);
            named.push((n.clone(), v));
        }
        let assumptions = self
            .assume
            .iter()
            .map(|t| relation(t, &names))
            .collect::<Result<Vec<_>, _>>()?;
        let goal = match self.claim {
            Claim::Rewrite(l, r) => Goal::Equal(expr(l, &names)?, expr(r, &names)?),
            Claim::Equivalent(a, b) => Goal::Equivalent(
                a.iter()
                    .map(|t| relation(t, &names))
                    .collect::<Result<_, _>>()?,
                b.iter()
                    .map(|t| relation(t, &names))
                    .collect::<Result<_, _>>()?,
            ),
        };
        let mut instantiate = Vec::new();
        for &(n, lo, hi) in self.instantiate {
            let v = named
                .iter()
                .find(|(m, _)| m == n)
                .map(|(_, v)| *v)
                .ok_or_else(|| format!("instantiated variable `{n}` does not occur"))?;
            instantiate.push((v, lo..=hi));
        }
        Ok(NamedStatement {
            statement: Statement { assumptions, goal },
            names: named,
            instantiate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::rules::RULES;

    #[test]
    fn every_rule_statement_parses() {
        for rule in RULES {
            for spec in rule.specs {
                let s = spec
                    .statement()
                    .unwrap_or_else(|e| panic!("{}: {e}", rule.name));
                assert!(!s.names.is_empty(), "{}", rule.name);
            }
        }
    }
}
