//! A connection: a kernel TCP socket, upgraded to UCX when both sides speak hadroNIO.
//!
//! Lifecycle. Every connection starts as a plain TCP byte stream. Whether and how it upgrades
//! is the [`Negotiation`]'s business (urgent offer and answer, marks, HELLO, AUTH, ADDR, probe,
//! SWITCH, see [`protocol`](super::protocol)); this module owns the socket and the UCX link,
//! carries out what the negotiation asks for and implements the NIO behaviour: blocking and
//! non-blocking reads and writes, half-close, close with lingering, readiness for selectors.
//! Application bytes flow at once in both directions: raw before a side's mark, in DATA frames
//! after it, over UCX after SWITCH. End of stream is a TCP FIN while a side's stream is raw, a FIN
//! frame (carrying the number of UCX messages before it) while it carries frames; the TCP socket
//! stays open as control and liveness channel of an upgraded connection, and its loss without
//! FIN is an abortive close.
//!
//! Binding. A connection is bound to a hub when it is registered with a selector (the selector's
//! hub) or first used in blocking mode (a private hub). Its UCX link opens on the hub's lane
//! that suits the peer (see [`Lanes`](super::lanes::Lanes)) once the peer's HELLO named it; a
//! connection used without a hub waits with that until it is bound.
//!
//! State. One mutex holds a connection's `State`, in parts by what they hold: the kernel's side
//! (`tcp.rs`: socket, addresses, the options the application set), the negotiation, the
//! streams' buffers, the UCX link and what the upgrade waits to do with it, how far it is shut
//! down or closed, and one `Failure` value that every operation asks.
//!
//! Files: this one holds the state, opening, binding and connecting; `upgrade.rs` what the
//! negotiation asks for, `events.rs` the hub's events and the selection keys, `read.rs`,
//! `write.rs` and `close.rs` the NIO operations, `options.rs` socket options, `exit.rs` the end
//! of the process.

mod close;
mod events;
mod exit;
mod failure;
mod options;
mod tcp;
mod read;
mod upgrade;
mod write;

pub use exit::end_all;
pub use options::{get_socket_option, set_socket_option, OPT_IP_TOS, OPT_SO_KEEPALIVE, OPT_SO_LINGER, OPT_SO_RCVBUF, OPT_SO_REUSEADDR, OPT_SO_REUSEPORT, OPT_SO_SNDBUF, OPT_TCP_NODELAY};

use std::borrow::Cow;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::{debug, log_enabled, Level};
use parking_lot::{Mutex, MutexGuard};

use super::blocking;
use super::error::{Error, Result, Status};
use super::hub::Hub;
use super::protocol::Identity;
use super::link::Link;
use super::negotiation::{Negotiation, TcpReason};
use super::protocol::Role;
use super::readiness::Keys;
use super::stream::{RxState, TxState};
use crate::config::Settings;
use crate::net::poller;
use crate::net::socket::Socket;
use crate::stats::{self, Counter};
use failure::Failure;
use tcp::{IoFlags, KernelWaits, Tcp};
use upgrade::policy;

static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Unconnected,
    Connecting,
    Connected,
    Failed,
}

/// One connection's state, behind its mutex, in parts by what they hold.
struct State {
    /// The library's settings, given when the connection was created.
    settings: &'static Settings,
    role: Role,
    phase: Phase,
    id: u32,
    tcp: Tcp,
    /// The control stream; exists once the connection is up. Boxed: inline it was most of a
    /// connection's size and took the connection's allocation above glibc's small chunks
    /// (1,008 bytes), where a request first merges the lists of freed small chunks: once per new
    /// connection.
    neg: Option<Box<Negotiation>>,
    rx: RxState,
    tx: TxState,
    link: Option<Link>,
    upgrade: Upgrade,
    closing: Closing,
    failure: Failure,
    /// The time the background thread calls [`Conn::on_deadline`] for.
    deadline_asked: Option<Instant>,
}

/// What the upgrade waits to do with the UCX link.
#[derive(Default)]
struct Upgrade {
    /// The peer's identity, when its link waits for the connection to be bound to a hub.
    wanted: Option<Identity>,
    /// Probe pings to answer once the endpoint exists.
    pending_pongs: Vec<u64>,
}

/// How far the connection has been shut down and closed.
#[derive(Default)]
struct Closing {
    input_shutdown: bool,
    /// Output shut down (FIN sent or due).
    output_shutdown: bool,
    /// A FIN waits until held bytes went out.
    fin_pending: bool,
    linger_deadline: Option<Instant>,
    linger_seconds: Option<i32>,
    /// The socket and link were given back: nothing more happens on this connection.
    released: bool,
}

