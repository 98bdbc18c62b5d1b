//! The buffers a thunk names and which of them it writes: one walk for the passes that
//! ask (streaming's count of a patch buffer's readers, the steps of `memory::steps`,
//! rematerialization's test that nothing writes a kernel's inputs in between), which
//! each had their own copy of it.

use codegen::kir::{Access, Kernel};

use crate::{BufferId, Thunk};

/// Calls `f(buffer, written)` for every mention of a buffer in thunk `t`, nested
/// sequences (a streamed GEMM's parts, loop bodies and conditions, branches) included,
/// and loop state, initial values, results and selectors too. A kernel argument is
/// written unless `kernels` describes its parameter as input only (one the kernel IR
/// does not describe, as with `kernels` empty, counts as written); a loop writes its
/// state, a conditional its results.
pub(crate) fn each_named(t: &Thunk, kernels: &[Kernel], f: &mut dyn FnMut(BufferId, bool)) {
    match t {
        Thunk::Kernel { kernel, args, .. } => {
            let params = kernels
                .get(*kernel)
                .map(|k| k.buffers.as_slice())
                .unwrap_or(&[]);
            for (i, &a) in args.iter().enumerate() {
                f(a, params.get(i).is_none_or(|p| p.access != Access::In));
            }
        }
        Thunk::Gemm { lhs, rhs, out, .. } => {
            f(*lhs, false);
            f(*rhs, false);
            f(*out, true);
        }
        Thunk::Copy { src, dst, .. } => {
            f(*src, false);
            f(*dst, true);
        }
        Thunk::Library {
            inputs, outputs, ..
        }
        | Thunk::Collective {
            inputs, outputs, ..
        } => {
            inputs.iter().for_each(|s| f(s.buffer, false));
            outputs.iter().for_each(|s| f(s.buffer, true));
        }
        Thunk::StreamedGemm { producer, gemm, .. } => {
            each_named(producer, kernels, f);
            each_named(gemm, kernels, f);
        }
        Thunk::While {
            cond,
            cond_result,
            body,
            body_results,
            state,
            init,
            ..
        } => {
            body_results.iter().chain(init).for_each(|&b| f(b, false));
            state.iter().for_each(|&b| f(b, true));
            f(*cond_result, false);
            for t in cond.iter().chain(body) {
                each_named(t, kernels, f);
            }
        }
        Thunk::Conditional {
            selector,
            branches,
            results,
            ..
        } => {
            results.iter().for_each(|&b| f(b, true));
            f(*selector, false);
            for (ts, rs) in branches {
                rs.iter().for_each(|&b| f(b, false));
                ts.iter().for_each(|t| each_named(t, kernels, f));
            }
        }
    }
}
