//! A list behind a mutex whose length is mirrored in an atomic: the hub's hot paths ask whether
//! there is anything to do (buried links, lingering closes, nested hubs) without the lock.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

pub(super) struct Listed<T> {
    items: Mutex<Vec<T>>,
    len: AtomicUsize,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed { items: Mutex::new(Vec::new()), len: AtomicUsize::new(0) }
    }
}

impl<T> Listed<T> {
    /// Whether the list was empty when last changed; no lock taken.
    pub(super) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    pub(super) fn push(&self, item: T) {
        self.with(|items| items.push(item));
    }

    /// Runs `f` on the list under its lock; the mirrored length follows what `f` did.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Vec<T>) -> R) -> R {
        let mut items = self.items.lock();
        let result = f(&mut items);
        self.len.store(items.len(), Ordering::Release);
        result
    }

    /// Takes every item out (to work on them without the lock; `extend` puts back the ones
    /// that stay).
    pub(super) fn take(&self) -> Vec<T> {
        self.with(std::mem::take)
    }

    pub(super) fn extend(&self, items: Vec<T>) {
        self.with(|list| list.extend(items));
    }
}

#[cfg(test)]
mod tests {
    use super::Listed;

    #[test]
    fn the_mirror_follows_every_change() {
        let list = Listed::default();
        assert!(list.is_empty());
        list.push(1);
        list.push(2);
        assert!(!list.is_empty());
        let taken = list.take();
        assert!(list.is_empty());
        list.extend(taken);
        list.with(|items| items.retain(|&i| i == 2));
        assert!(!list.is_empty());
        list.with(Vec::clear);
        assert!(list.is_empty());
    }
}
