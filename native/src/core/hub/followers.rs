//! The threads that wait on a hub while another one leads it (see [`super::Hub::wait`]). A
//! follower names the connection it waits for; after progress the leader wakes only the followers
//! of the connections that progress delivered events to (and those that named none), so that many
//! blocking channels can share one hub without each event waking all their threads. A thread that
//! changes a connection's state wakes that connection's followers itself ([`super::Hub::wake_conn`]).
//! What is not one connection's event (a listener's, a nested hub's, the leader leaving) wakes
//! every follower; followers that name no connection wake on every signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::Instant;

use parking_lot::Mutex;

/// A following thread: whether it was woken, and whether it was woken to take over the
/// leadership.
struct Parker {
    thread: Thread,
    woken: AtomicBool,
    baton: AtomicBool,
}

thread_local! {
    static PARKER: Arc<Parker> = Arc::new(Parker {
        thread: thread::current(),
        woken: AtomicBool::new(false),
        baton: AtomicBool::new(false),
    });
}

impl Parker {
    fn wake(&self) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

#[derive(Default)]
pub(super) struct Followers {
    /// Threads inside `Hub::wait` (the leader included while it decides to lead).
    count: AtomicUsize,
    /// Bumped by every signal: a follower that saw it change since it last looked does not sleep.
    generation: AtomicU64,
    /// The parked threads by the connection they wait for (0: any), so that waking the followers
    /// of a connection costs the same however many threads share the hub. No list is empty.
    parked: Mutex<HashMap<u32, Vec<Arc<Parker>>>>,
    /// The connections progress delivered events to since the last signal, and whether something
    /// else happened (only the leader adds to them).
    delivered: Mutex<Vec<u32>>,
    /// Whether `delivered` may hold ids (set after a push; a hint, read without the lock).
    listed: AtomicBool,
    other: AtomicBool,
}

impl Followers {
    pub fn enter(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    pub fn leave(&self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Progress delivered an event to connection `id`.
    pub fn delivered(&self, id: u32) {
        if self.any() {
            self.delivered.lock().push(id);
            self.listed.store(true, Ordering::Relaxed);
        }
    }

    /// Progress did something that is not one connection's event.
    pub fn other(&self) {
        self.other.store(true, Ordering::SeqCst);
    }

    /// After progress: wakes the followers of the connections it delivered events to, those that
    /// wait for no connection in particular, and all of them if something else happened.
    pub fn signal(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        // Without followers (a thread that waits alone) flag and list are only read: that spares
        // the locked instructions. The list is emptied once something was recorded in it (while a
        // follower waited), so that it cannot grow.
        let all = self.other.load(Ordering::SeqCst) && self.other.swap(false, Ordering::SeqCst);
        if !self.any() {
            if self.listed.load(Ordering::Relaxed) {
                self.listed.store(false, Ordering::Relaxed);
                self.delivered.lock().clear();
            }
            return;
        }
        let mut delivered = self.delivered.lock();
        let parked = self.parked.lock();
        if all {
            parked.values().flatten().for_each(|p| p.wake());
        } else {
            for key in std::iter::once(&0).chain(delivered.iter()) {
                parked.get(key).into_iter().flatten().for_each(|p| p.wake());
            }
        }
        drop(parked);
        delivered.clear();
        self.listed.store(false, Ordering::Relaxed);
    }

    /// Wakes the followers of connection `id` (and those that wait for no connection in
    /// particular): another thread changed what they wait for.
    pub fn wake_key(&self, id: u32) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if self.any() {
            let parked = self.parked.lock();
            for key in [0, id] {
                parked.get(&key).into_iter().flatten().for_each(|p| p.wake());
            }
        }
    }

    /// The leadership is free: wakes one follower to take it. One that leaves without leading
    /// (its condition held, or its deadline passed) hands it on ([`Followers::passed_on`]).
    pub fn hand_over(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if self.any() {
            if let Some(next) = self.parked.lock().values().find_map(|parkers| parkers.first()) {
                next.baton.store(true, Ordering::SeqCst);
                next.wake();
            }
        }
    }

    /// Called by a waiting thread that takes the leadership or leaves: whether it had been
    /// handed the leadership (then, leaving, it must hand it over in turn).
    pub fn had_baton(&self) -> bool {
        // Read first: taking the baton is rare, and a swap is a locked instruction each wait.
        PARKER.with(|me| me.baton.load(Ordering::SeqCst) && me.baton.swap(false, Ordering::SeqCst))
    }

    /// Wakes every follower: their conditions may have changed.
    pub fn signal_all(&self) {
        self.other();
        self.signal();
    }

    /// Sleeps until woken, `deadline`, or a signal since the generation `seen` (a follower waiting
    /// for connection `key`, 0 for none).
    pub fn follow(&self, key: u32, seen: u64, deadline: Option<Instant>) {
        PARKER.with(|me| {
            me.woken.store(false, Ordering::SeqCst);
            self.parked.lock().entry(key).or_default().push(me.clone());
            while !me.woken.load(Ordering::SeqCst) && self.generation() == seen {
                match deadline {
                    Some(d) => {
                        let now = Instant::now();
                        if now >= d {
                            break;
                        }
                        thread::park_timeout(d - now);
                    }
                    None => thread::park(),
                }
            }
            let mut parked = self.parked.lock();
            if let Some(parkers) = parked.get_mut(&key) {
                if let Some(at) = parkers.iter().position(|p| Arc::ptr_eq(p, me)) {
                    parkers.swap_remove(at);
                }
                if parkers.is_empty() {
                    parked.remove(&key);
                }
            }
        });
    }
}
