//! One UCX worker of a hub, and arming it before a sleep.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use log::{debug, warn};

use crate::core::protocol;
use crate::stats::{self, Counter};
use crate::ucx::Worker;
use super::{Kind, LinkSink, Notice, Tuning};
use super::contexts::make_worker;
use super::endpoints::{Endpoints, Touched};
use super::spares::{take_spare, Spare, SPARES};

/// One UCX worker of a hub, with the endpoints it holds to peer workers and the ids of the
/// connections its callbacks touched.
pub struct Lane {
    /// Dropped before the worker: the endpoints close while it exists.
    pub endpoints: Arc<Endpoints>,
    pub worker: Arc<Worker>,
    pub touched: Arc<Touched>,
    kind: Kind,
    /// The other process on this host whose connections this lane serves (`None`: a shared lane).
    pub(super) key: Option<u64>,
    /// Whether the worker may be kept as a spare when the lane goes.
    reusable: bool,
    tuning: Tuning,
    /// A connection of this lane ended without the peer's FIN: its process may have died
    /// writing into the worker's ring, so the worker is not kept for reuse.
    lost: AtomicBool,
}

/// Decodes a credit or probe message into a notice for a link.
fn notice(id: u32, header: &[u8]) -> Option<(u32, Notice)> {
    match id {
        protocol::AM_CREDIT => match protocol::decode_credit(header) {
            Ok((dest, consumed)) => Some((dest, Notice::Credit(consumed))),
            Err(e) => {
                debug!("ignoring malformed credit message: {e}");
                None
            }
        },
        _ => match protocol::decode_probe(header) {
            Ok((dest, protocol::PROBE_PING, token)) => Some((dest, Notice::Ping(token))),
            Ok((dest, _, token)) => Some((dest, Notice::Pong(token))),
            Err(e) => {
                debug!("ignoring malformed probe message: {e}");
                None
            }
        },
    }
}

impl Lane {
    /// A lane on a spare worker of `kind` or a new one, whose credit and probe messages go to
    /// `sink`.
    pub(super) fn open(kind: Kind, sink: &Arc<LinkSink>, key: Option<u64>, reusable: bool, tuning: Tuning) -> Result<Arc<Lane>, String> {
        let (worker, endpoints, touched) = match take_spare(kind) {
            Some(spare) => (spare.worker, spare.endpoints, spare.touched),
            None => (make_worker(kind, tuning)?, Arc::default(), Arc::default()),
        };
        stats::count(Counter::LanesOpened);
        let lock = worker.lock();
        for id in [protocol::AM_CREDIT, protocol::AM_PROBE] {
            let sink = sink.clone();
            lock.on_active_message(
                id,
                Arc::new(move |header: &[u8]| {
                    if let Some((dest, notice)) = notice(id, header) {
                        sink(dest, notice);
                    }
                }),
            )
            .map_err(|e| e.to_string())?;
        }
        let departures = endpoints.departures().clone();
        lock.on_active_message(protocol::AM_GOODBYE, Arc::new(move |header: &[u8]| departures.on_goodbye(header)))
            .map_err(|e| e.to_string())?;
        drop(lock);
        Ok(Arc::new(Lane { endpoints, worker, touched, kind, key, reusable, tuning, lost: AtomicBool::new(false) }))
    }

    /// Whether this lane serves peers on this host that shared memory does not reach.
    pub fn isolated(&self) -> bool {
        self.kind == Kind::Isolated
    }

    /// Notes that a connection of this lane ended abortively (see `lost`).
    pub fn mark_lost(&self) {
        self.lost.store(true, Ordering::Release);
    }

    /// Whether a connection of this lane ended abortively.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Whether the worker can serve another connection: nothing points to a dead peer.
    fn healthy(&self) -> bool {
        !self.is_lost() && !self.endpoints.departures().lost() && !self.worker.keeps_memory()
    }

    pub fn event_fd(&self) -> c_int {
        self.worker.event_fd()
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        stats::count(Counter::LanesClosed);
        if self.reusable && self.healthy() {
            let mut spare = SPARES[self.kind as usize].lock();
            if spare.workers.len() < self.tuning.spare_workers {
                // Messages for the hub's links go nowhere now (the goodbye handler stays: it
                // belongs to the endpoints, which go with the worker).
                let lock = self.worker.lock();
                let quiet = [protocol::AM_CREDIT, protocol::AM_PROBE]
                    .into_iter()
                    .try_for_each(|id| lock.on_active_message(id, Arc::new(|_: &[u8]| {})));
                drop(lock);
                match quiet {
                    Ok(()) => {
                        spare.workers.push(Spare { worker: self.worker.clone(), endpoints: self.endpoints.clone(), touched: self.touched.clone() });
                        return;
                    }
                    Err(e) => debug!("worker not kept: {e}"),
                }
            }
        }
        self.endpoints.goodbye(&self.worker);
    }
}

/// What arming a hub's workers before a sleep found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Armed {
    /// Every worker will signal its event fd: sleep.
    Yes,
    /// Events are pending: progress before sleeping.
    Busy,
    /// A worker has events that progress does not deliver (a dead peer's stuck ring, sends
    /// waiting for a full peer): sleep, but look again after a while.
    Stuck,
}

impl Armed {
    pub fn and(self, other: Armed) -> Armed {
        match (self, other) {
            (Armed::Busy, _) | (_, Armed::Busy) => Armed::Busy,
            (Armed::Stuck, _) | (_, Armed::Stuck) => Armed::Stuck,
            _ => Armed::Yes,
        }
    }
}

/// Arms a worker. Arming asks the transports to signal their *next* event: with InfiniBand and
/// RoCE (`ibv_req_notify_cq`) a completion that arrived after the last progress call but before
/// the arm signals nothing and would sit in its queue while the thread sleeps. So the worker is
/// progressed once more after arming; what that finds is handled before sleeping (the notice it
/// armed for comes later and only ends one sleep early).
pub fn arm_worker(worker: &Worker) -> Armed {
    let lock = worker.lock();
    match lock.arm() {
        Ok(true) if lock.progress() > 0 => Armed::Busy,
        Ok(true) => Armed::Yes,
        Ok(false) if lock.progress() > 0 => Armed::Busy,
        Ok(false) => Armed::Stuck,
        Err(e) => {
            warn!("{e}");
            Armed::Stuck
        }
    }
}

/// Consecutive stuck arms a leader spins through before it sleeps anyway: a sender that has
/// claimed its place in a ring but not written yet looks stuck for a moment, and the first arm
/// after events drains the event fd and fails although progress finds nothing.
pub const STUCK_ROUNDS: u32 = 4;

/// Whether the worker has events it cannot deliver: arming it keeps failing while progress finds
/// nothing. (A healthy worker may refuse once or twice: arming first drains its event fd.)
pub(super) fn worker_stuck(worker: &Worker) -> bool {
    (0..=STUCK_ROUNDS).all(|_| arm_worker(worker) == Armed::Stuck)
}

