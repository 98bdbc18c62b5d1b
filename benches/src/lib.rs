//! Shared inputs for the criterion benches (see benches/benches/).
