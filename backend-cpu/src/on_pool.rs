//! Running a `while` loop on one of the pool's threads. The thread that calls an
//! executable is not one of rayon's: every kernel or GEMM it splits is handed to the pool
//! cold (queued in the injector, the caller asleep until a pool thread wakes, runs every
//! part and wakes it back), which costs tens of microseconds a call. A recurrent step
//! splits its gate GEMM (`[16,256] x [256,1024]`, 30 us of work on one thread) that way in
//! every iteration. Run from a pool thread instead, a split keeps its first part on that
//! thread and leaves the rest to be stolen by the other threads, still awake from the
//! previous step; a part nobody steals in time runs on the same thread after its own
//! part, never waiting on a sleeper. So the loop as a whole is handed to the pool once.
//!
//! Only loops with no collective inside: a device thread of a multi-device run waits at
//! every collective for the other devices, and a pool thread blocked there (one of two)
//! could hold back the device it waits for.
#![allow(unsafe_code)]

use plan::Thunk;

/// Whether `thunks` (and the loops and branches inside) hold a collective.
pub(crate) fn has_collective(thunks: &[Thunk]) -> bool {
    thunks.iter().any(|t| match t {
        Thunk::Collective { .. } => true,
        Thunk::While { cond, body, .. } => has_collective(cond) || has_collective(body),
        Thunk::Conditional { branches, .. } => {
            branches.iter().any(|(thunks, _)| has_collective(thunks))
        }
        _ => false,
    })
}

/// Whether a loop run by this thread moves to the pool: more than one thread to split
/// among, this thread not already the pool's, no collective inside.
pub(crate) fn moves_to_pool(threads: usize, cond: &[Thunk], body: &[Thunk]) -> bool {
    threads > 1
        && rayon::current_thread_index().is_none()
        && !has_collective(cond)
        && !has_collective(body)
}

/// A closure that runs on another thread while its caller waits for it.
struct Handed<F>(F);
// SAFETY: `run` blocks its caller until the closure has returned, so everything the closure
// borrows (the program, the run's memory with its raw pointers, the environment) outlives
// it, and the calling thread, blocked, touches none of it meanwhile: the borrowed state is
// used by one thread at a time, as on the calling thread. Nothing the executor runs
// depends on which thread it runs on (no thread-local state outlives a call).
unsafe impl<F> Send for Handed<F> {}

/// The result of a handed closure, back to the caller.
struct Back<R>(R);
// SAFETY: the result (an executor `Result`, possibly holding the run's borrowed state)
// moves back to the caller, which was blocked while the closure ran; nothing else holds it.
unsafe impl<R> Send for Back<R> {}

/// Runs `f` on one of the global pool's threads and returns its result, the calling thread
/// blocked meanwhile (see the module documentation).
pub(crate) fn run<R>(f: impl FnOnce() -> R) -> R {
    let job = Handed(f);
    let Back(r) = rayon::scope(move |_| {
        let job = job;
        Back((job.0)())
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::collective::{Collective, CollectiveKind, Phase};

    fn copy() -> Thunk {
        Thunk::Copy {
            src: 0,
            dst: 1,
            bytes: 4,
        }
    }

    fn looped(body: Vec<Thunk>) -> Thunk {
        Thunk::While {
            name: "w".into(),
            cond: vec![copy()],
            cond_result: 0,
            body,
            body_results: vec![],
            state: vec![],
            init: vec![],
            trips: None,
        }
    }

    fn collective() -> Thunk {
        Thunk::Collective {
            step: Box::new(Collective {
                name: "id".into(),
                kind: CollectiveKind::ReplicaId,
                groups: vec![vec![0, 1]],
                phase: Phase::Sync,
            }),
            inputs: vec![],
            outputs: vec![],
        }
    }

    #[test]
    fn collectives_are_found_in_nested_loops_and_branches() {
        assert!(!has_collective(&[copy(), looped(vec![copy()])]));
        assert!(has_collective(&[copy(), collective()]));
        assert!(has_collective(&[looped(vec![looped(vec![collective()])])]));
        let branch = Thunk::Conditional {
            selector: 0,
            selector_is_pred: true,
            branches: vec![(vec![copy()], vec![]), (vec![collective()], vec![])],
            results: vec![],
        };
        assert!(has_collective(&[looped(vec![branch])]));
    }

    #[test]
    fn a_loop_moves_to_the_pool_once() {
        let body = [copy()];
        assert!(
            !moves_to_pool(1, &body, &body),
            "one thread: nothing to split"
        );
        assert!(!moves_to_pool(2, &body, &[collective()]));
        if rayon::current_num_threads() > 1 {
            assert!(moves_to_pool(2, &body, &body));
        }
        // On the pool: the closure's result comes back, and a loop there stays put.
        let (index, again) = run(|| {
            (
                rayon::current_thread_index(),
                moves_to_pool(2, &body, &body),
            )
        });
        assert!(index.is_some());
        assert!(!again);
        let mut state = vec![1u32, 2, 3];
        let sum: u32 = run(|| {
            state.push(4);
            state.iter().sum()
        });
        assert_eq!((sum, state.len()), (10, 4));
    }
}
