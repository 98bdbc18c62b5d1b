//! Every simplifier rule as data: its name (as recorded in traces), its family, and the
//! statements that justify it, each `for all integers: assumptions => claim`.
//!
//! Statements are written in the map expression syntax over free pattern variables (`x`,
//! `c`, ...). The z3 test proves every statement of every rule; where a statement is
//! non-linear, `instantiate` lists the pattern variables to enumerate over small values so
//! that each instance is linear. The brute-force test checks every statement on a box of
//! small values without z3.

/// A group of related rules.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Family {
    /// Ranges decide a value: point ranges, one-period div/mod.
    RangeFold,
    /// Structural rewrites of floordiv, ceildiv and mod by constants.
    DivMod,
    /// Recombination of quotient/remainder pairs in sums, and the canonical sum.
    Sums,
    /// min/max decided by ranges.
    MinMax,
    /// Normalization, feasibility and merging of constraints.
    Constraints,
    /// Transformations of the variables themselves.
    Variables,
}

/// What a statement claims under its assumptions.
#[derive(Clone, Copy, Debug)]
pub enum Claim {
    /// `lhs == rhs`.
    Rewrite(&'static str, &'static str),
    /// The two conjunctions of relations are equivalent (an empty list is `true`).
    Equivalent(&'static [&'static str], &'static [&'static str]),
}

/// One justification of a rule.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Relations assumed (the rule's side condition).
    pub assume: &'static [&'static str],
    /// The claim.
    pub claim: Claim,
    /// Pattern variables to enumerate (inclusive ranges) when a proof needs linear instances.
    pub instantiate: &'static [(&'static str, i64, i64)],
}

/// A named rule with its justifications.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// The name recorded in traces and used by the text tests.
    pub name: &'static str,
    /// The rule's family.
    pub family: Family,
    /// One line on what it does.
    pub summary: &'static str,
    /// Statements that together make the rule sound.
    pub specs: &'static [Spec],
}

const fn rw(
    assume: &'static [&'static str],
    lhs: &'static str,
    rhs: &'static str,
    instantiate: &'static [(&'static str, i64, i64)],
) -> Spec {
    Spec {
        assume,
        claim: Claim::Rewrite(lhs, rhs),
        instantiate,
    }
}

const fn eqv(
    assume: &'static [&'static str],
    before: &'static [&'static str],
    after: &'static [&'static str],
    instantiate: &'static [(&'static str, i64, i64)],
) -> Spec {
    Spec {
        assume,
        claim: Claim::Equivalent(before, after),
        instantiate,
    }
}

const C8: &[(&str, i64, i64)] = &[("c", 1, 8)];

