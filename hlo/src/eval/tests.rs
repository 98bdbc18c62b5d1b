//! Unit tests of elementwise semantics corner cases.
