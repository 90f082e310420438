//! What makes the background thread progress a hub: lingering closes, channels with data to
//! send, and an owner that stays away.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{channel_key, Events, Hub, OWNER_AWAY};

impl Hub {
    /// Keeps a closed connection alive until its remaining data is delivered (the background
    /// thread adopts the hub for it).
    pub fn linger(&self, conn: Arc<dyn Events>) {
        self.lingering.push(conn);
        self.wake();
    }

    /// Makes sure staged data of `conn` goes out even if no thread uses the hub: the background
    /// thread (which adopts the hub for it) progresses the hub until the connection has nothing
    /// pending.
    ///
    /// A selector's hub is progressed by its own thread whenever it selects; the background
    /// thread steps in only while that thread stays away from `select` (busy in application code
    /// or blocked elsewhere), as the kernel sends written bytes whatever the application does.
    pub fn watch_pending(&self, conn: Arc<dyn Events>) {
        self.table.pending.lock().entry(channel_key(&conn)).or_insert(conn);
    }

    /// Records that an application thread progressed this hub (it selects on it, directly or
    /// nested, or waits in a blocking call).
    pub(super) fn note_progressed(&self, now: Instant) {
        self.times.progressed_ns.store(now.saturating_duration_since(self.times.created).as_nanos() as u64, Ordering::Relaxed);
    }

    /// Marks the hub as adopted by the background thread; false if it already was, so that
    /// adopting again costs no wake-up. Whatever made the hub need the background (a pending,
    /// lingering or buried connection) must be recorded before this is asked.
    pub(in crate::core) fn mark_adopted(&self) -> bool {
        !self.adopted.swap(true, Ordering::SeqCst)
    }

    /// Lets the background thread go of the hub unless it needs it again: clears the mark, then
    /// looks once more, since a connection may have been recorded in between by a thread that
    /// still saw the mark (and so did not adopt the hub again). True if the hub was let go.
    pub(in crate::core) fn release_adoption(&self) -> bool {
        self.adopted.store(false, Ordering::SeqCst);
        if self.needs_background() {
            self.adopted.store(true, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Whether no application thread has progressed this hub for [`OWNER_AWAY`]. (A thread
    /// waiting in it holds the leadership, which keeps the background thread out anyway.)
    pub(in crate::core) fn owner_away(&self) -> bool {
        let last = Duration::from_nanos(self.times.progressed_ns.load(Ordering::Relaxed));
        self.times.created.elapsed().saturating_sub(last) >= OWNER_AWAY
    }

    pub(super) fn progress_lingering(&self) {
        let mut list = self.lingering.take();
        list.retain(|conn| !conn.linger_step());
        self.lingering.extend(list);
    }

    /// Whether the background thread still has to progress this hub. Channels whose data all
    /// went leave the watch list; the list is not replaced wholesale, because a channel may join
    /// it (or ask again) while the others are looked at, without its own thread coming back.
    pub(in crate::core) fn needs_background(&self) -> bool {
        let watched: Vec<(usize, Arc<dyn Events>)> = self.table.pending.lock().iter().map(|(&k, c)| (k, c.clone())).collect();
        let done: HashSet<usize> = watched.into_iter().filter(|(_, c)| !c.has_pending_tx()).map(|(k, _)| k).collect();
        let mut pending = self.table.pending.lock();
        pending.retain(|k, c| c.wants_watching() || !done.contains(k));
        let busy = !pending.is_empty();
        drop(pending);
        busy || !self.lingering.is_empty() || !self.graveyard.is_empty()
    }
}
