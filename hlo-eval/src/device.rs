//! One device of an N-device evaluation: its replica and partition, the grid it belongs
//! to, and its way to the other devices (the shared rendezvous and the number of
//! collectives it has run, by which collectives pair up: the k-th collective of one device
//! meets the k-th of every other participant, whatever their channel ids).

use std::sync::Arc;
use std::time::Duration;

use hlo::ir::ModuleAttrValue;
use hlo::{Literal, Module};

use crate::error::EvalError;
use crate::rendezvous::Rendezvous;

/// How many replicas and partitions a run has; device `r * partitions + p` is replica `r`,
/// partition `p` (XLA's default device assignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceGrid {
    /// Number of replicas (`replica_count`).
    pub replicas: i64,
    /// Number of partitions (`num_partitions`).
    pub partitions: i64,
}

impl DeviceGrid {
    /// One replica, one partition: a single-device run.
    pub const SINGLE: DeviceGrid = DeviceGrid {
        replicas: 1,
        partitions: 1,
    };

    /// The grid the module's header asks for (`replica_count`, `num_partitions`; 1 each
    /// when absent).
    pub fn of_module(module: &Module) -> DeviceGrid {
        let int = |name| match module.attr(name) {
            Some(ModuleAttrValue::Int(n)) if *n > 0 => *n,
            _ => 1,
        };
        DeviceGrid {
            replicas: int("replica_count"),
            partitions: int("num_partitions"),
        }
    }

    /// The number of devices.
    pub fn count(&self) -> i64 {
        self.replicas.saturating_mul(self.partitions)
    }
}

/// How long a device waits at a collective for the others before the run fails.
pub const DEFAULT_COLLECTIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// One device's identity and link to the others.
pub struct Device {
    /// Its replica.
    pub replica: i64,
    /// Its partition.
    pub partition: i64,
    /// The grid of the run.
    pub grid: DeviceGrid,
    rendezvous: Arc<Rendezvous>,
    seq: u64,
}

impl Device {
    /// The devices of a run on `grid`, sharing one rendezvous, in device-id order.
    pub(crate) fn all(grid: DeviceGrid, timeout: Duration) -> Vec<Device> {
        let rendezvous = Arc::new(Rendezvous::new(timeout));
        (0..grid.count())
            .map(|id| Device {
                replica: id / grid.partitions,
                partition: id % grid.partitions,
                grid,
                rendezvous: Arc::clone(&rendezvous),
                seq: 0,
            })
            .collect()
    }

    /// A lone device (replica 0, partition 0 of a 1 x 1 grid).
    pub(crate) fn single() -> Device {
        Device {
            replica: 0,
            partition: 0,
            grid: DeviceGrid::SINGLE,
            rendezvous: Arc::new(Rendezvous::new(DEFAULT_COLLECTIVE_TIMEOUT)),
            seq: 0,
        }
    }

    /// Its global id, `replica * partitions + partition`.
    pub fn id(&self) -> i64 {
        self.replica * self.grid.partitions + self.partition
    }

    /// Exchanges `value` with `participants` (global device ids, this device among them)
    /// at this device's next collective; every participant's value in their order.
    pub(crate) fn exchange(
        &mut self,
        participants: &[i64],
        value: Literal,
        what: &str,
    ) -> Result<Vec<Literal>, EvalError> {
        let me = participants
            .iter()
            .position(|&d| d == self.id())
            .ok_or_else(|| {
                EvalError::invalid(
                    what,
                    format!(
                        "device {} is not among the participants {participants:?}",
                        self.id()
                    ),
                )
            })?;
        let seq = self.seq;
        self.seq += 1;
        self.rendezvous
            .exchange(seq, participants, me, value)
            .map_err(|m| EvalError::invalid(what, m))
    }

    /// Tells the other devices that this one failed with `message`.
    pub(crate) fn fail(&self, message: &str) {
        self.rendezvous.fail(self.id(), message);
    }
}
