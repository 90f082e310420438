//! Workers kept for the next lane, made ahead of need on the `hadronio-lanes` thread.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use log::{debug, warn};
use parking_lot::{Condvar, Mutex};

use crate::ucx::Worker;
use super::{Kind, Tuning};
use super::contexts::make_worker;
use super::endpoints::{Endpoints, Touched};
use super::lane::worker_stuck;

/// The workers kept for the next lane of each kind: those of dropped lanes (peers keep their
/// endpoints to them, so a connection to a known peer needs no new endpoint either) and the one
/// made ahead of need.
pub(super) struct Spares {
    /// Taken from the end: the worker made ahead sits first, so that kept ones go first.
    pub(super) workers: Vec<Spare>,
    /// A worker is being made ahead of need.
    warming: bool,
}

pub(super) static SPARES: [Mutex<Spares>; 2] = [Mutex::new(Spares::new()), Mutex::new(Spares::new())];

/// Signalled when a worker made ahead of need is ready (or could not be made).
static WARMED: [Condvar; 2] = [Condvar::new(), Condvar::new()];

/// How long a lane that needs a worker waits for the one being made ahead of need before it makes
/// its own.
const WARM_WAIT: Duration = Duration::from_secs(2);

impl Spares {
    const fn new() -> Spares {
        Spares { workers: Vec::new(), warming: false }
    }
}

/// A job for the `hadronio-lanes` thread.
pub type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Whether this thread is the `hadronio-lanes` thread.
    static LANES_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `job` on the `hadronio-lanes` thread, which makes UCX workers and opens lanes for the
/// threads that should not wait for them. One thread, started on first use, runs every such job
/// in turn: they are rare, and a thread each would cost its creation and leave its stack cached.
/// False if the thread could not be started.
pub fn later(job: Job) -> bool {
    static JOBS: OnceLock<Option<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    let jobs = JOBS.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new().name("hadronio-lanes".into()).spawn(move || {
            LANES_THREAD.with(|flag| flag.set(true));
            for job in receiver {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                    warn!("a job of the hadronio-lanes thread panicked");
                }
            }
        });
        spawned.map_err(|e| warn!("no hadronio-lanes thread: {e}")).ok().map(|_| sender)
    });
    jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok())
}

/// Makes a worker of `kind` ahead of need on the `hadronio-lanes` thread (with the UCX context, if
/// this is the process's first), unless a worker is kept already, one is being made, or none may
/// be kept.
pub fn warm(kind: Kind, tuning: Tuning) {
    if tuning.spare_workers == 0 {
        return;
    }
    {
        let mut spares = SPARES[kind as usize].lock();
        if spares.warming || !spares.workers.is_empty() {
            return;
        }
        spares.warming = true;
    }
    let done = move |worker: Option<Arc<Worker>>| {
        let mut spares = SPARES[kind as usize].lock();
        spares.warming = false;
        let extra = match worker {
            Some(worker) if spares.workers.len() < tuning.spare_workers => {
                spares.workers.insert(0, Spare { worker, endpoints: Arc::default(), touched: Arc::default() });
                None
            }
            other => other,
        };
        drop(spares);
        WARMED[kind as usize].notify_all();
        // Closed lanes filled the list meanwhile: destroyed without a lock held.
        drop(extra);
    };
    let queued = later(Box::new(move || {
        // Kept workers came back meanwhile (closed lanes): none is needed.
        let made = if SPARES[kind as usize].lock().workers.is_empty() {
            // Caught here too (the thread survives a panic anyway): `done` must run, or lanes
            // would wait for this worker until WARM_WAIT each time.
            std::panic::catch_unwind(|| make_worker(kind, tuning)).unwrap_or_else(|_| Err(String::from("panicked")))
        } else {
            Err(String::from("not needed"))
        };
        done(made.map_err(|e| debug!("no UCX worker made ahead of need: {e}")).ok());
    }));
    if !queued {
        done(None);
    }
}

/// A spare worker with what its endpoints refer to (they wake connections through `touched`).
pub(super) struct Spare {
    pub(super) worker: Arc<Worker>,
    pub(super) endpoints: Arc<Endpoints>,
    pub(super) touched: Arc<Touched>,
}

/// A spare worker that can serve again, waiting for the one being made ahead of need if there is
/// none yet: one whose ring a peer's death has left stuck (it has messages it never delivers) is
/// destroyed instead.
pub(super) fn take_spare(kind: Kind) -> Option<Spare> {
    let deadline = Instant::now() + WARM_WAIT;
    let mut spares = SPARES[kind as usize].lock();
    loop {
        let Some(spare) = spares.workers.pop() else {
            // The hadronio-lanes thread makes the worker being warmed only after its current job.
            let wait = spares.warming && !LANES_THREAD.with(std::cell::Cell::get);
            if !wait || WARMED[kind as usize].wait_until(&mut spares, deadline).timed_out() {
                return None;
            }
            continue;
        };
        drop(spares);
        if !worker_stuck(&spare.worker) {
            return Some(spare);
        }
        debug!("a spare UCX worker has undeliverable messages; destroyed");
        spare.endpoints.goodbye(&spare.worker);
        spares = SPARES[kind as usize].lock();
    }
}

/// Whether a worker of `kind` is kept, ready to be taken.
pub(super) fn spare_ready(kind: Kind) -> bool {
    !SPARES[kind as usize].lock().workers.is_empty()
}

