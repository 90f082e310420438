//! A hub is where connections make progress and where threads wait: one UCX worker (if UCX is
//! available), one epoll set holding the worker's event fd, the TCP sockets of its connections
//! and listeners and a wake-up eventfd, plus the waiting protocol.
//!
//! A selector owns one hub; channels used in blocking mode get one from [`super::blocking`]
//! (their own, or beyond a limit one they share).
//!
//! **Waiting.** A thread that must wait for a condition becomes the hub's *leader* (a mutex) or
//! follows it (`followers.rs`). The leader progresses UCX, spins while that pays (see
//! [`spin`]) and then sleeps in `epoll_wait`; after progress it wakes the followers whose
//! connections it delivered events to, and when it leaves it hands the leadership to one of them.
//! Lock order: leader → connection state → worker → touched list.
//!
//! Files: this one holds the hub, its lanes, its channels and progress; `wait.rs` the leader's
//! loop, `followers.rs` the followers, `adoption.rs` what the background thread does for a hub,
//! `listed.rs` the lists whose emptiness the hot paths ask without a lock.

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use log::{debug, warn};
use parking_lot::{Mutex, MutexGuard};

use super::identity::Locality;
use followers::Followers;
use listed::Listed;
use super::lanes::{self, Kind, Lane, Lanes, LinkSink, Tuning};
use super::link::{Link, Shared};
use super::spin;
use crate::config::Settings;
use crate::net::poller::{self, Epoll, Event, EventFd};


mod followers;
mod listed;
mod adoption;
mod wait;

const TOKEN_WAKE: u64 = 1 << 56;
const TOKEN_UCX: u64 = 2 << 56;
const TOKEN_CONN: u64 = 3 << 56;
const TOKEN_LISTENER: u64 = 4 << 56;
const TOKEN_NESTED: u64 = 5 << 56;
const TOKEN_CLOSING: u64 = 6 << 56;
const TOKEN_KIND: u64 = 0xFF << 56;

/// What the epoll set hears of a connection's socket.
const CONN_EVENTS: u32 = poller::READABLE | poller::WRITABLE | poller::HANGUP | poller::URGENT | poller::EDGE;

static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Connection and listener ids (also UCX tag ids), unique in the process so that a worker that
/// moves to another hub never sees an id again whose messages may still arrive.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// How long a torn-down link may wait for UCX to end its requests before they are left to the
/// worker (the peer vanished in the middle of a message).
const GRAVE_LIMIT: Duration = Duration::from_secs(5);

/// How often a waiting thread looks at buried links and lingering closes while there are any.
const GRAVE_CHECK: Duration = Duration::from_millis(50);

/// Bounds of a sleep with a stuck worker; it doubles while the worker stays stuck. A worker is
/// stuck mostly because a peer's receive ring is full (its sends wait in UCX until that peer
/// reads), and the peer often waits for this very core: the first sleeps are short, so that the
/// sends go out soon after it has read, and each gives the core away.
const STUCK_SLEEP_MIN: Duration = Duration::from_micros(20);
const STUCK_SLEEP_MAX: Duration = Duration::from_millis(100);

/// How long a hub may go without progress by an application thread (selecting on it or on a
/// selector it is nested in, or waiting in a blocking call) before the background thread steps in.
pub(super) const OWNER_AWAY: Duration = Duration::from_millis(2);

thread_local! {
    /// The connection ids a progress call of this thread takes from a lane's touched list, kept
    /// between calls for its capacity: a spare without a lock, since only this thread uses it.
    static TOUCHED: Cell<Vec<u32>> = const { Cell::new(Vec::new()) };
    /// The same for the nested hubs a call of this thread works on without holding their list.
    static NESTED: Cell<Vec<Arc<Hub>>> = const { Cell::new(Vec::new()) };
}

/// Minimum interval between socket event checks of non-blocking progress.
const DISPATCH_INTERVAL: Duration = Duration::from_micros(20);

/// What a hub and the background thread tell the channels registered with them: connections and
/// listeners implement it, and the hub knows them only through it (core/ depends one way, the
/// channels on the hub). Every call runs without the hub's locks held.
pub trait Events: Send + Sync {
    /// The channel's socket reported `events` ([`poller`] bits).
    fn on_io_event(&self, events: u32);

