//! The background thread: progresses hubs that have work nobody else may do, closes sockets
//! gracefully and tells channels when the times they asked for come.

use std::cmp::{Ordering as Order, Reverse};
use std::collections::BinaryHeap;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::warn;
use parking_lot::{Condvar, Mutex};

use super::hub::{Events, Hub};
use crate::net::socket::Socket;

/// A time a channel asked for (ordered by the time alone).
struct Timer {
    at: Instant,
    channel: Weak<dyn Events>,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Timer) -> bool {
        self.at == other.at
    }
}

impl Eq for Timer {}

impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Timer) -> Option<Order> {
        Some(self.cmp(other))
    }
}

impl Ord for Timer {
    fn cmp(&self, other: &Timer) -> Order {
        self.at.cmp(&other.at)
    }
}

/// How often the background thread looks at hubs with data waiting to go out.
const OWNER_AWAY_TICK: Duration = Duration::from_millis(1);

/// How often the background thread asks each connection of an adopted hub whether it still has
/// data waiting while an application thread progresses the hub. That thread sends the data
/// itself; asking lets connections that are done (closed ones among them) go.
const OWNED_SCAN_INTERVAL: Duration = Duration::from_millis(50);

/// How late the background thread may tell a channel of its time, so that the times of
/// connections opened together come in one wake-up (a client's looks for a stream, say, at
/// doubling ages of each of a hundred connections opened within milliseconds).
const TIMER_SLACK: Duration = Duration::from_millis(5);

/// How long a closed connection's socket waits for the peer to close as well.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads and drops what is available; true when the peer closed (or the socket failed).
fn drain(socket: &Socket) -> bool {
    let mut scratch = [0u8; 4096];
    loop {
        match socket.recv(&mut scratch, false) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Drops the first timers while their channels are gone: the thread does not wake for them. With
/// a connection per request, most connections close long before the times they asked for.
fn drop_dead_timers(timers: &mut BinaryHeap<Reverse<Timer>>) {
    while timers.peek().is_some_and(|Reverse(timer)| timer.channel.strong_count() == 0) {
        timers.pop();
    }
}

/// The background thread: progresses hubs that have work nobody else may do (staged data of
/// channels whose threads are busy elsewhere, lingering closes), but only a hub that no
/// application thread has progressed for [`OWNER_AWAY`](super::hub::OWNER_AWAY). It sleeps in an
/// epoll set that nests the epoll sets of the blocking channels' hubs, so it wakes on their events
/// and uses no CPU otherwise; selector hubs are not nested (their events belong to the selector's thread). While
/// any hub has data waiting, it looks every [`OWNER_AWAY_TICK`].
pub struct Background {
    hub: Arc<Hub>,
    incoming: Mutex<Vec<Arc<Hub>>>,
    /// Closed connections' sockets, half-closed, drained until the peer closes too.
    closing: Mutex<Vec<(Socket, Instant)>>,
    /// Channels to tell when a time comes ([`Events::on_deadline`]).
    timers: Mutex<BinaryHeap<Reverse<Timer>>>,
    changed: AtomicBool,
    idle: Condvar,
    idle_lock: Mutex<()>,
}

static BACKGROUND: OnceLock<Arc<Background>> = OnceLock::new();
static BACKGROUND_START: Mutex<()> = Mutex::new(());

/// Creates the background hub and starts its thread unless done already. The library does it when
/// it is initialised: later, at the file descriptor limit, its epoll and eventfd could not be had.
pub fn start_background() -> std::io::Result<&'static Arc<Background>> {
    if let Some(background) = BACKGROUND.get() {
        return Ok(background);
    }
    let _guard = BACKGROUND_START.lock();
    if let Some(background) = BACKGROUND.get() {
        return Ok(background);
    }
    let hub = Hub::new_background()?;
    let background = BACKGROUND.get_or_init(|| {
        Arc::new(Background {
            hub,
            incoming: Mutex::default(),
            closing: Mutex::default(),
            timers: Mutex::default(),
            changed: AtomicBool::new(false),
            idle: Condvar::new(),
            idle_lock: Mutex::new(()),
        })
    });
    let worker = background.clone();
    let spawned = std::thread::Builder::new().name("hadronio-background".into()).spawn(move || worker.run());
    if let Err(e) = spawned {
        warn!("could not start the hadronio-background thread: {e}");
    }
    Ok(background)
}

/// The background thread ([`start_background`] created it when the library was initialised).
pub fn background() -> &'static Arc<Background> {
    match start_background() {
        Ok(background) => background,
        Err(e) => panic!("cannot create the background hub: {e}"),
    }
}

impl Background {
    /// Progresses `hub` while it has work nobody else may do (see [`Hub::linger`],
    /// [`Hub::watch_pending`], [`Hub::bury`]).
    pub fn adopt(&self, hub: Arc<Hub>) {
        if !hub.mark_adopted() {
            return;
        }
        self.incoming.lock().push(hub);
        self.changed.store(true, Ordering::SeqCst);
        self.hub.wake_always();
        let _guard = self.idle_lock.lock();
        self.idle.notify_one();
    }

    /// Closes a socket gracefully: FIN after the data already written, then reads (and drops)
    /// whatever the peer still sends until it closes as well. Closing with unread bytes in the
    /// receive queue would make the kernel reset the connection and discard our unsent data.
    pub fn close_gracefully(&self, socket: Socket) {
        let _ = socket.shutdown(std::net::Shutdown::Write);
        if drain(&socket) {
            return;
        }
        if self.hub.watch_closing(socket.as_raw_fd()).is_err() {
            return;
        }
        self.closing.lock().push((socket, Instant::now() + CLOSE_TIMEOUT));
        self.changed.store(true, Ordering::SeqCst);
        self.hub.wake_always();
        let _guard = self.idle_lock.lock();
        self.idle.notify_one();
    }