/// All rules, grouped by family.
pub const RULES: &[Rule] = &[
    // --- Range folding -------------------------------------------------------------------
    Rule {
        name: "point_range",
        family: Family::RangeFold,
        summary: "an expression whose range is one point is that constant",
        specs: &[rw(&["x >= k", "x <= k"], "x", "k", &[])],
    },
    Rule {
        name: "floordiv_one_period",
        family: Family::RangeFold,
        summary: "x floordiv c is constant when x's range lies in one period of c",
        specs: &[rw(&["c >= 1", "x >= k * c", "x <= k * c + c - 1"], "x floordiv c", "k", C8)],
    },
    Rule {
        name: "ceildiv_one_period",
        family: Family::RangeFold,
        summary: "x ceildiv c is constant when x's range lies in one period of c",
        specs: &[rw(&["c >= 1", "x >= k * c - c + 1", "x <= k * c"], "x ceildiv c", "k", C8)],
    },
    Rule {
        name: "mod_one_period",
        family: Family::RangeFold,
        summary: "x mod c is x - k * c when x's range lies in [k * c, k * c + c - 1]",
        specs: &[rw(&["c >= 1", "x >= k * c", "x <= k * c + c - 1"], "x mod c", "x - k * c", C8)],
    },
    // --- min / max -----------------------------------------------------------------------
    Rule {
        name: "min_decided",
        family: Family::MinMax,
        summary: "min(a, b) is the operand that ranges prove smaller",
        specs: &[rw(&["a <= b"], "min(a, b)", "a", &[]), rw(&["b <= a"], "min(a, b)", "b", &[])],
    },
    Rule {
        name: "max_decided",
        family: Family::MinMax,
        summary: "max(a, b) is the operand that ranges prove larger",
        specs: &[rw(&["a >= b"], "max(a, b)", "a", &[]), rw(&["b >= a"], "max(a, b)", "b", &[])],
    },
    // --- div / mod structure -------------------------------------------------------------
    Rule {
        name: "floordiv_negative_divisor",
        family: Family::DivMod,
        summary: "a negative divisor moves into the dividend: x floordiv c = (-x) floordiv (-c), when the simplified result is no larger",
        specs: &[rw(&["c <= -1"], "x floordiv c", "(-x) floordiv (-c)", &[("c", -8, -1)])],
    },
    Rule {
        name: "ceildiv_negative_divisor",
        family: Family::DivMod,
        summary: "x ceildiv c = (-x) ceildiv (-c) for a negative divisor",
        specs: &[rw(&["c <= -1"], "x ceildiv c", "(-x) ceildiv (-c)", &[("c", -8, -1)])],
    },
    Rule {
        name: "mod_negative_divisor",
        family: Family::DivMod,
        summary: "x mod c = -((-x) mod (-c)) for a negative divisor",
        specs: &[rw(&["c <= -1"], "x mod c", "-((-x) mod (-c))", &[("c", -8, -1)])],
    },
    Rule {
        name: "floordiv_nested",
        family: Family::DivMod,
        summary: "(x floordiv b) floordiv c = x floordiv (b * c)",
        specs: &[rw(
            &["b >= 1", "c >= 1"],
            "(x floordiv b) floordiv c",
            "x floordiv (b * c)",
            &[("b", 1, 6), ("c", 1, 6)],
        )],
    },
    Rule {
        name: "mod_then_floordiv",
        family: Family::DivMod,
        summary: "(x mod (a * b)) floordiv a = (x floordiv a) mod b, unless the simplified quotient makes it larger",
        specs: &[rw(
            &["a >= 1", "b >= 1"],
            "(x mod (a * b)) floordiv a",
            "(x floordiv a) mod b",
            &[("a", 1, 6), ("b", 1, 6)],
        )],
    },
    Rule {
        name: "mod_nested",
        family: Family::DivMod,
        summary: "(x mod (c * b)) mod c = x mod c",
        specs: &[rw(
            &["b >= 1", "c >= 1"],
            "(x mod (c * b)) mod c",
            "x mod c",
            &[("b", 1, 6), ("c", 1, 6)],
        )],
    },
    Rule {
        name: "floordiv_absorb_floordiv",
        family: Family::DivMod,
        summary: "a quotient with coefficient 1 in a dividend joins it: (y + x floordiv b) floordiv c = (y * b + x) floordiv (b * c), when the result is smaller",
        specs: &[rw(
            &["b >= 1", "c >= 1"],
            "(y + x floordiv b) floordiv c",
            "(y * b + x) floordiv (b * c)",
            &[("b", 1, 6), ("c", 1, 6)],
        )],
    },
    Rule {
        name: "floordiv_negated",
        family: Family::DivMod,
        summary: "a negated dividend one below a multiple of c leaves the floordiv: (-x + c * q + c - 1) floordiv c = q - x floordiv c, when the result is no larger",
        specs: &[rw(&["c >= 1"], "(-x + c * q + c - 1) floordiv c", "q - x floordiv c", C8)],
    },
    Rule {
        name: "mod_negated",
        family: Family::DivMod,
        summary: "a negated dividend one below a multiple of c leaves the mod: (-x + c * q + c - 1) mod c = c - 1 - x mod c, when the result is no larger",
        specs: &[rw(&["c >= 1"], "(-x + c * q + c - 1) mod c", "c - 1 - x mod c", C8)],
    },
    Rule {
        name: "floordiv_pull_multiple",
        family: Family::DivMod,
        summary: "multiples of the divisor leave the floordiv: (c * q + r) floordiv c = q + r floordiv c",
        specs: &[rw(&["c >= 1"], "(c * q + r) floordiv c", "q + r floordiv c", C8)],
    },
    Rule {
        name: "ceildiv_pull_multiple",
        family: Family::DivMod,
        summary: "multiples of the divisor leave the ceildiv: (c * q + r) ceildiv c = q + r ceildiv c",
        specs: &[rw(&["c >= 1"], "(c * q + r) ceildiv c", "q + r ceildiv c", C8)],
    },
    Rule {
        name: "mod_pull_multiple",
        family: Family::DivMod,
        summary: "multiples of the divisor vanish under mod: (c * q + r) mod c = r mod c",
        specs: &[rw(&["c >= 1"], "(c * q + r) mod c", "r mod c", C8)],
    },
    Rule {
        name: "mod_residue_coefficient",
        family: Family::DivMod,
        summary: "coefficients under mod c become their smallest residue: (-x) mod 2 = x mod 2",
        specs: &[rw(
            &["c >= 1"],
            "((m + t * c) * x + r) mod c",
            "(m * x + r) mod c",
            &[("c", 1, 5), ("t", -2, 2), ("m", -2, 2)],
        )],
    },
    Rule {
        name: "floordiv_gcd",
        family: Family::DivMod,
        summary: "a common factor g of the terms and the divisor cancels when the rest (other terms and the constant's residue mod g) is in [0, g - 1]",
        specs: &[rw(
            &["g >= 1", "c >= 1", "r >= 0", "r <= g - 1"],
            "(g * a + r) floordiv (g * c)",
            "a floordiv c",
            &[("g", 1, 6), ("c", 1, 6)],
        )],
    },
    Rule {
        name: "mod_gcd_split",
        family: Family::DivMod,
        summary: "a mod splits by a common factor g when the rest is in [0, g - 1]",
        specs: &[rw(
            &["g >= 1", "c >= 1", "r >= 0", "r <= g - 1"],
            "(g * a + r) mod (g * c)",
            "(a mod c) * g + r",
            &[("g", 1, 6), ("c", 1, 6)],
        )],
    },
    // --- sums ----------------------------------------------------------------------------
    Rule {
        name: "sum_normal_form",
        family: Family::Sums,
        summary: "sums are flattened, like terms combined, summands ordered canonically",
        specs: &[rw(&[], "x * a + y + x * b", "x * (a + b) + y", &[("a", -3, 3), ("b", -3, 3)])],
    },
    Rule {
        name: "recombine_div_mod",
        family: Family::Sums,
        summary: "(x floordiv c) * c + x mod c = x (scaled by any k)",
        specs: &[rw(
            &["c >= 1"],
            "(x floordiv c) * c * k + (x mod c) * k + y",
            "x * k + y",
            &[("c", 1, 6), ("k", -3, 3)],
        )],
    },
    Rule {
        name: "recombine_sub_to_mod",
        family: Family::Sums,
        summary: "x - (x floordiv c) * c = x mod c (scaled by any k)",
        specs: &[rw(
            &["c >= 1"],
            "x * k - (x floordiv c) * c * k + y",
            "(x mod c) * k + y",
            &[("c", 1, 6), ("k", -3, 3)],
        )],
    },
    Rule {
        name: "recombine_nested_mod",
        family: Family::Sums,
        summary: "((x floordiv a) mod b) * a + x mod a = x mod (a * b)",
        specs: &[rw(
            &["a >= 1", "b >= 1"],
            "((x floordiv a) mod b) * a * k + (x mod a) * k + y",
            "(x mod (a * b)) * k + y",
            &[("a", 1, 5), ("b", 1, 5), ("k", -2, 2)],
        )],
    },
    Rule {
        name: "recombine_nested_div",
        family: Family::Sums,
        summary: "(x floordiv (a * b)) * b + (x floordiv a) mod b = x floordiv a",
        specs: &[rw(
            &["a >= 1", "b >= 1"],
            "(x floordiv (a * b)) * b * k + ((x floordiv a) mod b) * k + y",
            "(x floordiv a) * k + y",
            &[("a", 1, 5), ("b", 1, 5), ("k", -2, 2)],
        )],
    },
    // --- constraints ---------------------------------------------------------------------
    Rule {
        name: "constraint_on_variable",
        family: Family::Constraints,
        summary: "a constraint on a bare variable becomes (tightens) the variable's bounds",
        specs: &[eqv(&["x >= a", "x <= b"], &["x >= lo", "x <= hi"], &["x >= max(a, lo)", "x <= min(b, hi)"], &[])],
    },
    Rule {
        name: "constraint_add_const",
        family: Family::Constraints,
        summary: "x + k in [lo, hi] becomes x in [lo - k, hi - k]",
        specs: &[eqv(&[], &["x + k >= lo", "x + k <= hi"], &["x >= lo - k", "x <= hi - k"], &[])],
    },
    Rule {
        name: "constraint_scaled_sum",
        family: Family::Constraints,
        summary: "g * x in [lo, hi] (g the gcd of the coefficients) becomes x in [lo ceildiv g, hi floordiv g]",
        specs: &[
            eqv(
                &["g >= 1"],
                &["g * x >= lo", "g * x <= hi"],
                &["x >= lo ceildiv g", "x <= hi floordiv g"],
                &[("g", 1, 8)],
            ),
            eqv(
                &["g <= -1"],
                &["g * x >= lo", "g * x <= hi"],
                &["x >= (-hi) ceildiv (-g)", "x <= (-lo) floordiv (-g)"],
                &[("g", -8, -1)],
            ),
        ],
    },
    Rule {
        name: "constraint_floordiv",
        family: Family::Constraints,
        summary: "x floordiv c in [lo, hi] becomes x in [lo * c, hi * c + c - 1] (c >= 1), or x in [hi * c + c + 1, lo * c] (c <= -1)",
        specs: &[
            eqv(
                &["c >= 1"],
                &["x floordiv c >= lo", "x floordiv c <= hi"],
                &["x >= lo * c", "x <= hi * c + c - 1"],
                C8,
            ),
            eqv(
                &["c <= -1"],
                &["x floordiv c >= lo", "x floordiv c <= hi"],
                &["x >= hi * c + c + 1", "x <= lo * c"],
                &[("c", -8, -1)],
            ),
        ],
    },
    Rule {
        name: "constraint_always_true",
        family: Family::Constraints,
        summary: "a constraint that the ranges already imply is dropped",
        specs: &[eqv(&["x >= a", "x <= b", "a >= lo", "b <= hi"], &["x >= lo", "x <= hi"], &[], &[])],
    },
    Rule {
        name: "constraint_infeasible",
        family: Family::Constraints,
        summary: "a constraint disjoint from its expression's range makes the map KNOWN EMPTY",
        specs: &[
            eqv(&["x <= b", "b < lo"], &["x >= lo", "x <= hi"], &["1 <= 0"], &[]),
            eqv(&["x >= a", "a > hi"], &["x >= lo", "x <= hi"], &["1 <= 0"], &[]),
            eqv(&["lo > hi"], &["x >= lo", "x <= hi"], &["1 <= 0"], &[]),
        ],
    },
    Rule {
        name: "constraint_tighten",
        family: Family::Constraints,
        summary: "a constraint's interval is intersected with its expression's range",
        specs: &[eqv(&["x >= a", "x <= b"], &["x >= lo", "x <= hi"], &["x >= max(lo, a)", "x <= min(hi, b)"], &[])],
    },
    Rule {
        name: "constraint_mod_merge",
        family: Family::Constraints,
        summary: "x mod a = r1 and x mod b = r2 merge into x mod lcm(a, b) = r (Chinese remainder), or KNOWN EMPTY",
        specs: &[
            eqv(
                &[
                    "a >= 1", "b >= 1", "g >= 1", "a mod g == 0", "b mod g == 0", "g == u * a + v * b",
                    "m * g == a * b", "r >= 0", "r < m", "r mod a == r1", "r mod b == r2",
                ],
                &["x mod a == r1", "x mod b == r2"],
                &["x mod m == r"],
                &[("a", 1, 6), ("b", 1, 6), ("g", 1, 6)],
            ),
            eqv(
                &["a >= 1", "b >= 1", "g >= 1", "a mod g == 0", "b mod g == 0", "(r1 - r2) mod g != 0"],
                &["x mod a == r1", "x mod b == r2"],
                &["1 <= 0"],
                &[("a", 1, 6), ("b", 1, 6), ("g", 1, 6)],
            ),
        ],
    },
    Rule {
        name: "constraint_propagation",
        family: Family::Constraints,
        summary: "a linear constraint a * x + y in [lo, hi] bounds x by the range of y",
        specs: &[
            eqv(
                &["a >= 1", "y >= p", "y <= q"],
                &["a * x + y >= lo", "a * x + y <= hi"],
                &["a * x + y >= lo", "a * x + y <= hi", "x >= (lo - q) ceildiv a", "x <= (hi - p) floordiv a"],
                &[("a", 1, 6)],
            ),
            eqv(
                &["a <= -1", "y >= p", "y <= q"],
                &["a * x + y >= lo", "a * x + y <= hi"],
                &[
                    "a * x + y >= lo",
                    "a * x + y <= hi",
                    "x >= (p - hi) ceildiv (-a)",
                    "x <= (q - lo) floordiv (-a)",
                ],
                &[("a", -6, -1)],
            ),
        ],
    },
    // --- variables -----------------------------------------------------------------------
    Rule {
        name: "rescale_symbol",
        family: Family::Variables,
        summary: "a symbol s with s mod c = k becomes s' * c + k",
        specs: &[rw(&["c >= 1", "s mod c == k"], "s", "(s floordiv c) * c + k", C8)],
    },
];

/// The rule named `name`.
pub fn rule(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}
