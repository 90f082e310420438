//! The native half of a `Selector`: registrations (keys), the queue of keys whose channel may
//! have become ready, and the select loop.
//!
//! A channel that may have changed readiness queues its keys (once each). `select` looks only at
//! queued keys and at the keys it reported ready last time (readiness is level-triggered, as with
//! the JDK), so its cost is proportional to the number of ready channels, not registered ones.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::conn::Conn;
use super::error::Result;
use super::hub::Hub;
use super::listener::Listener;

/// `SelectionKey` operation bits (public Java API constants).
pub const OP_READ: u32 = 1;
pub const OP_WRITE: u32 = 4;
pub const OP_CONNECT: u32 = 8;
pub const OP_ACCEPT: u32 = 16;

pub enum Target {
    Conn(Arc<Conn>),
    Listener(Arc<Listener>),
}

impl Target {
    fn ready_ops(&self) -> u32 {
        match self {
            Target::Conn(conn) => conn.ready_ops(),
            Target::Listener(listener) => listener.ready_ops(),
        }
    }
}

/// A registration of a channel with a selector.
pub struct Key {
    /// The Java side's index of this key.
    pub index: i32,
    interest: AtomicU32,
    queued: AtomicBool,
    /// Set while the key is in the candidate list of a select (deduplication).
    collecting: AtomicBool,
    cancelled: AtomicBool,
    selector: Weak<Selector>,
    target: Target,
    /// The channel's hub when it is not the selector's own (polled as a nested hub).
    foreign: Mutex<Option<Arc<Hub>>>,
}

impl Key {
    /// Queues this key for the next select if it is interested in anything.
    pub fn notify(self: &Arc<Key>) {
        // Pairs with the fence in `set_interest`: either that sees the readiness that led here, or
        // this sees the interest it set.
        fence(Ordering::SeqCst);
        if self.cancelled.load(Ordering::Acquire) || self.interest.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(selector) = self.selector.upgrade() {
            if !self.queued.swap(true, Ordering::AcqRel) {
                selector.enqueue(self.clone());
            }
        }
    }

    /// Sets the interest set. A select in progress hears of it only if the key is ready for a new
    /// operation now; otherwise the event that makes it ready queues it, as for any key (waking
    /// the selecting thread for a key that is not ready would cost a wake-up per change, and a
    /// thread that arms its interest before it parks makes one per wait).
    pub fn set_interest(self: &Arc<Key>, ops: u32) {
        let old = self.interest.swap(ops, Ordering::AcqRel);
        let added = ops & !old;
        if added != 0 {
            fence(Ordering::SeqCst);
            if self.target.ready_ops() & added != 0 {
                self.notify();
            }
        }
    }

    fn ready_ops(&self) -> u32 {
        self.target.ready_ops() & self.interest.load(Ordering::Acquire)
    }
}

/// The select thread's lists; kept between selects so that selecting allocates nothing.
#[derive(Default)]
struct Lists {
    /// Keys reported ready last time (re-checked: readiness is level-triggered).
    hot: Vec<Arc<Key>>,
    candidates: Vec<Arc<Key>>,
    queued: Vec<Arc<Key>>,
}

pub struct Selector {
    hub: Arc<Hub>,
    queue: Mutex<Vec<Arc<Key>>>,
    pending: AtomicBool,
    lists: Mutex<Lists>,
    wakeup: AtomicBool,
    closed: AtomicBool,
}

