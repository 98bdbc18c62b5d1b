//! The affine crate's integration tests, in one binary: parsing and printing, the
//! simplifier's rules (examples, statements, z3 proofs), properties against brute-force
//! enumeration, the e-graph and map equivalence.

mod egraph;
mod equiv;
mod node_counts;
mod oracle;
mod parse_errors;
mod parse_roundtrip;
mod prove_z3;
mod rule_examples;
mod rule_proofs_z3;
mod rule_statements;
mod simplify_props;
mod simplify_seeds;
mod var_masks;
