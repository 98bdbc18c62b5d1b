//! Kernel parameters a kernel never reads. A fused kernel names every operand of its
//! fusion, yet its body may load nothing of one: `moco_infonce_queue`'s kernel after the
//! long GEMM names the 128 MiB logits for the one column of a concatenate it reads, and the
//! emitter's indexing proves that column comes from the concatenate's other piece. The
//! executor binds such a parameter's pointer but the kernel never dereferences it, so the
//! buffer need not be live there: the program builder does not count it as a use (the
//! logits then die at the kernel that writes the GEMM's lhs over them, as XLA's do).

use codegen::kir::{for_each_load, Access, Kernel};

/// For each parameter of `kernel` (in `bufs[]` order), whether the kernel may touch its
/// memory: it writes it (any access but [`Access::In`]) or loads it somewhere in its body.
pub fn touched_params(kernel: &Kernel) -> Vec<bool> {
    let mut touched: Vec<bool> = kernel
        .buffers
        .iter()
        .map(|b| b.access != Access::In)
        .collect();
    for_each_load(&kernel.body, &mut |buf, _| {
        if let Some(t) = touched.get_mut(buf) {
            *t = true;
        }
    });
    touched
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_no_load_names_is_untouched() {
        let k = codegen::kir::parse_kernel(
            "kernel k blocks=1 (d0 = block)\n  b0 in x: f32[4]{0}\n  b1 in y: f32[4]{0}\n  b2 out z: f32[4]{0}\n  for s0 in [0, 3] {\n    let v0: f32 = b0[s0]\n    b2[s0] = v0\n  }\n",
        )
        .unwrap();
        assert_eq!(touched_params(&k), vec![true, false, true]);
    }
}