    /// UCX completed something for the channel.
    fn on_ucx_event(&self) {}

    /// A time the channel asked for with `Background::wake_at` (background.rs) has come.
    fn on_deadline(&self) {}

    /// The lane the channel asked for with [`Hub::open_lane_later`] was opened (or failed to).
    fn on_lane(&self) {}

    /// One step of a lingering close ([`Hub::linger`]); true when the channel is done.
    fn linger_step(&self) -> bool {
        true
    }

    /// Whether the channel still has data for the hub to send ([`Hub::watch_pending`]); a
    /// channel that says no stops asking to be watched.
    fn has_pending_tx(&self) -> bool {
        false
    }

    /// Whether the channel asks to be watched (again: it may have written after
    /// [`Events::has_pending_tx`] said no).
    fn wants_watching(&self) -> bool {
        false
    }
}

/// What tells channels apart: the data pointer (vtables of one type may differ between units).
fn channel_key(channel: &Arc<dyn Events>) -> usize {
    Arc::as_ptr(channel) as *const () as usize
}

pub struct Hub {
    pub serial: u64,
    /// Torn-down links whose sends are still in flight, with when they were buried. Dropped first
    /// (fields drop in order).
    graveyard: Listed<(Link, Instant)>,
    /// The UCX workers, opened when a connection first needs one (none without UCX).
    lanes: Option<Lanes>,
    epoll: Epoll,
    wake: EventFd,
    waiting: Waiting,
    table: Table,
    /// Hubs nested in this one (a blocking channel's hub whose channel was registered with this
    /// hub's selector), each with how often it was added.
    nested: Listed<(Arc<Hub>, usize)>,
    /// Closed connections whose data is still being delivered.
    lingering: Listed<Arc<dyn Events>>,
    /// The background thread has this hub among its adopted ones (or is about to).
    adopted: AtomicBool,
    owner: Owner,
    times: Times,
}

/// Who progresses a hub.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    /// The threads of channels used in blocking mode.
    Blocking,
    /// A selector's thread.
    Selector,
    /// The background thread: it progresses nested hubs only while their owners are away.
    Background,
}

/// The waiting protocol: one leader, the threads that follow it, and whether to spin.
struct Waiting {
    leader: Mutex<()>,
    /// The connection the leader waits for (0: none in particular, as a selector's thread).
    leader_key: AtomicU32,
    sleeping: AtomicBool,
    /// Whether a nested hub reported events that another thread's leadership kept this one
    /// from dispatching (see [`Hub::poll_nested_events`]).
    nested_owed: AtomicBool,
    /// Whether spinning has been paying off on this hub (see [`spin::Governor`]).
    governor: spin::Governor,
    /// The threads that wait while another one leads.
    followers: Followers,
}

/// The channels and links of a hub, by id.
#[derive(Default)]
struct Table {
    conns: Mutex<HashMap<u32, Weak<dyn Events>>>,
    links: Arc<Mutex<HashMap<u32, Arc<Shared>>>>,
    listeners: Mutex<HashMap<u32, Weak<dyn Events>>>,
    /// Channels with data to send whatever their threads do, by [`channel_key`].
    pending: Mutex<HashMap<usize, Arc<dyn Events>>>,
}

/// When things last happened on a hub, as nanoseconds since `created` where threads race.
struct Times {
    created: Instant,
    /// When a thread other than the background thread last progressed this hub.
    progressed_ns: AtomicU64,
    /// When the last `epoll_wait` that returned every ready event began (0: never): socket
    /// events older than that have been handled.
    socket_events_ns: AtomicU64,
    last_dispatch: Mutex<Instant>,
}

impl Hub {
    /// A hub for channels used in blocking mode (see [`super::blocking`]): with a UCX worker when
    /// UCX is enabled and available, TCP-only otherwise.
    pub fn new(settings: &Settings, ucx: bool) -> std::io::Result<Arc<Hub>> {
        Hub::create(Some(settings).filter(|_| ucx), settings.spin_ns, Owner::Blocking)
    }

