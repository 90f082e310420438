//! The UCX workers of a hub ("lanes"), the contexts they come from, the workers kept for reuse,
//! and what each worker keeps about its peers.
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

//!
//! Files: this one holds a hub's lanes; `lane.rs` one lane, `contexts.rs` the UCX contexts,
//! `spares.rs` workers kept and made ahead of need, `endpoints.rs` what a worker keeps about
//! its peers.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use log::debug;
use parking_lot::Mutex;

use super::identity::Locality;
use crate::config::Settings;

mod contexts;
mod endpoints;
mod lane;
mod spares;

pub use contexts::{context, failure, settle};
pub use endpoints::{Departures, Endpoints, PeerEndpoint, Touched};
pub use lane::{arm_worker, Armed, Lane, STUCK_ROUNDS};
pub use spares::{later, warm, Job};
use spares::spare_ready;

/// Which UCX context a worker comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Every transport UCX finds (shared memory included).
    Full = 0,
    /// Without shared-memory transports: for peers on this host that shared memory does not reach
    /// (other namespaces, another layout of UCX's shared memory).
    Isolated = 1,
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
        Tuning { slot_len: settings.slot_len, spare_workers: settings.workers.spare, liveness_ms: settings.liveness_ms }
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
