//! The codegen crate's integration tests: the kernel IR verifier. (The emitters' golden
//! kernel IR runs through the program builder, in the `plan` crate's tests.)

mod kir_parse;
mod verify;
