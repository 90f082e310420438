//! The UCX workers of a hub ("lanes"), the contexts they come from, the workers kept for reuse,
//! and what each worker keeps about its peers: their endpoints, the workers that said goodbye,
//! and which connections its callbacks touched.
//!
//! UCX's shared-memory transport delivers the messages of every process to a worker through one
//! ring in shared memory, and a sender claims its place in the ring before it writes the message:
//! a process killed in between leaves a place that is never completed, and the worker receives
//! nothing more through shared memory, from anyone. So a selector's hub keeps each other process
//! on this host on a lane of its own (a peer names its process in its HELLO). Peers on this host
//! in other namespaces (containers), which shared memory does not reach, share a lane of a
//! context without shared-memory transports; peers on other hosts and this process share the
//! main lane. Lanes open when a connection first needs them.
//!
//! A new worker takes milliseconds (shared-memory segments, an interface per transport), and the
//! process's first one tens of milliseconds more (the UCX context: transport modules, devices).
//! So a worker is made ahead of need on the `hadronio-lanes` thread ([`warm`]) when the library
//! starts, and for a selector's hub whenever none is kept (when the hub is created and after each
//! lane it opens): opening a selector does not wait for UCX, nor does an upgrade as a rule. A
//! lane that finds no kept worker opens on that thread too ([`later`]) while the connection's
//! bytes flow over TCP, and a selector's thread serves its other channels meanwhile.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::{debug, warn};
use parking_lot::{Condvar, Mutex};

use super::identity::Locality;
use super::protocol;
use crate::config::Settings;
use crate::stats::{self, Counter};
use crate::ucx::{self, Context, ContextOptions, Endpoint, Start, Status, Worker};

/// Which UCX context a worker comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Every transport UCX finds (shared memory included).
    Full = 0,
    /// Without shared-memory transports: for peers on this host that shared memory does not reach
    /// (other namespaces, another layout of UCX's shared memory).
    Isolated = 1,
}

static CONTEXTS: [OnceLock<Result<Arc<Context>, String>>; 2] = [OnceLock::new(), OnceLock::new()];