    /// Calls `channel`'s [`Events::on_deadline`] at `at` (or soon after).
    pub fn wake_at(&self, at: Instant, channel: Weak<dyn Events>) {
        {
            let mut timers = self.timers.lock();
            drop_dead_timers(&mut timers);
            // A timer that is due no sooner than one already there needs no wake: the thread
            // wakes for the earlier one and then sees it (every connection asks for one).
            let later = timers.peek().is_some_and(|Reverse(first)| first.at <= at);
            timers.push(Reverse(Timer { at, channel }));
            if later {
                return;
            }
        }
        self.changed.store(true, Ordering::SeqCst);
        self.hub.wake_always();
        let _guard = self.idle_lock.lock();
        self.idle.notify_one();
    }

    /// Tells the connections whose time came; returns the next time asked for.
    fn fire_timers(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut due = Vec::new();
        let next = {
            let mut timers = self.timers.lock();
            while timers.peek().is_some_and(|Reverse(timer)| timer.at <= now) {
                if let Some(Reverse(timer)) = timers.pop() {
                    due.push(timer.channel);
                }
            }
            drop_dead_timers(&mut timers);
            timers.peek().map(|Reverse(timer)| timer.at)
        };
        for conn in due.iter().filter_map(Weak::upgrade) {
            conn.on_deadline();
        }
        next
    }

    /// Drains the half-closed sockets; drops those whose peer closed or that waited too long.
    fn drain_closing(&self) -> bool {
        let mut closing = self.closing.lock();
        let now = Instant::now();
        closing.retain(|(socket, deadline)| {
            let done = drain(socket) || now >= *deadline;
            if done {
                self.hub.unwatch_closing(socket.as_raw_fd());
            }
            !done
        });
        !closing.is_empty()
    }

    fn run(&self) {
        // Adopted hubs, with when their connections were last asked.
        let mut adopted: Vec<(Arc<Hub>, Instant)> = Vec::new();
        loop {
            let closing = self.drain_closing();
            let next_timer = self.fire_timers();
            let until_timer = next_timer.map(|at| at.saturating_duration_since(Instant::now()) + TIMER_SLACK);
            for hub in std::mem::take(&mut *self.incoming.lock()) {
                if !adopted.iter().any(|(h, _)| Arc::ptr_eq(h, &hub)) {
                    // A selector hub's events belong to the selector's thread: not nested.
                    if !hub.is_selector() {
                        if let Err(e) = self.hub.add_nested(&hub) {
                            warn!("background thread cannot watch hub {}: {e}", hub.serial());
                        }
                    }
                    adopted.push((hub, Instant::now()));
                }
            }
            self.changed.store(false, Ordering::SeqCst);
            for (hub, _) in &adopted {
                hub.poll_for_background();
            }
            let now = Instant::now();
            adopted.retain_mut(|(hub, asked)| {
                // Asking is a lock and a look per connection: every tick only while nobody else
                // progresses the hub.
                if !hub.owner_away() && now.duration_since(*asked) < OWNED_SCAN_INTERVAL {
                    return true;
                }
                *asked = now;
                if hub.needs_background() || !hub.release_adoption() {
                    return true;
                }
                if !hub.is_selector() {
                    self.hub.remove_nested(hub);
                }
                false
            });
            if adopted.is_empty() && !closing {
                let mut guard = self.idle_lock.lock();
                if self.incoming.lock().is_empty() && self.closing.lock().is_empty() && !self.changed.load(Ordering::SeqCst) {
                    self.idle.wait_for(&mut guard, until_timer.map_or(Duration::from_secs(1), |t| t.min(Duration::from_secs(1))));
                }
                continue;
            }
            let tick = if adopted.is_empty() { Duration::from_millis(10) } else { OWNER_AWAY_TICK };
            let tick = until_timer.map_or(tick, |t| t.min(tick));
            self.hub.wait(None, &mut || self.changed.load(Ordering::SeqCst), Some(Instant::now() + tick));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Channel;

    impl Events for Channel {
        fn on_io_event(&self, _events: u32) {}
    }

    #[test]
    fn timers_of_channels_gone_do_not_wake_the_thread() {
        let now = Instant::now();
        let live: Arc<dyn Events> = Arc::new(Channel);
        let mut timers = BinaryHeap::new();
        for ms in [1, 2] {
            let gone: Arc<dyn Events> = Arc::new(Channel);
            timers.push(Reverse(Timer { at: now + Duration::from_millis(ms), channel: Arc::downgrade(&gone) }));
        }
        timers.push(Reverse(Timer { at: now + Duration::from_millis(3), channel: Arc::downgrade(&live) }));
        let gone: Arc<dyn Events> = Arc::new(Channel);
        timers.push(Reverse(Timer { at: now + Duration::from_millis(4), channel: Arc::downgrade(&gone) }));
        drop_dead_timers(&mut timers);
        // The first two went; the live one is next, and the dead one behind it waits its turn.
        assert_eq!(timers.len(), 2);
        assert_eq!(timers.peek().map(|Reverse(t)| t.at), Some(now + Duration::from_millis(3)));
        drop(gone);
        timers.pop();
        drop_dead_timers(&mut timers);
        assert!(timers.is_empty());
    }
}
