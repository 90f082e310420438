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

/// The keys of one channel, held weakly (a key holds its channel, not the other way round). The
/// first is kept inline: a channel is mostly registered with one selector, and registering a new
/// connection should cost no allocation for its list.
#[derive(Default)]
pub struct Keys {
    /// None only if `more` is empty too.
    first: Option<Weak<Key>>,
    more: Vec<Weak<Key>>,
}

impl Keys {
    /// Adds `key` (and forgets keys that are gone); returns how many there are now.
    pub fn add(&mut self, key: &Arc<Key>) -> usize {
        self.retain(|_| true);
        let key = Arc::downgrade(key);
        if self.first.is_none() {
            self.first = Some(key);
        } else {
            self.more.push(key);
        }
        self.len()
    }

    /// Removes `key` (and keys that are gone); returns how many are left.
    pub fn remove(&mut self, key: &Arc<Key>) -> usize {
        self.retain(|k| !std::ptr::eq(k.as_ptr(), Arc::as_ptr(key)));
        self.len()
    }

    /// The keys that are still there.
    pub fn live(&self) -> impl Iterator<Item = Arc<Key>> + '_ {
        self.first.iter().chain(self.more.iter()).filter_map(Weak::upgrade)
    }

    /// Tells every key that the channel may have become ready (see [`Key::notify`]).
    pub fn notify(&self) {
        for key in self.live() {
            key.notify();
        }
    }

    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    fn retain(&mut self, keep: impl Fn(&Weak<Key>) -> bool) {
        let keep = |k: &Weak<Key>| k.strong_count() > 0 && keep(k);
        self.more.retain(keep);
        if self.first.as_ref().is_some_and(|k| !keep(k)) {
            self.first = if self.more.is_empty() { None } else { Some(self.more.remove(0)) };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A channel that is never ready and keeps no keys (the list under test keeps them).
    struct Idle;

    impl Ready for Idle {
        fn ready_ops(&self) -> u32 {
            0
        }

        fn forget(&self, _: &Arc<Key>, _: &Arc<Hub>) {}
    }

    /// A selector that is gone.
    struct Gone;

    impl Queue for Gone {
        fn enqueue(&self, _: Arc<Key>) {}
    }

    fn key(index: i32) -> Arc<Key> {
        let queue: Weak<dyn Queue> = Weak::<Gone>::new();
        Arc::new(Key::new(index, OP_READ, queue, Arc::new(Idle)))
    }

    fn indexes(keys: &Keys) -> Vec<i32> {
        keys.live().map(|k| k.index).collect()
    }

    #[test]
    fn a_channels_keys_keep_their_order_through_removals_and_forget_dropped_ones() {
        let mut keys = Keys::default();
        let (a, b, c) = (key(1), key(2), key(3));
        assert_eq!(keys.add(&a), 1);
        assert_eq!(keys.add(&b), 2);
        assert_eq!(keys.add(&c), 3);
        assert_eq!(indexes(&keys), [1, 2, 3]);
        assert_eq!(keys.remove(&a), 2, "removing the inline key moves the next one up");
        assert_eq!(indexes(&keys), [2, 3]);
        drop(b);
        let d = key(4);
        assert_eq!(keys.add(&d), 2, "a key that is gone is forgotten when another comes");
        assert_eq!(indexes(&keys), [3, 4]);
        assert_eq!(keys.remove(&c), 1);
        assert_eq!(keys.remove(&d), 0);
        assert_eq!(indexes(&keys), Vec::<i32>::new());
        assert_eq!(keys.add(&a), 1, "an emptied list takes keys again");
        assert_eq!(indexes(&keys), [1]);
    }
}