/// The process-wide UCX context of `kind`, created on first use (or the reason there is none).
/// The first call creates it, as `tuning` says.
pub fn context(kind: Kind, tuning: Tuning) -> Result<&'static Arc<Context>, String> {
    CONTEXTS[kind as usize]
        .get_or_init(|| {
            let options = ContextOptions {
                longest: tuning.slot_len as usize,
                shared_memory: kind == Kind::Full,
                retransmit_for: (tuning.liveness_ms > 0).then(|| Duration::from_millis(tuning.liveness_ms)),
            };
            Context::new(&options).inspect_err(|e| match kind {
                Kind::Full => warn!("UCX is unavailable, connections stay on TCP: {e}"),
                Kind::Isolated => warn!("UCX without shared memory is unavailable; peers on this host that shared memory does not reach stay on TCP: {e}"),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Why there is no UCX context of `kind`, if creating it failed. None while it may work: it
/// exists, or it was not made yet (the library makes it ahead of need on the `hadronio-lanes`
/// thread, see [`warm`], and a connection does not wait for that: its bytes flow over TCP until
/// its lane opens, and a lane that finds no context falls back).
pub fn failure(kind: Kind) -> Option<&'static str> {
    CONTEXTS[kind as usize].get().and_then(|made| made.as_ref().err()).map(String::as_str)
}

/// Workers being created now (see [`settle`]).
static MAKING: AtomicUsize = AtomicUsize::new(0);

/// File descriptors a process must have left for a new UCX worker (with the context, if it is
/// the first): a worker opens about ten (its shared-memory segments, an event fd, sockets of
/// its transports) and its endpoints more. UCX gives up on the whole process (an abort) when
/// some of these fail within its worker set-up, so below this a lane is not opened and its
/// connections stay on TCP.
const WORKER_DESCRIPTORS: u64 = 64;

/// Why no worker may be made now, if the process is too near its descriptor limit.
fn descriptors_short() -> Option<String> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` to the live local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // Counted only here: a worker is made rarely, and takes milliseconds anyway.
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    short_of(limit.rlim_cur, open)
}

/// Why no worker may be made with `open` of `limit` descriptors in use, if too few are left.
fn short_of(limit: u64, open: u64) -> Option<String> {
    let left = limit.saturating_sub(open);
    (left < WORKER_DESCRIPTORS).then(|| format!("{left} of {limit} file descriptors left, a UCX worker needs {WORKER_DESCRIPTORS}"))
}

/// A new worker of `kind` (creating the context first if need be).
fn make_worker(kind: Kind, tuning: Tuning) -> Result<Arc<Worker>, String> {
    if let Some(short) = descriptors_short() {
        return Err(short);
    }
    struct Making;
    impl Drop for Making {
        fn drop(&mut self) {
            MAKING.fetch_sub(1, Ordering::AcqRel);
        }
    }
    MAKING.fetch_add(1, Ordering::AcqRel);
    let _making = Making;
    context(kind, tuning).and_then(|context| Worker::new(context).map_err(|e| e.to_string()))
}

/// Waits, at most `wait`, until no thread is creating a UCX context or worker: the process's exit
/// must not unload UCX under one.
pub fn settle(wait: Duration) {
    let deadline = Instant::now() + wait;
    while MAKING.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What lanes take from the library's settings.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// Bytes per receive slot (the UCX context sizes its shared-memory segments for them).
    pub slot_len: u32,
    /// How many workers are kept for the next lanes (those of closed lanes and the one made
    /// ahead of need); 0: none, and none is made ahead.
    pub spare_workers: usize,
    /// `hadronio.livenessMillis`: how long the UCX half keeps retransmitting to a silent peer.
    pub liveness_ms: u64,
}

impl Tuning {
    /// What lanes take from `settings`.
    pub fn of(settings: &Settings) -> Tuning {
        Tuning { slot_len: settings.slot_len, spare_workers: settings.spare_workers, liveness_ms: settings.liveness_ms }
    }
}

/// What an active message tells a connection's link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The peer consumed this many of our messages.
    Credit(u64),
    /// The peer's probe: answer with a pong of this token.
    Ping(u64),
    /// The answer to our probe.
    Pong(u64),
}

/// Where a hub's lanes hand notices for its connections (by link id).
pub type LinkSink = dyn Fn(u32, Notice) + Send + Sync;

// --- per-worker state ------------------------------------------------------------------------

/// Connection ids whose UCX state changed during progress, collected by callbacks and handled by
/// the progressing thread afterwards (outside the callbacks).
#[derive(Default)]
pub struct Touched {
    ids: Mutex<Vec<u32>>,
    any: AtomicBool,
}

impl Touched {
    pub fn push(&self, id: u32) {
        self.ids.lock().push(id);
        self.any.store(true, Ordering::Release);
    }

    /// Whether ids were pushed since the last `take_into` (cheap; no lock).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Moves the collected ids into `into` (which should be empty; its capacity is reused).
    pub fn take_into(&self, into: &mut Vec<u32>) {
        let mut ids = self.ids.lock();
        self.any.store(false, Ordering::Release);
        if !ids.is_empty() {
            std::mem::swap(&mut *ids, into);
        }
    }
}

/// One UCX endpoint to a peer worker, shared by every connection between the two workers.
///
/// Sharing keeps endpoint lifetimes independent of connection lifetimes: UCX pairs the
/// endpoints two workers create towards each other, and closing one discards receives that wait
/// on its partner, so a connection must never close an endpoint another one may depend on. An
/// endpoint is closed once its peer worker is gone (it said goodbye, see [`Endpoints::goodbye`],
/// or failed) and no connection uses it any more.
pub struct PeerEndpoint {
    ep: OnceLock<Endpoint>,
    /// The transports of the endpoint's lanes, read once (see [`PeerEndpoint::transports`]).
    transports: OnceLock<Vec<String>>,
    failed: AtomicI32,
    /// The peer worker is gone: no new connection will use this endpoint.
    gone: AtomicBool,
    users: Mutex<Vec<u32>>,
    touched: Arc<Touched>,
    departures: Arc<Departures>,
}

impl PeerEndpoint {
    pub fn ep(&self) -> Option<&Endpoint> {
        self.ep.get()
    }

    /// The transports (`name/device`, e.g. `posix/memory`, `tcp/eth0`) of the endpoint's lanes,
    /// each once. UCX only prints them, as text: that takes tens of microseconds, so it is read
    /// for the first connection that asks, and every connection between the two workers shares
    /// the endpoint and so its lanes.
    pub fn transports(&self) -> &[String] {
        match self.ep.get() {
            Some(ep) => self.transports.get_or_init(|| transports_in(&ep.describe())),
            None => &[],
        }
    }

    /// The UCX status the endpoint failed with, if it did (the peer is gone).
    pub fn failure(&self) -> Option<i32> {
        match self.failed.load(Ordering::Acquire) {
            0 => None,
            code => Some(code),
        }
    }

    /// The endpoint failed: its connections are woken, the worker marked as having lost a peer.
    fn on_failure(&self, status: Status) {
        let code = if status.is_ok() { -1 } else { status.0 as i32 };
        self.failed.store(code, Ordering::Release);
        self.gone.store(true, Ordering::Release);
        for &id in self.users.lock().iter() {
            self.touched.push(id);
        }
        self.departures.lost.store(true, Ordering::Release);
        self.departures.any.store(true, Ordering::Release);
    }
}

/// The transport words of an endpoint's description, each once: lines such as
/// `lane[0]:  0:posix/memory.0 md[0] -> ...` give `posix/memory.0`.
fn transports_in(description: &str) -> Vec<String> {
    let mut unique: Vec<String> = Vec::new();
    let words = description
        .lines()
        .filter_map(|line| line.split_once("lane[").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().nth(1))
        .map(|word| word.split_once(':').map_or(word, |(_, t)| t))
        .filter(|t| t.contains('/'));
    for word in words {
        if !unique.iter().any(|u| u == word) {
            unique.push(word.to_string());
        }
    }
    unique
}

/// Peer workers that went away, noted inside progress (by the goodbye handler and the error
/// handler) and handled after it by [`Endpoints::retire_departed`].
#[derive(Default)]
pub struct Departures {
    /// Digests of the worker addresses in goodbye messages.
    digests: Mutex<Vec<u64>>,
    any: AtomicBool,
    /// An endpoint failed: a peer worker went away without a goodbye.
    lost: AtomicBool,
}

impl Departures {
    /// Whether workers went away since the last [`Endpoints::retire_departed`] (no lock).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Whether a peer worker ever went away without a goodbye.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// A goodbye message arrived (its header names the departing worker).
    fn on_goodbye(&self, header: &[u8]) {
        match protocol::decode_goodbye(header) {
            Ok(digest) => {
                self.digests.lock().push(digest);
                self.any.store(true, Ordering::Release);
            }
            Err(e) => debug!("ignoring malformed goodbye message: {e}"),
        }
    }
}

/// How long a worker being destroyed waits for its goodbyes to leave.
const GOODBYE_WAIT: Duration = Duration::from_millis(10);

/// The endpoints of one worker, by peer worker address.
#[derive(Default)]
pub struct Endpoints {
    map: Mutex<HashMap<Vec<u8>, Arc<PeerEndpoint>>>,
    departures: Arc<Departures>,
}

impl Endpoints {
    /// The endpoint to the worker at `address`, created on first use; `user` is the connection
    /// id to wake if it fails.
    pub fn get(&self, worker: &Arc<Worker>, touched: &Arc<Touched>, address: &[u8], user: u32) -> ucx::Result<Arc<PeerEndpoint>> {
        let mut map = self.map.lock();
        if let Some(peer) = map.get(address) {
            if peer.failure().is_none() && !peer.gone.load(Ordering::Acquire) {
                peer.users.lock().push(user);
                return Ok(peer.clone());
            }
            map.remove(address);
        }
        let peer = Arc::new(PeerEndpoint {
            ep: OnceLock::new(),
            transports: OnceLock::new(),
            failed: AtomicI32::new(0),
            gone: AtomicBool::new(false),
            users: Mutex::new(vec![user]),
            touched: touched.clone(),
            departures: self.departures.clone(),
        });
        let weak: Weak<PeerEndpoint> = Arc::downgrade(&peer);
        let ep = Endpoint::connect(
            worker,
            address,
            Arc::new(move |status| {
                if let Some(peer) = weak.upgrade() {
                    peer.on_failure(status);
                }
            }),
        )?;
        let _ = peer.ep.set(ep);
        map.insert(address.to_vec(), peer.clone());
        Ok(peer)
    }

    /// `user` no longer uses `peer`; the endpoint goes once its peer is gone and nobody does.
    pub fn release(&self, peer: &Arc<PeerEndpoint>, user: u32) {
        let unused = {
            let mut users = peer.users.lock();
            users.retain(|&u| u != user);
            users.is_empty()
        };
        if unused && peer.gone.load(Ordering::Acquire) {
            self.map.lock().retain(|_, p| !Arc::ptr_eq(p, peer));
        }
    }

    /// Marks the endpoints to the workers noted in [`Departures`] gone and drops the gone ones no
    /// connection uses (closing them). Call outside progress.
    pub fn retire_departed(&self) {
        self.departures.any.store(false, Ordering::Release);
        let departed = std::mem::take(&mut *self.departures.digests.lock());
        let mut retired = Vec::new();
        {
            let mut map = self.map.lock();
            for (address, peer) in map.iter() {
                if departed.contains(&protocol::worker_digest(address)) {
                    peer.gone.store(true, Ordering::Release);
                }
            }
            map.retain(|_, peer| {
                let keep = !peer.gone.load(Ordering::Acquire) || !peer.users.lock().is_empty();
                if !keep {
                    retired.push(peer.clone());
                }
                keep
            });
        }
        if !retired.is_empty() {
            debug!("closing {} endpoints to departed workers", retired.len());
        }
        drop(retired);
    }

    /// The worker is about to be destroyed: tells every peer worker, so that they can close their
    /// endpoints to it, and waits briefly until the messages left.
    pub fn goodbye(&self, worker: &Worker) {
        let peers: Vec<Arc<PeerEndpoint>> = self.map.lock().values().cloned().collect();
        let header = protocol::encode_goodbye(worker.address());
        let lock = worker.lock();
        let mut requests = Vec::new();
        for peer in &peers {
            let Some(ep) = peer.ep().filter(|_| peer.failure().is_none()) else { continue };
            match ep.am_send_owned(&lock, protocol::AM_GOODBYE, &header, &[]) {
                Ok(Start::Pending(request)) => requests.push(request),
                Ok(Start::Done(())) => {}
                Err(e) => debug!("saying goodbye to a peer worker: {e}"),
            }
        }
        // Small enough to go at once on every transport (a pending one waits for the peer).
        lock.progress();
        if !lock.complete_by(&requests, Instant::now() + GOODBYE_WAIT) {
            debug!("goodbye messages still in flight when the worker goes");
        }
        for request in requests {
            request.free(&lock);
        }
    }

    pub fn departures(&self) -> &Arc<Departures> {
        &self.departures
    }

    /// How many peer workers this worker has endpoints to.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// --- lanes -----------------------------------------------------------------------------------

/// The workers kept for the next lane of each kind: those of dropped lanes (peers keep their
/// endpoints to them, so a connection to a known peer needs no new endpoint either) and the one
/// made ahead of need.
struct Spares {
    /// Taken from the end: the worker made ahead sits first, so that kept ones go first.
    workers: Vec<Spare>,
    /// A worker is being made ahead of need.
    warming: bool,
}

static SPARES: [Mutex<Spares>; 2] = [Mutex::new(Spares::new()), Mutex::new(Spares::new())];

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
struct Spare {
    worker: Arc<Worker>,
    endpoints: Arc<Endpoints>,
    touched: Arc<Touched>,
}

/// One UCX worker of a hub, with the endpoints it holds to peer workers and the ids of the
/// connections its callbacks touched.
pub struct Lane {
    /// Dropped before the worker: the endpoints close while it exists.
    pub endpoints: Arc<Endpoints>,
    pub worker: Arc<Worker>,
    pub touched: Arc<Touched>,
    kind: Kind,
    /// The other process on this host whose connections this lane serves (`None`: a shared lane).
    key: Option<u64>,
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
    fn open(kind: Kind, sink: &Arc<LinkSink>, key: Option<u64>, reusable: bool, tuning: Tuning) -> Result<Arc<Lane>, String> {
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

/// A spare worker that can serve again, waiting for the one being made ahead of need if there is
/// none yet: one whose ring a peer's death has left stuck (it has messages it never delivers) is
/// destroyed instead.
fn take_spare(kind: Kind) -> Option<Spare> {
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
fn spare_ready(kind: Kind) -> bool {
    !SPARES[kind as usize].lock().workers.is_empty()
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
fn worker_stuck(worker: &Worker) -> bool {
    (0..=STUCK_ROUNDS).all(|_| arm_worker(worker) == Armed::Stuck)
}

/// Most lanes a selector's hub opens for other processes on this host; connections of further
/// processes share its main lane. Bounds what peers claiming ever new processes can make it
/// allocate.
const MAX_LOCAL_LANES: usize = 32;

/// The lanes of one hub, opened when first needed.
pub struct Lanes {
    /// Peers on other hosts and in this process.
    main: OnceLock<Arc<Lane>>,
    /// Peers on this host in other namespaces.
    isolated: OnceLock<Arc<Lane>>,
    /// Other processes on this host (selector hubs only), and how many lanes are open in all.
    locals: Mutex<Vec<Arc<Lane>>>,
    open: AtomicUsize,
    /// A connection went: a local lane may have nobody left.
    idle: AtomicBool,
    /// Whether other processes get lanes of their own (a selector's hub, and a blocking hub once
    /// a second channel shares it).
    per_process: AtomicBool,
    /// Whether the main lane's worker may be kept when the hub goes (a blocking channel's).
    reusable: bool,
    /// Whether a worker is kept ready for the next lane (a selector's hub, whose lanes open as
    /// connections need them, while their bytes flow over TCP).
    ahead: bool,
    tuning: Tuning,
    sink: Arc<LinkSink>,
    /// Serialises opening (two connections must not open two main lanes).
    opening: Mutex<()>,
}

impl Lanes {
    /// The lanes of a selector's hub (`selector`) or of a blocking channel's.
    pub fn new(selector: bool, tuning: Tuning, sink: Arc<LinkSink>) -> Lanes {
        if selector {
            warm(Kind::Full, tuning);
        }
        Lanes {
            tuning,
            main: OnceLock::new(),
            isolated: OnceLock::new(),
            locals: Mutex::default(),
            open: AtomicUsize::new(0),
            idle: AtomicBool::new(false),
            per_process: AtomicBool::new(selector),
            reusable: !selector,
            ahead: selector,
            sink,
            opening: Mutex::new(()),
        }
    }

    /// Whether [`Lanes::lane`] would find the lane for a peer at `locality` without creating a
    /// UCX worker: it is open, or a kept worker can serve it.
    pub fn is_open(&self, locality: Locality) -> bool {
        let kind = if matches!(locality, Locality::Isolated) { Kind::Isolated } else { Kind::Full };
        // With a kept worker a lane opens at once, unless another one is opening (without one).
        self.find(locality).is_some() || (spare_ready(kind) && self.opening.try_lock().is_some())
    }

    /// The lane for a peer at `locality`, opened if needed; `opened` is told about a new lane's
    /// event fd (the hub adds it to its epoll set).
    pub fn lane(&self, locality: Locality, opened: impl Fn(c_int) -> std::io::Result<()>) -> Result<Arc<Lane>, String> {
        // An open lane is found without waiting while another one opens (for another peer).
        if let Some(lane) = self.find(locality) {
            return Ok(lane);
        }
        let _opening = self.opening.lock();
        if let Some(lane) = self.find(locality) {
            return Ok(lane);
        }
        let per_process = self.per_process.load(Ordering::Acquire);
        let (cell, kind, key) = match locality {
            Locality::Isolated => (Some(&self.isolated), Kind::Isolated, None),
            Locality::Local(process) if per_process && self.locals.lock().len() < MAX_LOCAL_LANES => (None, Kind::Full, Some(process)),
            Locality::Local(_) if per_process => {
                debug!("{MAX_LOCAL_LANES} local lanes open; connections of further processes share the main lane");
                (Some(&self.main), Kind::Full, None)
            }
            _ => (Some(&self.main), Kind::Full, None),
        };
        // The list of lanes is not locked meanwhile: the hub's thread goes on visiting them.
        let lane = Lane::open(kind, &self.sink, key, key.is_some() || self.reusable, self.tuning)?;
        if self.ahead {
            // The next peer process (or this one's next selector) finds its worker ready.
            warm(kind, self.tuning);
        }
        opened(lane.event_fd()).map_err(|e| format!("epoll: {e}"))?;
        match cell {
            Some(cell) => {
                let _ = cell.set(lane.clone());
            }
            None => {
                let mut locals = self.locals.lock();
                locals.push(lane.clone());
                debug!("lane {} for a process on this host", locals.len());
            }
        }
        self.open.fetch_add(1, Ordering::AcqRel);
        Ok(lane)
    }

    /// The open lane for a peer at `locality`, if there is one.
    fn find(&self, locality: Locality) -> Option<Arc<Lane>> {
        match locality {
            Locality::Isolated => self.isolated.get().cloned(),
            Locality::Local(process) if self.per_process.load(Ordering::Acquire) => {
                let locals = self.locals.lock();
                match locals.iter().find(|l| l.key == Some(process)) {
                    Some(lane) => Some(lane.clone()),
                    None if locals.len() >= MAX_LOCAL_LANES => self.main.get().cloned(),
                    None => None,
                }
            }
            _ => self.main.get().cloned(),
        }
    }

    /// From now on, other processes on this host get lanes of their own (the connections already
    /// open keep theirs).
    pub fn separate_processes(&self) {
        self.per_process.store(true, Ordering::Release);
    }

    /// The lane of peers on other hosts and in this process, if open.
    pub fn main(&self) -> Option<&Arc<Lane>> {
        self.main.get()
    }

    /// Whether any lane is open.
    pub fn any(&self) -> bool {
        self.open.load(Ordering::Acquire) > 0
    }

    /// Calls `f` with every open lane until it returns false.
    pub fn each(&self, mut f: impl FnMut(&Lane) -> bool) {
        if !self.any() {
            return;
        }
        let mut shared = 0;
        for cell in [&self.main, &self.isolated] {
            if let Some(lane) = cell.get() {
                shared += 1;
                if !f(lane) {
                    return;
                }
            }
        }
        // No lane of another process (a blocking channel's hub, say): the list is not locked on
        // every round of a spin. One opened meanwhile is visited the next time.
        if self.open.load(Ordering::Acquire) <= shared {
            return;
        }
        // The list may change meanwhile (a lane opened or retired): it is not locked while `f` runs,
        // which delivers events to connections (their state locks) while a closing connection
        // holds its state and asks for the list (`connection_gone`). The guard is let go before
        // the call: in a `while let` scrutinee it would live through the loop body.
        for index in 0.. {
            let lane = self.locals.lock().get(index).cloned();
            let Some(lane) = lane else { return };
            if !f(&lane) {
                return;
            }
        }
    }

    /// Notes that a connection went (a local lane may be idle now).
    pub fn connection_gone(&self) {
        if !self.locals.lock().is_empty() {
            self.idle.store(true, Ordering::Release);
        }
    }

    /// Closes the local lanes that no connection uses any more (keeping their workers as spares
    /// where they are healthy); `closing` is told about each one's event fd first.
    pub fn retire_idle(&self, closing: impl Fn(c_int)) {
        // Read before it is cleared: called on every round of a spin, where the flag is nearly
        // always clear, and a swap would claim its cache line each time.
        if !self.idle.load(Ordering::Acquire) || !self.idle.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut retired = Vec::new();
        self.locals.lock().retain(|lane| {
            let idle = Arc::strong_count(lane) == 1;
            if idle {
                retired.push(lane.clone());
            }
            !idle
        });
        for lane in &retired {
            closing(lane.event_fd());
        }
        if !retired.is_empty() {
            self.open.fetch_sub(retired.len(), Ordering::AcqRel);
            debug!("{} idle local lanes closed", retired.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_worker_is_made_near_the_descriptor_limit() {
        assert_eq!(short_of(1024, 100), None);
        assert_eq!(short_of(256, 256 - WORKER_DESCRIPTORS), None);
        let short = short_of(256, 250).unwrap();
        assert!(short.contains("6 of 256 file descriptors left"), "{short}");
        assert!(short_of(256, 300).unwrap().contains("0 of 256"));
        assert_eq!(descriptors_short(), None, "this test process is far from its limit");
    }

    #[test]
    fn transports_are_read_from_the_lane_lines_of_a_description() {
        let description = "#\n# UCP endpoint\n#\n#               peer: <no debug data>\n\
            #                 lane[0]:  0:posix/memory.0 md[0]          -> md[0]/posix/sysdev[255] am am_bw#0\n\
            #                 lane[1]:  2:tcp/eth0.0 md[2]              -> md[2]/tcp/sysdev[255] rkey_ptr\n\
            #                 lane[2]:  0:posix/memory.0 md[0]          -> md[0]/posix/sysdev[255] tag\n\
            #         tag_send: 0..<egr/short>..8185..<egr/bcopy>..8192..<rndv>..(inf)\n";
        assert_eq!(transports_in(description), ["posix/memory.0", "tcp/eth0.0"]);
        assert!(transports_in("no lanes here").is_empty());
    }

    fn lanes() -> Lanes {
        let tuning = Tuning { slot_len: 16384, spare_workers: 0, liveness_ms: 30_000 };
        Lanes::new(true, tuning, Arc::new(|_, _| {}))
    }

    #[test]
    fn the_list_of_lanes_is_free_while_each_visits_them() {
        let lanes = lanes();
        for process in [1, 2] {
            lanes.lane(Locality::Local(process), |_| Ok(())).unwrap();
        }
        let mut visited = 0;
        lanes.each(|_| {
            visited += 1;
            // What a closing connection does while a leader delivers events to it.
            assert!(lanes.locals.try_lock().is_some(), "the list of lanes is locked while a lane is visited");
            lanes.connection_gone();
            true
        });
        assert_eq!(visited, 2);
    }
}
