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
    each_access(t, kernels, &mut |b, _, written| f(b, written));
}

/// As [`each_named`], calling `f(buffer, read, written)`: a kernel argument is read
/// unless `kernels` describes its parameter as output only (an undescribed one is read
/// and written); a GEMM reads its operands, a copy its source, a library call or a
/// collective its inputs, a loop its initial values, body results and condition result,
/// a conditional its selector and branch results; nested sequences read and write what
/// their thunks do. The poison mode's checks ask whether a value's next mention reads
/// it (a value only written again there, as a sliced chain's per-slice buffers are,
/// holds nothing in between).
pub(crate) fn each_access(t: &Thunk, kernels: &[Kernel], f: &mut dyn FnMut(BufferId, bool, bool)) {
    match t {
        Thunk::Kernel { kernel, args, .. } => {
            let params = kernels
                .get(*kernel)
                .map(|k| k.buffers.as_slice())
                .unwrap_or(&[]);
            for (i, &a) in args.iter().enumerate() {
                let access = params.get(i).map(|p| p.access);
                f(a, access != Some(Access::Out), access != Some(Access::In));
            }
        }
        Thunk::Gemm { lhs, rhs, out, .. } => {
            f(*lhs, true, false);
            f(*rhs, true, false);
            f(*out, false, true);
        }
        Thunk::Copy { src, dst, .. } => {
            f(*src, true, false);
            f(*dst, false, true);
        }
        Thunk::Library {
            inputs, outputs, ..
        }
        | Thunk::Collective {
            inputs, outputs, ..
        } => {
            inputs.iter().for_each(|s| f(s.buffer, true, false));
            outputs.iter().for_each(|s| f(s.buffer, false, true));
        }
        Thunk::StreamedGemm { producer, gemm, .. } => {
            each_access(producer, kernels, f);
            each_access(gemm, kernels, f);
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
            body_results
                .iter()
                .chain(init)
                .for_each(|&b| f(b, true, false));
            state.iter().for_each(|&b| f(b, false, true));
            f(*cond_result, true, false);
            for t in cond.iter().chain(body) {
                each_access(t, kernels, f);
            }
        }
        Thunk::Conditional {
            selector,
            branches,
            results,
            ..
        } => {
            results.iter().for_each(|&b| f(b, false, true));
            f(*selector, true, false);
            for (ts, rs) in branches {
                rs.iter().for_each(|&b| f(b, true, false));
                ts.iter().for_each(|t| each_access(t, kernels, f));
            }
        }
    }
}