    /// The hub of a selector.
    pub fn new_for_selector(settings: &Settings) -> std::io::Result<Arc<Hub>> {
        Hub::create(Some(settings), settings.spin_ns, Owner::Selector)
    }

    /// The hub of the background thread: no UCX worker, no spinning.
    pub(super) fn new_background() -> std::io::Result<Arc<Hub>> {
        Hub::create(None, 0, Owner::Background)
    }

    /// A hub with UCX workers as `ucx` allows (none without), spinning at most `spin_ns`.
    fn create(ucx: Option<&Settings>, spin_ns: u64, owner: Owner) -> std::io::Result<Arc<Hub>> {
        let epoll = Epoll::new()?;
        let wake = EventFd::new()?;
        epoll.add(wake.as_raw_fd(), poller::READABLE, TOKEN_WAKE)?;
        let links: Arc<Mutex<HashMap<u32, Arc<Shared>>>> = Arc::default();
        // Without a UCX context (it said why, once) every connection stays on TCP. One that is
        // still being made counts: the first lane to open waits for it.
        let ucx = ucx.filter(|s| s.upgrade.ucx && lanes::failure(Kind::Full).is_none());
        let lanes = ucx.map(|s| {
            let table = links.clone();
            let sink: Arc<LinkSink> = Arc::new(move |id, notice| {
                if log::log_enabled!(log::Level::Trace) {
                    log::trace!("notice for link {id}: {notice:?}");
                }
                if let Some(shared) = table.lock().get(&id) {
                    shared.on_notice(notice);
                }
            });
            Lanes::new(owner == Owner::Selector, Tuning::of(s), sink)
        });
        let hub = Arc::new(Hub {
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            graveyard: Listed::default(),
            lanes,
            epoll,
            wake,
            waiting: Waiting {
                leader: Mutex::new(()),
                leader_key: AtomicU32::new(0),
                sleeping: AtomicBool::new(false),
                nested_owed: AtomicBool::new(false),
                governor: spin::Governor::new(spin_ns),
                followers: Followers::default(),
            },
            table: Table { links, ..Table::default() },
            nested: Listed::default(),
            lingering: Listed::default(),
            adopted: AtomicBool::new(false),
            owner,
            times: Times {
                created: Instant::now(),
                progressed_ns: AtomicU64::new(0),
                socket_events_ns: AtomicU64::new(0),
                last_dispatch: Mutex::new(Instant::now()),
            },
        });
        // A blocking channel's hub serves its peer on its main lane: it opens now, so that the
        // upgrade goes through in the channel's first round trips. With a kept worker that is at
        // once; without one, making a worker takes milliseconds (the process's first, with the
        // UCX context, tens), and the lane opens on the hadronio-lanes thread while the channel's
        // first bytes go over TCP instead of waiting for it. A selector's lanes open when
        // connections need them, on that thread too if no worker is ready.
        if owner != Owner::Selector && hub.lanes.is_some() {
            let later = !hub.lane_is_open(Locality::Remote) && hub.open_lane_later(Locality::Remote, None);
            if !later {
                if let Err(e) = hub.lane(Locality::Remote) {
                    warn!("no UCX worker, connections stay on TCP: {e}");
                }
            }
        }
        Ok(hub)
    }

    /// How many connections are bound to this hub.
    pub fn connections(&self) -> usize {
        self.table.conns.lock().len()
    }

    /// Notes that channels of several peers share this blocking channel's hub: from now on each
    /// other process on this host gets a lane of its own, as on a selector's hub.
    pub fn shared_by_channels(&self) {
        if let Some(lanes) = &self.lanes {
            lanes.separate_processes();
        }
    }

    /// Whether this is the hub of channels in blocking mode that more than one channel shares:
    /// its threads take turns progressing it, and a message for one wakes the leader first.
    pub fn shared_by_threads(&self) -> bool {
        self.owner == Owner::Blocking && self.connections() > 1
    }

    pub fn is_selector(&self) -> bool {
        self.owner == Owner::Selector
    }

    /// Whether connections of this hub can upgrade to UCX.
    pub fn has_ucx(&self) -> bool {
        self.lanes.is_some()
    }

