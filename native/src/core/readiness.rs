//! Readiness: the `SelectionKey` operation bits and the key that ties a channel to a selector.
//!
//! A channel whose readiness may have changed notifies its keys; a key queues itself (once) with
//! its selector, which asks the channel what it is ready for only when it selects. Channels and
//! selectors meet here through two small traits, so that neither imports the other's module.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::hub::Hub;

/// `SelectionKey` operation bits (public Java API constants).
pub const OP_READ: u32 = 1;
pub const OP_WRITE: u32 = 4;
pub const OP_CONNECT: u32 = 8;
pub const OP_ACCEPT: u32 = 16;

/// A channel as its keys see it.
pub trait Ready: Send + Sync {
    /// The operations the channel is ready for now (`OP_*` bits).
    fn ready_ops(&self) -> u32;

    /// `key`, a registration with the selector whose hub is `hub`, was cancelled: the channel
    /// forgets it.
    fn forget(&self, key: &Arc<Key>, hub: &Arc<Hub>);
}

/// Where a key goes when its channel may have become ready (its selector).
pub trait Queue: Send + Sync {
    fn enqueue(&self, key: Arc<Key>);
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
    queue: Weak<dyn Queue>,
    channel: Arc<dyn Ready>,
    /// The channel's hub when it is not the selector's own (polled as a nested hub).
    pub foreign: Mutex<Option<Arc<Hub>>>,
}

impl Key {
    pub fn new(index: i32, interest: u32, queue: Weak<dyn Queue>, channel: Arc<dyn Ready>) -> Key {
        Key {
            index,
            interest: AtomicU32::new(interest),
            queued: AtomicBool::new(false),
            collecting: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            queue,
            channel,
            foreign: Mutex::new(None),
        }
    }

    /// Queues this key for the next select if it is interested in anything.
    pub fn notify(self: &Arc<Key>) {
        // Pairs with the fence in `set_interest`: either that sees the readiness that led here, or
        // this sees the interest it set.
        fence(Ordering::SeqCst);
        if self.cancelled.load(Ordering::Acquire) || self.interest.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(queue) = self.queue.upgrade() {
            if !self.queued.swap(true, Ordering::AcqRel) {
                queue.enqueue(self.clone());
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
            if self.channel.ready_ops() & added != 0 {
                self.notify();
            }
        }
    }

    /// The operations of interest the channel is ready for.
    pub fn ready_ops(&self) -> u32 {
        self.channel.ready_ops() & self.interest.load(Ordering::Acquire)
    }

    /// Cancels the key; its channel forgets it.
    pub fn cancel(self: &Arc<Key>, hub: &Arc<Hub>) {
        self.cancelled.store(true, Ordering::Release);
        self.channel.forget(self, hub);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Taken off the queue by the selector.
    pub fn dequeued(&self) {
        self.queued.store(false, Ordering::Release);
    }

    /// Marks the key as a candidate of the select in progress; false if it was one already.
    pub fn start_collecting(&self) -> bool {
        !self.collecting.swap(true, Ordering::Relaxed)
    }

    /// The select in progress is done with the key.
    pub fn stop_collecting(&self) {
        self.collecting.store(false, Ordering::Relaxed);
    }
}
