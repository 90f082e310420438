//! The native half of a `Selector`: registrations (keys), the queue of keys whose channel may
//! have become ready, and the select loop.
//!
//! A channel that may have changed readiness queues its keys (once each). `select` looks only at
//! queued keys and at the keys it reported ready last time (readiness is level-triggered, as with
//! the JDK), so its cost is proportional to the number of ready channels, not registered ones.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::conn::Conn;
use super::error::Result;
use super::hub::Hub;
use super::listener::Listener;
use super::readiness::{Key, Queue, Ready};
use crate::config::Settings;

/// The channel of a registration.
pub enum Target {
    Conn(Arc<Conn>),
    Listener(Arc<Listener>),
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
    /// A selector working with `settings`.
    pub fn open(settings: &'static Settings) -> std::io::Result<Arc<Selector>> {
        Ok(Arc::new(Selector {
            hub: Hub::new_for_selector(settings)?,
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

    /// Registers a channel; its connection is bound to this selector's hub if it has none yet.
    pub fn register(self: &Arc<Selector>, target: Target, index: i32, interest: u32) -> Result<Arc<Key>> {
        let channel: Arc<dyn Ready> = match &target {
            Target::Conn(conn) => conn.clone(),
            Target::Listener(listener) => listener.clone(),
        };
        let key = Arc::new(Key::new(index, interest, Arc::<Selector>::downgrade(self), channel));
        match &target {
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
        key.cancel(&self.hub);
        if let Some(hub) = key.foreign.lock().take() {
            self.hub.remove_nested(&hub);
        }
        self.lists.lock().hot.retain(|k| !Arc::ptr_eq(k, key));
    }

    /// Makes a blocked or the next select return at once. Threads that call it while an earlier
    /// wakeup is still pending leave the hub alone: that caller wakes it, or the select sees the
    /// flag before it sleeps.
    pub fn wakeup(&self) {
        if !self.wakeup.swap(true, Ordering::SeqCst) {
            self.hub.wake();
        }
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
                None,
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
            key.start_collecting();
        }
        if self.pending.swap(false, Ordering::SeqCst) {
            std::mem::swap(queued, &mut *self.queue.lock());
            for key in queued.drain(..) {
                key.dequeued();
                if key.start_collecting() {
                    candidates.push(key);
                }
            }
        }
        let mut n = 0;
        for key in candidates.drain(..) {
            key.stop_collecting();
            if key.is_cancelled() {
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

impl Queue for Selector {
    fn enqueue(&self, key: Arc<Key>) {
        self.queue.lock().push(key);
        self.pending.store(true, Ordering::SeqCst);
        self.hub.wake();
    }
}