impl Selector {
    pub fn open() -> std::io::Result<Arc<Selector>> {
        Ok(Arc::new(Selector {
            hub: Hub::new_for_selector()?,
            queue: Mutex::default(),
            pending: AtomicBool::new(false),
            lists: Mutex::default(),
            wakeup: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }))
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    fn enqueue(&self, key: Arc<Key>) {
        self.queue.lock().push(key);
        self.pending.store(true, Ordering::SeqCst);
        self.hub.wake();
    }

    /// Registers a channel; its connection is bound to this selector's hub if it has none yet.
    pub fn register(self: &Arc<Selector>, target: Target, index: i32, interest: u32) -> Result<Arc<Key>> {
        let key = Arc::new(Key {
            index,
            interest: AtomicU32::new(interest),
            queued: AtomicBool::new(false),
            collecting: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            selector: Arc::downgrade(self),
            target,
            foreign: Mutex::new(None),
        });
        match &key.target {
            Target::Conn(conn) => {
                let hub = conn.bind_hub(&self.hub)?;
                if !Arc::ptr_eq(&hub, &self.hub) {
                    self.hub.add_nested(&hub).map_err(|e| super::error::Error::io("epoll", &e))?;
                    *key.foreign.lock() = Some(hub);
                }
                conn.add_key(&key);
            }
            Target::Listener(listener) => listener.register_in(&self.hub, &key)?,
        }
        key.notify();
        Ok(key)
    }

    /// Removes a registration (the key was cancelled and the selector deregisters it).
    pub fn deregister(&self, key: &Arc<Key>) {
        key.cancelled.store(true, Ordering::Release);
        match &key.target {
            Target::Conn(conn) => conn.remove_key(key),
            Target::Listener(listener) => listener.unregister_from(&self.hub, key),
        }
        if let Some(hub) = key.foreign.lock().take() {
            self.hub.remove_nested(&hub);
        }
        self.lists.lock().hot.retain(|k| !Arc::ptr_eq(k, key));
    }

    /// Makes a blocked or the next select return at once.
    pub fn wakeup(&self) {
        self.wakeup.store(true, Ordering::SeqCst);
        self.hub.wake();
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.hub.wake_always();
        self.queue.lock().clear();
        let mut lists = self.lists.lock();
        lists.hot.clear();
        lists.candidates.clear();
        lists.queued.clear();
    }

    /// Writes `(index, readyOps)` pairs of ready keys into `out`; returns the number of pairs.
    /// `timeout`: `None` waits until something is ready or `wakeup`, `Some(ZERO)` does not wait.
    /// Every form first dispatches what the sockets and UCX have pending: a key that stays ready
    /// (an idle channel registered for OP_WRITE) must not hide the other channels' events.
    pub fn select(&self, timeout: Option<Duration>, out: &mut [i32]) -> usize {
        self.hub.poll_now();
        if timeout == Some(Duration::ZERO) {
            let n = self.collect(out);
            self.wakeup.store(false, Ordering::SeqCst);
            return n;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let n = self.collect(out);
            let woken = self.wakeup.swap(false, Ordering::SeqCst);
            if n > 0 || woken || self.closed.load(Ordering::Acquire) {
                return n;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return 0;
            }
            self.hub.wait(
                &mut || {
                    self.pending.load(Ordering::SeqCst) || self.wakeup.load(Ordering::SeqCst) || self.closed.load(Ordering::SeqCst)
                },
                deadline,
            );
        }
    }

    fn collect(&self, out: &mut [i32]) -> usize {
        let capacity = out.len() / 2;
        let mut lists = self.lists.lock();
        let Lists { hot, candidates, queued } = &mut *lists;
        std::mem::swap(hot, candidates);
        for key in candidates.iter() {
            key.collecting.store(true, Ordering::Relaxed);
        }
        if self.pending.swap(false, Ordering::SeqCst) {
            std::mem::swap(queued, &mut *self.queue.lock());
            for key in queued.drain(..) {
                key.queued.store(false, Ordering::Release);
                if !key.collecting.swap(true, Ordering::Relaxed) {
                    candidates.push(key);
                }
            }
        }
        let mut n = 0;
        for key in candidates.drain(..) {
            key.collecting.store(false, Ordering::Relaxed);
            if key.cancelled.load(Ordering::Acquire) {
                continue;
            }
            let ops = key.ready_ops();
            if ops == 0 {
                continue;
            }
            if n < capacity {
                out[2 * n] = key.index;
                out[2 * n + 1] = ops as i32;
                n += 1;
            }
            hot.push(key);
        }
        n
    }
}
