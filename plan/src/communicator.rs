//! How the devices of an SPMD run talk: the [`Communicator`] a backend hands each
//! device's executor. It moves contiguous bytes, as NCCL and MPI do; the backend packs an
//! operand's pieces (of a dimension in any layout) into that form and unpacks the result.
//! Implementations: in-process (N executors on N threads sharing memory, `backend-cpu`),
//! MPI and NCCL later behind the same two required methods.

use hlo::ir::reducer::Reducer;

use codegen::kir::ScalarType;

/// What one collective exchanges (the bytes are given with the [`Request`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CommOp<'a> {
    /// Element-wise `reducer` over the group's `send`s (elements of `ty`), in group order.
    AllReduce {
        /// The combining op.
        reducer: Reducer,
        /// The element type.
        ty: ScalarType,
    },
    /// The group's `send`s one after the other, in group order.
    AllGather,
    /// `send` is group-size equal pieces; member `k` gets piece `k` reduced over the group.
    ReduceScatter {
        /// The combining op.
        reducer: Reducer,
        /// The element type.
        ty: ScalarType,
    },
    /// `send` is group-size equal pieces; piece `j` goes to member `j`; `recv` holds the
    /// pieces received, in group order.
    AllToAll,
    /// Every device of the scope (`group`) meets; a device receives the `send` of the
    /// source paired with it (global ids), if any.
    CollectivePermute {
        /// (source, target) global device ids.
        pairs: &'a [(i64, i64)],
    },
    /// Nothing moves; every member waits for the others.
    Barrier,
}

/// One collective as a device posts it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// What it computes.
    pub op: CommOp<'a>,
    /// The participating global device ids, this device among them, in group order.
    pub group: &'a [i64],
    /// This device's contribution.
    pub send: &'a [u8],
}

/// A posted collective, to complete with [`Communicator::finish`]; what it holds is the
/// implementation's.
pub struct Ticket(pub Box<dyn std::any::Any + Send>);

/// Why a collective failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommError {
    /// What went wrong.
    pub message: String,
    /// Whether another device failed first (this device's error is its consequence).
    pub peer_failed: bool,
}

impl std::fmt::Display for CommError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommError {}

/// One device's link to the others. Collectives pair up by their order on each device
/// (the k-th collective of a device meets the k-th of every other participant), as XLA's
/// runtimes do. Two methods are required, [`Communicator::start`] (post, do not wait)
/// and [`Communicator::finish`] (wait, write the result): the async pairs of a program
/// run work between them; the named collectives are both at once.
pub trait Communicator: Send + Sync {
    /// This device's global id (`replica * partitions + partition`).
    fn device_id(&self) -> i64;
    /// This device's replica.
    fn replica_id(&self) -> i64;
    /// This device's partition.
    fn partition_id(&self) -> i64;

    /// Posts `request` (its bytes may be reused as soon as this returns).
    fn start(&self, request: &Request<'_>) -> Result<Ticket, CommError>;

    /// Waits for a posted collective and writes its result into `recv`; false for a
    /// collective-permute that sent nothing to this device (`recv` untouched).
    fn finish(&self, ticket: Ticket, recv: &mut [u8]) -> Result<bool, CommError>;

    /// Tells the other devices that this one failed (their waits end in an error).
    fn fail(&self, message: &str);

    /// How many devices run in this process, sharing its cores and its thread pool (an
    /// in-process run's N): a device splits its kernels and GEMMs among its share of the
    /// threads only. With N device threads on fewer cores, each device handing its GEMMs to
    /// the shared pool only queued them behind the other devices' and slept on a latch.
    fn devices_in_process(&self) -> usize {
        1
    }

    /// [`CommOp::AllReduce`], blocking.
    fn all_reduce(
        &self,
        group: &[i64],
        reducer: Reducer,
        ty: ScalarType,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<(), CommError> {
        let op = CommOp::AllReduce { reducer, ty };
        self.blocking(op, group, send, recv).map(|_| ())
    }

    /// [`CommOp::AllGather`], blocking.
    fn all_gather(&self, group: &[i64], send: &[u8], recv: &mut [u8]) -> Result<(), CommError> {
        self.blocking(CommOp::AllGather, group, send, recv)
            .map(|_| ())
    }

    /// [`CommOp::ReduceScatter`], blocking.
    fn reduce_scatter(
        &self,
        group: &[i64],
        reducer: Reducer,
        ty: ScalarType,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<(), CommError> {
        let op = CommOp::ReduceScatter { reducer, ty };
        self.blocking(op, group, send, recv).map(|_| ())
    }

    /// [`CommOp::AllToAll`], blocking.
    fn all_to_all(&self, group: &[i64], send: &[u8], recv: &mut [u8]) -> Result<(), CommError> {
        self.blocking(CommOp::AllToAll, group, send, recv)
            .map(|_| ())
    }

    /// [`CommOp::CollectivePermute`], blocking; false when nothing was sent to this device.
    fn collective_permute(
        &self,
        scope: &[i64],
        pairs: &[(i64, i64)],
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<bool, CommError> {
        self.blocking(CommOp::CollectivePermute { pairs }, scope, send, recv)
    }

    /// [`CommOp::Barrier`].
    fn barrier(&self, group: &[i64]) -> Result<(), CommError> {
        self.blocking(CommOp::Barrier, group, &[], &mut [])
            .map(|_| ())
    }

    /// Starts and finishes one collective.
    fn blocking(
        &self,
        op: CommOp<'_>,
        group: &[i64],
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<bool, CommError> {
        let ticket = self.start(&Request { op, group, send })?;
        self.finish(ticket, recv)
    }
}

thread_local! {
    static CURRENT: std::cell::RefCell<Option<std::sync::Arc<dyn Communicator>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `comm` as this thread's communicator ([`current_communicator`]): a
/// device's thread runs its executable inside, so that any backend's run finds its
/// device without the run's signature carrying it (the previous one is restored after).
pub fn with_communicator<R>(comm: std::sync::Arc<dyn Communicator>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<std::sync::Arc<dyn Communicator>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(comm)));
    f()
}

/// This thread's communicator, if a device run set one ([`with_communicator`]); `None`:
/// a single-device run.
pub fn current_communicator() -> Option<std::sync::Arc<dyn Communicator>> {
    CURRENT.with(|c| c.borrow().clone())
}