pub struct Conn {
    pub serial: u64,
    state: Mutex<State>,
    closed: AtomicBool,
    /// Set while the background thread watches this connection's staged data.
    watched: AtomicBool,
    hub: OnceLock<Arc<Hub>>,
    keys: Mutex<Keys>,
    key_count: AtomicUsize,
    weak: Weak<Conn>,
}

impl Conn {
    fn with_state(state: State) -> Arc<Conn> {
        let conn = Arc::new_cyclic(|weak| Conn {
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(state),
            closed: AtomicBool::new(false),
            watched: AtomicBool::new(false),
            hub: OnceLock::new(),
            keys: Mutex::default(),
            key_count: AtomicUsize::new(0),
            weak: weak.clone(),
        });
        exit::track(&conn);
        conn
    }

    fn new_state(settings: &'static Settings, socket: Socket, role: Role, phase: Phase) -> State {
        State {
            settings,
            role,
            phase,
            id: 0,
            tcp: Tcp {
                socket: Some(socket),
                bound_local: false,
                remote: None,
                io: IoFlags { readable: true, writable: true, ended: false },
                tcp_checked: crate::net::host::coarse_now(),
                user_keepalive: None,
                user_nodelay: None,
                kernel: KernelWaits::default(),
            },
            neg: None,
            rx: RxState::default(),
            tx: TxState::default(),
            link: None,
            upgrade: Upgrade::default(),
            closing: Closing::default(),
            failure: Failure::default(),
            deadline_asked: None,
        }
    }

    /// A new unconnected client socket, working with `settings`.
    pub fn open(settings: &'static Settings) -> Result<Arc<Conn>> {
        let socket = Socket::new(settings.ipv6).map_err(|e| Error::io("socket", &e))?;
        Ok(Conn::with_state(Conn::new_state(settings, socket, Role::Client, Phase::Unconnected)))
    }

    /// A connection accepted by a listener on `local_port`. Looks at once whether the client's
    /// offer is already there.
    pub fn accepted(settings: &'static Settings, socket: Socket, peer: SocketAddr, local_port: u16) -> Arc<Conn> {
        let mut state = Conn::new_state(settings, socket, Role::Server, Phase::Connected);
        state.tcp.remote = Some(peer);
        state.tcp.bound_local = true;
        state.neg = Some(Box::new(Negotiation::new(policy(Role::Server, peer, local_port, settings))));
        Self::count_new(&state);
        let conn = Conn::with_state(state);
        {
            let mut state = conn.lock();
            conn.progress_stream(&mut state);
        }
        conn
    }

    /// Counts a new connection, and where the policy keeps it on TCP from the start, why.
    fn count_new(state: &State) {
        stats::count(Counter::Connections);
        if let Some(reason) = state.neg.as_deref().and_then(Negotiation::declined_by_policy) {
            stats::count(Self::tcp_counter(reason));
        }
    }

    /// The counter of connections kept on TCP for `reason`.
    fn tcp_counter(reason: TcpReason) -> Counter {
        match reason {
            TcpReason::PlainPeer => Counter::TcpPlainPeer,
            TcpReason::Rule => Counter::TcpByRule,
            TcpReason::NoPath => Counter::TcpNoPath,
            TcpReason::Other => Counter::TcpOther,
        }
    }