    /// The lane for a connection whose peer runs at `locality` (see [`Lanes`]), opened if needed.
    pub fn lane(&self, locality: Locality) -> Result<Arc<Lane>, String> {
        let Some(lanes) = &self.lanes else { return Err(String::from("UCX unavailable on this side")) };
        // Edge-triggered: a worker that cannot be armed (sends waiting for a full peer ring) keeps
        // signals of earlier wake-ups unread, and a level-triggered fd would then end every
        // sleep at once. A worker signals only after it was armed, and arming drains what came
        // before, so no wake-up that matters is lost.
        lanes.lane(locality, |fd| self.epoll.add(fd, poller::READABLE | poller::EDGE, TOKEN_UCX))
    }

    /// Whether the lane for a peer at `locality` can be had at once (see [`Lanes::is_open`]).
    pub fn lane_is_open(&self, locality: Locality) -> bool {
        self.lanes.as_ref().is_none_or(|lanes| lanes.is_open(locality))
    }

    /// Opens the lane for a peer at `locality` on the `hadronio-lanes` thread, then tells `channel`
    /// ([`Events::on_lane`]), if any, whether or not the lane could be opened. A new lane creates
    /// a UCX worker, which takes milliseconds: the thread that asked (a selector's, with other
    /// channels to serve, or one whose first bytes already flow over TCP) goes on meanwhile.
    /// False if that thread could not be started.
    pub fn open_lane_later(self: &Arc<Self>, locality: Locality, channel: Option<Weak<dyn Events>>) -> bool {
        let hub = Arc::downgrade(self);
        lanes::later(Box::new(move || {
            // A hub that went meanwhile (its channels closed, a channel's with it) needs no lane:
            // no worker is made for it.
            let Some(hub) = hub.upgrade() else { return };
            // The channel is told in any case: its negotiation waits for the answer. The lane is
            // held until then: a lane nobody holds is closed as idle.
            let lane = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hub.lane(locality))) {
                Ok(Ok(lane)) => Some(lane),
                Ok(Err(e)) if channel.is_none() => {
                    warn!("no UCX worker, connections stay on TCP: {e}");
                    None
                }
                Ok(Err(e)) => {
                    debug!("opening a lane for a peer at {locality:?}: {e}");
                    None
                }
                Err(_) => {
                    warn!("opening a lane for a peer at {locality:?} panicked");
                    None
                }
            };
            if let Some(channel) = channel.and_then(|channel| channel.upgrade()) {
                channel.on_lane();
            }
            drop(lane);
        }))
    }

    /// The lane of peers on other hosts and in this process, if open.
    pub fn main_lane(&self) -> Option<&Arc<Lane>> {
        self.lanes.as_ref().and_then(Lanes::main)
    }

    /// Calls `f` with every lane of this hub until it returns false.
    fn each_lane(&self, f: impl FnMut(&Lane) -> bool) {
        if let Some(lanes) = &self.lanes {
            lanes.each(f);
        }
    }

    /// Keeps a torn-down link until its in-flight sends complete. True if the background
    /// thread must progress the hub for it (`Background::adopt`, background.rs): a selector's
    /// thread does that itself.
    #[must_use]
    pub fn bury(&self, link: Link) -> bool {
        self.graveyard.push((link, Instant::now()));
        self.owner != Owner::Selector
    }

    /// Watches a closing socket (its events only wake the hub).
    pub(super) fn watch_closing(&self, fd: RawFd) -> std::io::Result<()> {
        self.epoll.add(fd, poller::READABLE | poller::HANGUP | poller::EDGE, TOKEN_CLOSING)
    }

    pub(super) fn unwatch_closing(&self, fd: RawFd) {
        let _ = self.epoll.delete(fd);
    }

    pub(super) fn serial(&self) -> u64 {
        self.serial
    }

    fn next_id(&self) -> u32 {
        loop {
            let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            if id != 0 && !self.table.conns.lock().contains_key(&id) {
                return id;
            }
        }
    }

    /// Adds a connection's socket to the epoll set; returns the connection's id on this hub
    /// (also its UCX tag id).
    pub fn register_conn(&self, conn: Weak<dyn Events>, fd: RawFd) -> std::io::Result<u32> {
        let id = self.next_id();
        self.table.conns.lock().insert(id, conn);
        if let Err(e) = self.epoll.add(fd, CONN_EVENTS, TOKEN_CONN | id as u64) {
            self.table.conns.lock().remove(&id);
            return Err(e);
        }
        Ok(id)
    }

    /// Whether this hub's epoll set hears of bytes arriving on a connection's socket. A blocking
    /// read that waits in the kernel's `recv` learns of them there, and each arrival would
    /// otherwise also wake the thread that leads this hub, which may serve other connections.
    /// (The kernel tells of arriving bytes as readable and urgent at once: listening for either
    /// wakes the hub.)
    pub fn watch_reads(&self, id: u32, fd: RawFd, on: bool) -> std::io::Result<()> {
        let events = if on { CONN_EVENTS } else { CONN_EVENTS & !(poller::READABLE | poller::URGENT) };
        self.epoll.modify(fd, events, TOKEN_CONN | id as u64)
    }

    pub fn register_link(&self, shared: &Arc<Shared>) {
        self.table.links.lock().insert(shared.id, shared.clone());
    }

    /// Links (connections over UCX) on this hub now.
    pub fn link_count(&self) -> usize {
        self.table.links.lock().len()
    }

    pub fn unregister_link(&self, id: u32) {
        self.table.links.lock().remove(&id);
    }

    pub fn unregister_conn(&self, id: u32, fd: Option<RawFd>) {
        if let Some(fd) = fd {
            let _ = self.epoll.delete(fd);
        }
        self.table.conns.lock().remove(&id);
        self.table.links.lock().remove(&id);
        if let Some(lanes) = &self.lanes {
            lanes.connection_gone();
        }
    }

    pub fn register_listener(&self, listener: Weak<dyn Events>, fd: RawFd) -> std::io::Result<u32> {
        let id = self.next_id();
        self.table.listeners.lock().insert(id, listener);
        if let Err(e) = self.epoll.add(fd, poller::READABLE | poller::EDGE, TOKEN_LISTENER | id as u64) {
            self.table.listeners.lock().remove(&id);
            return Err(e);
        }
        Ok(id)
    }

    pub fn unregister_listener(&self, id: u32, fd: RawFd) {
        let _ = self.epoll.delete(fd);
        self.table.listeners.lock().remove(&id);
    }

    /// Makes this hub also progress and wait for `other` (a channel of another hub registered
    /// with this hub's selector). Counted: `remove_nested` as often as `add_nested`.
    pub fn add_nested(&self, other: &Arc<Hub>) -> std::io::Result<()> {
        self.nested.with(|nested| {
            if let Some(entry) = nested.iter_mut().find(|(h, _)| Arc::ptr_eq(h, other)) {
                entry.1 += 1;
                return Ok(());
            }
            self.epoll.add(other.epoll.as_raw_fd(), poller::READABLE | poller::EDGE, TOKEN_NESTED | other.serial)?;
            nested.push((other.clone(), 1));
            Ok(())
        })
    }

    pub fn remove_nested(&self, other: &Arc<Hub>) {
        self.nested.with(|nested| {
            if let Some(index) = nested.iter().position(|(h, _)| Arc::ptr_eq(h, other)) {
                nested[index].1 -= 1;
                if nested[index].1 == 0 {
                    let _ = self.epoll.delete(other.epoll.as_raw_fd());
                    nested.remove(index);
                }
            }
        });
    }

    /// Wakes the thread sleeping in this hub's epoll, if any.
    pub fn wake(&self) {
        if self.waiting.sleeping.load(Ordering::SeqCst) {
            self.wake.notify();
        }
    }

    /// Wakes the hub even if nobody sleeps right now (the next sleep returns at once).
    pub fn wake_always(&self) {
        self.wake.notify();
    }

    /// Makes the threads waiting for connection `id` check their conditions again: its
    /// followers, and the leader (asleep in epoll or about to be).
    pub fn wake_conn(&self, id: u32) {
        self.waiting.followers.wake_key(id);
        self.wake.notify();
    }

    /// Like [`Hub::wake_conn`] for a change that only the threads waiting for connection `id`
    /// itself wait for (its close, the end of its output): the leader is woken only if it waits
    /// for that connection. A leader that waits for no connection in particular (a selector's
    /// thread, whose keys wake it when they become ready) sleeps on, as the JDK's selectors do
    /// when one of their channels closes. A leader about to sleep sets `sleeping` and then looks at
    /// its condition once more, so a change made before this call is seen either way.
    pub fn wake_waiters_of(&self, id: u32) {
        self.waiting.followers.wake_key(id);
        if self.waiting.leader_key.load(Ordering::SeqCst) == id {
            self.wake();
        }
    }

    /// Runs UCX progress on every lane and handles what it completed. Returns whether anything
    /// happened. Must not be called while holding a connection's state lock.
    fn progress(&self) -> bool {
        let mut did = false;
        self.each_lane(|lane| {
            did |= self.progress_lane(lane);
            true
        });
        self.progress_rest(did)
    }

    fn progress_lane(&self, lane: &Lane) -> bool {
        let mut did = false;
        {
            let lock = lane.worker.lock();
            for _ in 0..64 {
                if lock.progress() == 0 {
                    break;
                }
                did = true;
            }
        }
        if lane.endpoints.departures().any() {
            lane.endpoints.retire_departed();
        }
        if !lane.touched.any() {
            return did;
        }
        // The list of this thread's last call, emptied, so that taking the ids allocates nothing
        // (a call nested in the handlers below finds none and starts a list of its own).
        let mut touched = TOUCHED.with(Cell::take);
        lane.touched.take_into(&mut touched);
        if !touched.is_empty() {
            did = true;
            for id in touched.drain(..) {
                let conn = self.table.conns.lock().get(&id).and_then(Weak::upgrade);
                if let Some(conn) = conn {
                    conn.on_ucx_event();
                    self.waiting.followers.delivered(id);
                }
            }
        }
        TOUCHED.with(|spare| spare.set(touched));
        did
    }

    /// The rare parts of progress: lingering closes, links waiting for their sends, idle lanes.
    fn progress_rest(&self, did: bool) -> bool {
        if !self.lingering.is_empty() {
            self.progress_lingering();
        }
        if !self.graveyard.is_empty() && self.graveyard.with(Self::visit_graves) {
            if let Some(lanes) = &self.lanes {
                lanes.connection_gone();
            }
        }
        if let Some(lanes) = &self.lanes {
            lanes.retire_idle(|fd| {
                let _ = self.epoll.delete(fd);
            });
        }
        did
    }

    /// Drops the links whose sends have ended, or whose peer is not coming back; true if any went.
    fn visit_graves(graveyard: &mut Vec<(Link, Instant)>) -> bool {
        let before = graveyard.len();
        graveyard.retain_mut(|(link, since)| {
            if link.finish_teardown() {
                return false;
            }
            if since.elapsed() < GRAVE_LIMIT {
                return true;
            }
            // The peer is not coming back: what UCX still references stays with the worker (see
            // `Parts::drop`), which is not kept for reuse.
            link.lane().mark_lost();
            false
        });
        graveyard.len() < before
    }

    /// Runs `f` on every nested hub, without holding the list (`f` may take other hubs' locks)
    /// and without allocating: a waiting leader calls this at every round.
    pub(super) fn each_nested(&self, mut f: impl FnMut(&Hub)) {
        if self.nested.is_empty() {
            return;
        }
        // A call nested in `f` finds no spare and starts a list of its own.
        let mut hubs = NESTED.with(Cell::take);
        self.nested.with(|nested| hubs.extend(nested.iter().map(|(h, _)| h.clone())));
        for hub in &hubs {
            f(hub);
        }
        hubs.clear();
        NESTED.with(|spare| spare.set(hubs));
    }

    fn progress_nested(&self) {
        self.each_nested(|hub| self.poll_nested(hub));
    }

    /// A spinning leader's round on the nested hubs: UCX progress of their lanes alone. Their
    /// socket events come through this hub's epoll (their epoll is in its set), which the spin
    /// looks at every few rounds, and a nested hub without UCX has nothing else to poll.
    pub(super) fn progress_nested_lanes(&self) {
        self.each_nested(|hub| {
            if hub.lanes.is_none() {
                return;
            }
            let Some(guard) = hub.waiting.leader.try_lock() else { return };
            let progressed = hub.progress();
            hub.leave_round(guard, progressed);
        });
    }

    /// Gives up the leadership taken for a round of progress without waiting: wakes the followers
    /// if it `progressed`, and tells those that found the leadership taken that it is free.
    /// `hand_over` moves the generation before it looks for followers: a thread that entered
    /// meanwhile either is seen or sees the new generation and does not park.
    fn leave_round(&self, guard: MutexGuard<'_, ()>, progressed: bool) {
        drop(guard);
        if progressed {
            self.waiting.followers.signal();
        }
        self.waiting.followers.hand_over();
    }

    fn poll_nested(&self, hub: &Hub) {
        if self.owner == Owner::Background {
            hub.poll_for_background();
        } else {
            hub.poll_now();
        }
    }

    /// A nested hub's epoll reported events. It says so once (an edge), so its socket events are
    /// dispatched now, however recently they were last looked at. If another thread leads that
    /// hub, this one owes them: that leader may leave with the events still queued, and the
    /// waits here stay short until they are dispatched (see `Hub::lead`). (The background
    /// thread looks at the hubs it adopted at every tick anyway.)
    fn poll_nested_events(&self, hub: &Hub) {
        if self.owner == Owner::Background {
            hub.poll_for_background();
        } else if !hub.poll(true, true) {
            self.waiting.nested_owed.store(true, Ordering::Relaxed);
        }
    }

    /// Dispatches the events of every nested hub if a nested hub's events are owed; true if
    /// some are still owed (another thread still leads that hub).
    pub(super) fn settle_nested_owed(&self) -> bool {
        // A load first: this runs at every round of a leader's loop, and owes nothing nearly always.
        if !self.waiting.nested_owed.load(Ordering::Relaxed) || !self.waiting.nested_owed.swap(false, Ordering::Relaxed) {
            return false;
        }
        self.each_nested(|hub| self.poll_nested_events(hub));
        self.waiting.nested_owed.load(Ordering::Relaxed)
    }

    /// Makes progress without waiting: UCX and pending socket events. Skipped if another thread
    /// leads the hub (it makes the progress instead).
    pub fn poll_now(&self) {
        self.poll(true, false);
    }

    /// `poll_now` for the background thread: only once no application thread has progressed the
    /// hub for [`OWNER_AWAY`]. While one does, it makes the progress itself, and the background
    /// thread must not take the leadership from under it (it could be descheduled holding it).
    pub(super) fn poll_for_background(&self) {
        if self.owner_away() {
            self.poll(false, false);
        }
    }

    /// Progress without waiting, unless another thread leads (it makes the progress instead);
    /// socket events at most every [`DISPATCH_INTERVAL`] unless `all_events`. False if another
    /// thread led.
    fn poll(&self, application: bool, all_events: bool) -> bool {
        let Some(guard) = self.waiting.leader.try_lock() else { return false };
        let now = Instant::now();
        if application {
            self.note_progressed(now);
        }
        let progressed = self.progress();
        // Socket events matter rarely once connections run over UCX: look at most every few
        // microseconds, so that a busy select loop does not pay a syscall each time.
        let events = {
            let mut last = self.times.last_dispatch.lock();
            if all_events || now.duration_since(*last) >= DISPATCH_INTERVAL {
                *last = now;
                true
            } else {
                false
            }
        };
        let events = if events { self.dispatch_ready(Some(Duration::ZERO), false) } else { 0 };
        self.progress_nested();
        self.leave_round(guard, progressed || events > 0);
        true
    }

    fn dispatch_ready(&self, timeout: Option<Duration>, slept: bool) -> usize {
        let mut events = [Event::default(); 64];
        let began = self.times.created.elapsed().as_nanos().max(1) as u64;
        let n = match self.epoll.wait(&mut events, timeout) {
            Ok(n) => n,
            Err(e) => {
                warn!("epoll_wait failed: {e}");
                std::thread::sleep(Duration::from_millis(1));
                0
            }
        };
        if slept {
            // Awake again: what the events make ready must not write the wake event fd for this
            // very thread (it looks at its condition again before it sleeps next).
            self.waiting.sleeping.store(false, Ordering::SeqCst);
        }
        for event in &events[..n] {
            self.dispatch(*event);
        }
        if n < events.len() {
            self.times.socket_events_ns.fetch_max(began, Ordering::AcqRel);
        }
        n
    }

    /// Whether every socket event of this hub older than `within` has been handled (its
    /// connections' readiness flags are that fresh), so that a look at a socket can be spared.
    pub fn socket_events_handled(&self, within: Duration) -> bool {
        let seen = self.times.socket_events_ns.load(Ordering::Acquire);
        seen != 0 && self.times.created.elapsed().saturating_sub(Duration::from_nanos(seen)) < within
    }

    fn dispatch(&self, event: Event) {
        let id = (event.token & 0xFFFF_FFFF) as u32;
        match event.token & TOKEN_KIND {
            TOKEN_WAKE => self.wake.drain(),
            TOKEN_UCX => {}
            TOKEN_CONN => {
                let conn = self.table.conns.lock().get(&id).and_then(Weak::upgrade);
                if let Some(conn) = conn {
                    conn.on_io_event(event.events);
                    self.waiting.followers.delivered(id);
                }
            }
            TOKEN_LISTENER => {
                self.waiting.followers.other();
                let listener = self.table.listeners.lock().get(&id).and_then(Weak::upgrade);
                if let Some(listener) = listener {
                    listener.on_io_event(event.events);
                }
            }
            TOKEN_CLOSING => {}
            TOKEN_NESTED => {
                self.waiting.followers.other();
                let serial = event.token & !TOKEN_KIND;
                let hub = self.nested.with(|nested| nested.iter().find(|(h, _)| h.serial == serial).map(|(h, _)| h.clone()));
                if let Some(hub) = hub {
                    self.poll_nested_events(&hub);
                }
            }
            _ => debug!("unknown epoll token {:#x}", event.token),
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        debug!("hub {} dropped ({})", self.serial, if self.is_selector() { "selector" } else { "private" });
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Weak};
    use std::time::Duration;

    use super::{Events, Hub};
    use crate::config::Settings;
    use crate::net::poller;
    use crate::net::socket::connected_pair;

    /// The socket events a hub reported, or-ed together.
    #[derive(Default)]
    struct Heard(AtomicU32);

    impl Events for Heard {
        fn on_io_event(&self, events: u32) {
            self.0.fetch_or(events, Ordering::SeqCst);
        }
    }

    /// Bytes that arrive while a connection's reads wait in the kernel do not wake the hub, whose
    /// leader may serve other connections; watching reads again reports what the socket holds.
    #[test]
    fn arrivals_reach_the_hub_only_while_it_watches_reads() {
        let hub = Hub::new(&Settings::default(), false).unwrap();
        let (client, server) = connected_pair();
        let fd = server.as_raw_fd();
        let heard = Arc::new(Heard::default());
        let id = hub.register_conn(Arc::downgrade(&heard) as Weak<dyn Events>, fd).unwrap();
        hub.watch_reads(id, fd, false).unwrap();
        // What registering and the change report of the socket now (writable).
        hub.dispatch_ready(Some(Duration::from_millis(100)), false);
        heard.0.store(0, Ordering::SeqCst);

        client.send(b"x").unwrap();
        let arrived = poller::poll([(fd, libc::POLLIN)], Some(Duration::from_secs(5)));
        assert!(arrived.is_ok_and(|[r]| r & libc::POLLIN != 0), "the byte did not arrive");
        assert_eq!(hub.dispatch_ready(Some(Duration::from_millis(50)), false), 0, "an arrival woke the hub");
        assert_eq!(heard.0.load(Ordering::SeqCst), 0);

        hub.watch_reads(id, fd, true).unwrap();
        assert_eq!(hub.dispatch_ready(Some(Duration::from_millis(100)), false), 1);
        assert_ne!(heard.0.load(Ordering::SeqCst) & poller::READABLE, 0, "the byte waiting was not reported");
    }
}
