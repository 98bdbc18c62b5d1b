//! The codegen crate's integration tests: the kernel IR verifier and the GPU sort, merge
//! sort, sorted scatter and select-and-scatter emitters' golden kernel IR. (The other
//! emitters' golden kernel IR runs through the program builder, in the `plan` crate's
//! tests.)

mod gpu_merge_sort;
mod gpu_scatter_sorted;
mod gpu_select_scatter;
mod gpu_sort;
mod kir_parse;
mod verify;