    fn arc(&self) -> Option<Arc<Conn>> {
        self.weak.upgrade()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    // --- binding ------------------------------------------------------------------------------

    pub fn hub(&self) -> Option<&Arc<Hub>> {
        self.hub.get()
    }

    /// Binds to `hub` unless already bound: registers the socket and opens the UCX link if the
    /// negotiation asked for it meanwhile. Returns the hub the connection ends up on.
    pub fn bind_hub(&self, hub: &Arc<Hub>) -> Result<Arc<Hub>> {
        let mut state = self.lock();
        self.bind_locked(&mut state, hub)
    }

    fn bind_locked(&self, state: &mut State, hub: &Arc<Hub>) -> Result<Arc<Hub>> {
        if let Some(bound) = self.hub.get() {
            // A selector's keys need the socket's readability from the hub.
            self.watch_reads_again(state);
            return Ok(bound.clone());
        }
        if state.closing.released {
            return Err(Error::closed());
        }
        let Some(me) = self.arc() else { return Err(Error::closed()) };
        let fd = match &state.tcp.socket {
            Some(socket) => socket.as_raw_fd(),
            None => return Err(Error::closed()),
        };
        // Adding the socket to the hub's epoll set reports what it holds now, edges or not: until
        // that event, nothing says there is anything to read, and a selector must not report a
        // new connection readable before its first bytes come (its application would read
        // nothing and go back to the selector).
        state.tcp.io.readable = false;
        let id = hub.register_conn(Arc::<Conn>::downgrade(&me), fd).map_err(|e| Error::io("epoll", &e))?;
        state.id = id;
        let _ = self.hub.set(hub.clone());
        debug!("connection {} bound to hub {} as id {id}", self.serial, hub.serial);
        if let Some(identity) = state.upgrade.wanted.take() {
            self.open_link(state, identity, true);
        }
        self.drive(state);
        Ok(hub.clone())
    }

    /// Binds to a hub for blocking use if not bound yet.
    fn ensure_bound(&self, state: &mut State) -> Result<Arc<Hub>> {
        if let Some(hub) = self.hub.get() {
            return Ok(hub.clone());
        }
        let ucx = state.neg.as_deref().is_none_or(|n| n.pending() || n.upgraded());
        let hub = blocking::hub(state.settings, ucx).map_err(|e| Error::io("creating a hub", &e))?;
        self.bind_locked(state, &hub)
    }

    // --- connection setup ---------------------------------------------------------------------

    pub fn bind(&self, addr: &SocketAddr) -> Result<()> {
        let mut state = self.lock();
        let socket = state.tcp.socket.as_ref().ok_or_else(Error::closed)?;
        if !socket.accepts(addr) {
            return Err(Error::new(Status::Invalid, "IPv6 address on an IPv4 socket"));
        }
        socket.bind(addr).map_err(|e| Error::io("bind", &e))?;
        state.tcp.bound_local = true;
        Ok(())
    }

    /// Starts or performs a connect. `Ok(true)` when connected, `Ok(false)` when pending
    /// (non-blocking).
    pub fn connect(&self, addr: &SocketAddr, blocking: bool, timeout: Option<Duration>) -> Result<bool> {
        let deadline = timeout.map(|t| Instant::now() + t);
        {
            let mut state = self.lock();
            if self.is_closed() || state.closing.released {
                return Err(Error::closed());
            }
            let socket = state.tcp.socket.as_ref().ok_or_else(Error::closed)?;
            if !socket.accepts(addr) {
                return Err(Error::new(Status::Invalid, "IPv6 address on an IPv4 socket"));
            }
            state.tcp.remote = Some(*addr);
            state.neg = Some(Box::new(Negotiation::new(policy(Role::Client, *addr, addr.port(), state.settings))));
            let socket = state.tcp.socket.as_ref().ok_or_else(Error::closed)?;
            match socket.connect(addr) {
                Ok(true) => {
                    self.on_connected(&mut state);
                    return Ok(true);
                }
                Ok(false) => {
                    state.phase = Phase::Connecting;
                    state.tcp.io = IoFlags::default();
                }
                Err(e) => {
                    state.phase = Phase::Failed;
                    return Err(Error::io("", &e));
                }
            }
            if !blocking {
                return Ok(false);
            }
        };
        if !self.wait_connect(deadline)? {
            let mut state = self.lock();
            state.phase = Phase::Failed;
            return Err(Error::new(Status::TimedOut, "Connect timed out"));
        }
        self.complete_connect(true, true)
    }

    /// Waits for a pending connect to settle without binding the connection to a hub, so that
    /// a channel connected in blocking mode and registered with a selector afterwards ends up on
    /// that selector's hub. Returns false on timeout.
    fn wait_connect(&self, deadline: Option<Instant>) -> Result<bool> {
        const SLICE: Duration = Duration::from_millis(20);
        loop {
            if self.is_closed() {
                return Err(Error::closed());
            }
            if self.connect_settled() {
                return Ok(true);
            }
            let slice = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(false);
                    }
                    (d - now).min(SLICE)
                }
                None => SLICE,
            };
            if let Some(hub) = self.hub.get() {
                let key = Some(self.lock().id);
                hub.wait(key, &mut || self.is_closed() || self.connect_settled(), Some(Instant::now() + slice));
                continue;
            }
            let fd = {
                let state = self.lock();
                match &state.tcp.socket {
                    Some(socket) => socket.as_raw_fd(),
                    None => return Err(Error::closed()),
                }
            };
            let revents = poller::poll([(fd, libc::POLLOUT)], Some(slice)).map_err(|e| Error::io("poll", &e))?;
            if revents[0] != 0 {
                self.lock().tcp.io.writable = true;
            }
        }
    }

    fn connect_settled(&self) -> bool {
        let state = self.lock();
        state.phase != Phase::Connecting || state.tcp.io.writable || state.failure.is_fatal()
    }

    /// Completes a pending connect: `Ok(true)` connected, `Ok(false)` still pending.
    pub fn finish_connect(&self, blocking: bool) -> Result<bool> {
        self.complete_connect(blocking, false)
    }

    /// [`Conn::finish_connect`]; `polled`: a wait of this thread saw the socket settle.
    fn complete_connect(&self, blocking: bool, mut polled: bool) -> Result<bool> {
        loop {
            {
                let mut state = self.lock();
                if self.is_closed() {
                    return Err(Error::closed());
                }
                match state.phase {
                    Phase::Connected => return Ok(true),
                    Phase::Unconnected | Phase::Failed => return Err(Error::new(Status::NotConnected, "no connection pending")),
                    Phase::Connecting => {}
                }
                // The socket's error is asked for only once poll reports the connect done
                // (writable, failed or hung up), as the kernel's channels do; where the wait
                // just saw it so, it is not asked again.
                let socket = state.tcp.socket.as_ref().ok_or_else(Error::closed)?;
                let done = std::mem::take(&mut polled) && state.tcp.io.writable
                    || poller::poll([(socket.as_raw_fd(), libc::POLLOUT)], Some(Duration::ZERO))
                        .map_err(|e| Error::io("poll", &e))?[0]
                        & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP)
                        != 0;
                if done {
                    if let Some(error) = socket.take_error().map_err(|e| Error::io("connect", &e))? {
                        state.phase = Phase::Failed;
                        return Err(Error::io("", &error));
                    }
                    self.on_connected(&mut state);
                    drop(state);
                    self.notify_keys();
                    return Ok(true);
                }
                state.tcp.io.writable = false;
                if !blocking {
                    return Ok(false);
                }
            }
            polled = self.wait_connect(None)?;
        }
    }

    /// The TCP connection is up (a client offers with its first write, or at once with a secret).
    fn on_connected(&self, state: &mut State) {
        state.phase = Phase::Connected;
        state.tcp.bound_local = true;
        Self::count_new(state);
        if let Some(neg) = &mut state.neg {
            neg.on_connected(Instant::now());
        }
        self.drive(state);
        if log_enabled!(Level::Debug) {
            debug!("connection {} connected to {:?}", self.serial, state.tcp.remote);
        }
    }

    // --- information --------------------------------------------------------------------------

    pub fn local_addr(&self) -> Result<Option<SocketAddr>> {
        let state = self.lock();
        if !state.tcp.bound_local {
            return Ok(None);
        }
        let socket = state.tcp.socket.as_ref().ok_or_else(Error::closed)?;
        socket.local_addr().map(Some).map_err(|e| Error::io("getsockname", &e))
    }

    pub fn remote_addr(&self) -> Option<SocketAddr> {
        let state = self.lock();
        if state.phase == Phase::Connected {
            state.tcp.remote
        } else {
            None
        }
    }

    /// The receive slots of the connection's link (`None` while it has none).
    pub fn receive_slots(&self) -> Option<u32> {
        self.lock().link.as_ref().map(|link| link.slot_count())
    }

    /// Bytes written and waiting in staging, and the credits left for UCX messages to the peer
    /// (`None` while the connection has no link).
    pub fn tx_backlog(&self) -> Option<(usize, u64)> {
        self.lock().link.as_ref().map(|link| link.tx_backlog())
    }

    /// Which path the connection took and why, plus UCX's description of its endpoint.
    pub fn describe(&self) -> String {
        let state = self.lock();
        let path = state.neg.as_deref().map_or(Cow::Borrowed("tcp (not connected)"), Negotiation::path).into_owned();
        match &state.link {
            Some(link) if link.has_endpoint() && state.neg.as_deref().is_some_and(Negotiation::upgraded) => {
                format!("{path}{}\n{}", link.path_words(), link.describe())
            }
            _ => path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Conn;

    /// glibc serves requests up to 1,008 bytes as small chunks; a larger one that its per-thread
    /// cache cannot serve first merges every list of freed small chunks.
    #[test]
    fn a_connection_is_a_small_allocation() {
        let allocated = std::mem::size_of::<Conn>() + 2 * std::mem::size_of::<usize>();
        assert!(allocated <= 1008, "Arc<Conn> takes {allocated} bytes");
    }
}
