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

mod close;
mod options;
mod read;
mod write;

pub use options::{get_socket_option, set_socket_option, OPT_IP_TOS, OPT_SO_KEEPALIVE, OPT_SO_LINGER, OPT_SO_RCVBUF, OPT_SO_REUSEADDR, OPT_SO_SNDBUF, OPT_TCP_NODELAY};

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::{debug, info, log_enabled, warn, Level};
use parking_lot::{Mutex, MutexGuard};

use super::error::{Error, Result, Status};
use super::background::background;
use super::hub::{Events, Hub};
use super::identity;
use super::protocol::Identity;
use super::link::Link;
use super::negotiation::{Action, Negotiation, Policy, TcpReason};
use super::protocol::{self, Role};
use super::readiness::{Key, Ready, OP_CONNECT, OP_READ, OP_WRITE};
use super::stream::{self, Failure, RxState, TxState};
use crate::config::Settings;
use crate::net::poller;
use crate::net::socket::Socket;
use crate::rules;
use crate::stats::{self, Counter};

static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// How long a UCX probe round trip may take before a connection stays on TCP.
const PROBE_WAIT: Duration = Duration::from_secs(2);

/// With a shared secret: how long a peer that offered or accepted an upgrade has to prove it.
const AUTH_WAIT: Duration = Duration::from_secs(10);

/// Client without a secret: how long its reads look for the answer to its offer (they cost a
/// look at the socket's urgent mark meanwhile; a later answer still counts when the socket
/// reports it).
const OFFER_LOOK: Duration = Duration::from_secs(2);

/// Why a connection that UCX reaches only through its TCP transport stays on the kernel's TCP.
const TCP_ONLY: &str = "UCX reaches the peer only through its TCP transport, which is slower than the kernel's TCP \
                        (set UCX_TLS to use it anyway)";

/// Whether the user asked for UCX's transports by name (`UCX_TLS`): then its TCP transport is
/// used where it is the only one.
fn ucx_tcp_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| std::env::var_os("UCX_TLS").is_some_and(|v| !v.is_empty()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Unconnected,
    Connecting,
    Connected,
    Failed,
}

/// Edge-triggered socket state, refreshed by epoll events and by would-block results.
#[derive(Default)]
struct IoFlags {
    readable: bool,
    writable: bool,
    /// The socket reported the end of the peer's stream or a failure (`EPOLLRDHUP`, `EPOLLHUP`,
    /// `EPOLLERR`), whether or not reads have come that far.
    ended: bool,
}

struct State {
    /// The library's settings, given when the connection was created.
    settings: &'static Settings,
    socket: Option<Socket>,
    role: Role,
    phase: Phase,
    bound_local: bool,
    remote: Option<SocketAddr>,
    io: IoFlags,
    /// The control stream; exists once the connection is up.
    neg: Option<Negotiation>,
    rx: RxState,
    tx: TxState,
    input_shutdown: bool,
    /// Output shut down (FIN sent or due).
    output_shutdown: bool,
    /// A FIN waits until held bytes went out.
    fin_pending: bool,
    /// Writing to the socket failed (peer closed or reset): later writes fail with it.
    tx_error: Option<Error>,
    /// A plain stream's socket failed (a reset) while only the protocol was read: the next read
    /// that finds no bytes reports it, as the kernel's channel would at that point.
    rx_error: Option<Error>,
    link: Option<Link>,
    /// The peer's identity, when its link waits for the connection to be bound to a hub.
    link_wanted: Option<Identity>,
    /// Probe pings to answer once the endpoint exists.
    pending_pongs: Vec<u64>,
    id: u32,
    fatal: Option<Error>,
    linger_deadline: Option<Instant>,
    linger_seconds: Option<i32>,
    released: bool,
    /// When the write path last looked at the control socket.
    tcp_checked: Instant,
    /// The application's `SO_KEEPALIVE` once the connection's own liveness timers own the
    /// kernel's keepalive (see `watch_liveness`); `None` before.
    user_keepalive: Option<bool>,
    /// The application's `TCP_NODELAY` once the control socket has it on for good (a hadroNIO
    /// peer: control frames are small and must not wait for the peer's delayed ACK).
    user_nodelay: Option<bool>,
    /// The time the background thread calls [`Conn::on_deadline`] for.
    deadline_asked: Option<Instant>,
}

pub struct Conn {
    pub serial: u64,
    state: Mutex<State>,
    closed: AtomicBool,
    /// Set while the background thread watches this connection's staged data.
    watched: AtomicBool,
    hub: OnceLock<Arc<Hub>>,
    keys: Mutex<Vec<Weak<Key>>>,
    key_count: AtomicUsize,
    weak: Weak<Conn>,
}

/// A random number of this connection (its nonce and probe token).
fn nonce() -> u64 {
    let random = super::auth::challenge();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&random[..8]);
    u64::from_ne_bytes(bytes)
}

/// What this side may do on a connection with `peer` (rules, settings, UCX availability).
fn policy(role: Role, peer: SocketAddr, service_port: u16, s: &Settings) -> Policy {
    let upgrade = if !s.ucx {
        Err((TcpReason::Rule, String::from("UCX disabled by hadronio.transport=tcp")))
    } else {
        let rule_role = if role == Role::Client { rules::Role::Connect } else { rules::Role::Accept };
        let (allowed, rule) = s.rules.decide(rule_role, peer.ip(), service_port);
        if !allowed {
            let whose = if s.rules.is_users(rule) { "hadronio.rules" } else { "default rule" };
            Err((TcpReason::Rule, format!("{whose} '{rule}'")))
        } else {
            super::lanes::context(super::lanes::Kind::Full, s.slot_len)
                .map(|_| ())
                .map_err(|e| (TcpReason::NoPath, format!("UCX unavailable: {e}")))
        }
    };
    let secret = s.secret.clone();
    let offer_wait = if secret.is_some() { Duration::from_millis(s.offer_ms) } else { OFFER_LOOK };
    Policy {
        role,
        upgrade,
        secret,
        identity: identity::ours(),
        nonce: nonce(),
        offer_wait,
        probe_wait: PROBE_WAIT,
        auth_wait: AUTH_WAIT,
    }
}

impl Conn {
    fn with_state(state: State) -> Arc<Conn> {
        Arc::new_cyclic(|weak| Conn {
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(state),
            closed: AtomicBool::new(false),
            watched: AtomicBool::new(false),
            hub: OnceLock::new(),
            keys: Mutex::default(),
            key_count: AtomicUsize::new(0),
            weak: weak.clone(),
        })
    }

    fn new_state(settings: &'static Settings, socket: Socket, role: Role, phase: Phase) -> State {
        State {
            settings,
            socket: Some(socket),
            role,
            phase,
            bound_local: false,
            remote: None,
            io: IoFlags { readable: true, writable: true, ended: false },
            neg: None,
            rx: RxState::default(),
            tx: TxState::default(),
            input_shutdown: false,
            output_shutdown: false,
            fin_pending: false,
            tx_error: None,
            rx_error: None,
            link: None,
            link_wanted: None,
            pending_pongs: Vec::new(),
            id: 0,
            fatal: None,
            linger_deadline: None,
            linger_seconds: None,
            released: false,
            tcp_checked: Instant::now(),
            user_keepalive: None,
            user_nodelay: None,
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
        state.remote = Some(peer);
        state.bound_local = true;
        state.neg = Some(Negotiation::new(policy(Role::Server, peer, local_port, settings)));
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
        if let Some(reason) = state.neg.as_ref().and_then(Negotiation::declined_by_policy) {
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
            return Ok(bound.clone());
        }
        if state.released {
            return Err(Error::closed());
        }
        let Some(me) = self.arc() else { return Err(Error::closed()) };
        let fd = match &state.socket {
            Some(socket) => socket.as_raw_fd(),
            None => return Err(Error::closed()),
        };
        let id = hub.register_conn(Arc::<Conn>::downgrade(&me), fd).map_err(|e| Error::io("epoll", &e))?;
        state.id = id;
        let _ = self.hub.set(hub.clone());
        debug!("connection {} bound to hub {} as id {id}", self.serial, hub.serial);
        if let Some(identity) = state.link_wanted.take() {
            self.open_link(state, identity);
        }
        self.drive(state);
        Ok(hub.clone())
    }

    /// Binds to a private hub if not bound yet (blocking use).
    fn ensure_bound(&self, state: &mut State) -> Result<Arc<Hub>> {
        if let Some(hub) = self.hub.get() {
            return Ok(hub.clone());
        }
        let ucx = state.neg.as_ref().is_none_or(|n| n.pending() || n.upgraded());
        let hub = Hub::new(state.settings, ucx).map_err(|e| Error::io("creating a hub", &e))?;
        self.bind_locked(state, &hub)
    }

    /// Posts the UCX receives on the hub's lane for a peer of `identity`.
    fn open_link(&self, state: &mut State, identity: Identity) {
        let Some(hub) = self.hub.get().cloned() else {
            state.link_wanted = Some(identity);
            return;
        };
        let s = state.settings;
        let locality = identity::locality(&identity::ours(), &identity);
        let link = hub.lane(locality).and_then(|lane| {
            Link::new(lane, state.id, s.slots, s.slot_len, s.send_buffer).map_err(|e| format!("could not post UCX receives: {e}"))
        });
        let result = match link {
            Ok(link) => {
                hub.register_link(link.shared());
                let addr = link.local_addr();
                state.link = Some(link);
                debug!("connection {}: link open for a peer at {locality:?}", self.serial);
                Ok(addr)
            }
            Err(e) => Err(e),
        };
        if let Some(neg) = &mut state.neg {
            neg.on_link(result);
        }
    }

    // --- connection setup ---------------------------------------------------------------------

    pub fn bind(&self, addr: &SocketAddr) -> Result<()> {
        let mut state = self.lock();
        let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
        if !socket.accepts(addr) {
            return Err(Error::new(Status::Invalid, "IPv6 address on an IPv4 socket"));
        }
        socket.bind(addr).map_err(|e| Error::io("bind", &e))?;
        state.bound_local = true;
        Ok(())
    }

    /// Starts or performs a connect. `Ok(true)` when connected, `Ok(false)` when pending
    /// (non-blocking).
    pub fn connect(&self, addr: &SocketAddr, blocking: bool, timeout: Option<Duration>) -> Result<bool> {
        let deadline = timeout.map(|t| Instant::now() + t);
        {
            let mut state = self.lock();
            if self.is_closed() || state.released {
                return Err(Error::closed());
            }
            let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
            if !socket.accepts(addr) {
                return Err(Error::new(Status::Invalid, "IPv6 address on an IPv4 socket"));
            }
            state.remote = Some(*addr);
            state.neg = Some(Negotiation::new(policy(Role::Client, *addr, addr.port(), state.settings)));
            let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
            match socket.connect(addr) {
                Ok(true) => {
                    self.on_connected(&mut state);
                    return Ok(true);
                }
                Ok(false) => {
                    state.phase = Phase::Connecting;
                    state.io = IoFlags::default();
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
        self.finish_connect(true)
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
                hub.wait(&mut || self.is_closed() || self.connect_settled(), Some(Instant::now() + slice));
                continue;
            }
            let fd = {
                let state = self.lock();
                match &state.socket {
                    Some(socket) => socket.as_raw_fd(),
                    None => return Err(Error::closed()),
                }
            };
            let revents = poller::poll(&[(fd, libc::POLLOUT)], Some(slice)).map_err(|e| Error::io("poll", &e))?;
            if revents[0] != 0 {
                self.lock().io.writable = true;
            }
        }
    }

    fn connect_settled(&self) -> bool {
        let state = self.lock();
        state.phase != Phase::Connecting || state.io.writable || state.fatal.is_some()
    }

    /// Completes a pending connect: `Ok(true)` connected, `Ok(false)` still pending.
    pub fn finish_connect(&self, blocking: bool) -> Result<bool> {
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
                let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
                if let Some(error) = socket.take_error().map_err(|e| Error::io("connect", &e))? {
                    state.phase = Phase::Failed;
                    return Err(Error::io("", &error));
                }
                let revents = poller::poll(&[(socket.as_raw_fd(), libc::POLLOUT)], Some(Duration::ZERO))
                    .map_err(|e| Error::io("poll", &e))?;
                if revents[0] & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0 {
                    if let Some(error) = socket.take_error().map_err(|e| Error::io("connect", &e))? {
                        state.phase = Phase::Failed;
                        return Err(Error::io("", &error));
                    }
                    self.on_connected(&mut state);
                    drop(state);
                    self.notify_keys();
                    return Ok(true);
                }
                state.io.writable = false;
                if !blocking {
                    return Ok(false);
                }
            }
            self.wait_connect(None)?;
        }
    }

    /// The TCP connection is up: the offer goes out as the stream's first byte.
    fn on_connected(&self, state: &mut State) {
        state.phase = Phase::Connected;
        state.bound_local = true;
        Self::count_new(state);
        if let Some(neg) = &mut state.neg {
            neg.on_connected(Instant::now());
        }
        self.drive(state);
        if log_enabled!(Level::Debug) {
            debug!("connection {} connected to {:?}", self.serial, state.remote);
        }
    }

    // --- the negotiation ------------------------------------------------------------------------

    /// Reads what the negotiation needs from the socket (control frames, marks; no application
    /// bytes), then [`Conn::drive`]s it.
    fn progress_stream(&self, state: &mut State) {
        if state.phase == Phase::Connected && !state.released && state.fatal.is_none() && state.rx_error.is_none() {
            if let Err(e) = self.read_stream(state, None) {
                let plain = !state.neg.as_ref().is_some_and(Negotiation::peer_speaks_hadronio);
                if plain && e.status != Status::Protocol {
                    state.rx_error = Some(e);
                } else {
                    self.set_fatal(state, e);
                }
            }
        }
        self.drive(state);
    }

    /// Carries out what the negotiation asks for, writes its control bytes, sends bytes it held
    /// back and a FIN that waited for them, and asks the background thread to call back when its
    /// next deadline comes.
    fn drive(&self, state: &mut State) {
        if state.phase != Phase::Connected || state.released {
            return;
        }
        while let Some(action) = state.neg.as_mut().and_then(Negotiation::poll_action) {
            self.act(state, action);
        }
        let Some(neg) = state.neg.as_mut() else { return };
        if neg.framed() && state.user_nodelay.is_none() {
            Self::control_frames_without_delay(state);
        }
        self.flush_control(state);
        if !state.tx.early.is_empty() {
            if let (Some(neg), Some(socket)) = (state.neg.as_mut(), state.socket.as_ref()) {
                if let Err(e) = stream::release(neg, socket, &state.rx, &mut state.tx) {
                    state.tx_error.get_or_insert_with(|| Error::io("", &e));
                }
            }
        }
        if state.fin_pending && state.tx.early.is_empty() {
            state.fin_pending = false;
            self.send_fin(state);
        }
        self.drop_link_if_unused(state);
        // The negotiation's next deadline, or the end of the wait for UCX messages a FIN
        // announced: selectors and waiting readers learn of it when it is due.
        let deadline = match (state.neg.as_ref().and_then(Negotiation::deadline), Self::announced_deadline(state)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let (Some(at), true) = (deadline, deadline != state.deadline_asked) {
            if let Some(me) = self.arc() {
                state.deadline_asked = Some(at);
                background().wake_at(at, Arc::<Conn>::downgrade(&me));
            }
        }
        if let Some(error) = state.neg.as_ref().and_then(|n| n.error().cloned()) {
            self.set_fatal(state, error);
        }
    }

    fn act(&self, state: &mut State, action: Action) {
        if log_enabled!(Level::Trace) {
            log::trace!("connection {}: {action:?}", self.serial);
        }
        match action {
            Action::OpenLink(identity) => self.open_link(state, identity),
            Action::Connect(addr) => {
                let result = match &mut state.link {
                    Some(link) => link.connect(&addr).map_err(|e| e.to_string()),
                    None => Err(String::from("no link")),
                };
                let ok = result.is_ok();
                let tcp_only = ok && !ucx_tcp_wanted() && state.link.as_ref().is_some_and(Link::tcp_only);
                if let Some(neg) = &mut state.neg {
                    if tcp_only {
                        neg.decline(TCP_ONLY);
                    } else {
                        neg.on_endpoint(result, Instant::now());
                    }
                }
                if ok {
                    for token in std::mem::take(&mut state.pending_pongs) {
                        self.answer_probe(state, token);
                    }
                }
            }
            Action::Probe(token) => {
                let sent = state.link.as_ref().map(|l| l.send_probe(protocol::PROBE_PING, token));
                if let (Some(Err(e)), Some(neg)) = (sent, state.neg.as_mut()) {
                    neg.decline(&e.to_string());
                }
            }
            Action::Switched => {
                let over = state.link.as_ref().map_or_else(String::new, |l| l.path_words());
                stats::count(if over.contains("shared memory") { Counter::UpgradesSharedMemory } else { Counter::UpgradesNetwork });
                info!("connection {} {}: upgraded to UCX{over}", self.serial, Self::peer_label(state.role, state.remote));
                self.watch_liveness(state);
            }
            Action::GaveUp(reason, why) => {
                stats::count(Self::tcp_counter(reason));
                info!("connection {} {}: stays on TCP: {why}", self.serial, Self::peer_label(state.role, state.remote));
            }
        }
    }

    /// While the UCX half is being set up, probes and their answers need the worker to make
    /// progress even if the application never waits (its data always there): reads and writes
    /// then progress the hub themselves. Call without the state lock.
    pub(super) fn progress_upgrade(&self, upgrading: bool) {
        if upgrading {
            if let Some(hub) = self.hub.get() {
                hub.poll_now();
            }
        }
    }

    /// Whether the upgrade is under way with the UCX half open (see [`Conn::progress_upgrade`]).
    fn upgrading(state: &State) -> bool {
        state.link.is_some() && state.neg.as_ref().is_some_and(Negotiation::pending)
    }

    /// Answers the peer's probe over UCX (once our endpoint exists).
    fn answer_probe(&self, state: &mut State, token: u64) {
        match &state.link {
            Some(link) if link.has_endpoint() => {
                if let Err(e) = link.send_probe(protocol::PROBE_PONG, token) {
                    debug!("connection {}: {e}", self.serial);
                }
            }
            Some(_) => state.pending_pongs.push(token),
            None => {}
        }
    }

    /// Writes the negotiation's urgent byte and control bytes (as far as the socket takes them).
    fn flush_control(&self, state: &mut State) {
        let (Some(neg), Some(socket)) = (state.neg.as_mut(), state.socket.as_ref()) else { return };
        if !neg.has_output() {
            return;
        }
        match stream::flush(neg, socket, &state.rx) {
            Ok(true) => {}
            Ok(false) => state.io.writable = false,
            Err(e) => {
                // The peer is gone for writing; what it sent before can still be read.
                state.tx_error.get_or_insert_with(|| Error::io("", &e));
                neg.out().clear();
            }
        }
    }

    /// Gives the UCX half up once neither direction can use it: we gave up (or never got
    /// there) and the peer did not switch to it.
    fn drop_link_if_unused(&self, state: &mut State) {
        let Some(neg) = &state.neg else { return };
        if state.link.is_none() || neg.ucx_needed() {
            return;
        }
        if let Some(mut link) = state.link.take() {
            if let Some(hub) = self.hub.get() {
                hub.unregister_link(state.id);
                if !link.teardown() {
                    self.bury(link);
                }
            }
        }
    }

    /// Leaves a torn-down link whose sends are still in flight to the hub (and the hub to the
    /// background thread when no selector's thread progresses it).
    fn bury(&self, link: Link) {
        if let Some(hub) = self.hub.get() {
            if hub.bury(link) {
                background().adopt(hub.clone());
            }
        }
    }

    /// The control socket of an upgraded connection carries no user data: let the kernel probe
    /// it so that a peer that became unreachable (link down, host gone) fails the connection
    /// within `hadronio.livenessMillis` instead of TCP's quarter of an hour. The application's
    /// `SO_KEEPALIVE` stays what it set, as far as it can tell.
    fn watch_liveness(&self, state: &mut State) {
        let millis = state.settings.liveness_ms;
        let Some(socket) = &state.socket else { return };
        if millis == 0 || state.user_keepalive.is_some() {
            return;
        }
        let user = socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE).map(|v| v != 0).unwrap_or(false);
        match socket.set_liveness(millis) {
            Ok(()) => state.user_keepalive = Some(user),
            Err(e) => info!("connection {}: no liveness timers on the control socket: {e}", self.serial),
        }
    }

    /// A hadroNIO peer's socket carries control frames, a few bytes each, whose delay is the
    /// connection's (the end of a stream waits for FIN): Nagle's algorithm would hold one back
    /// until the peer's delayed ACK, up to 40 ms. The application's `TCP_NODELAY` stays what it
    /// set, as far as it can tell.
    fn control_frames_without_delay(state: &mut State) {
        let Some(socket) = &state.socket else { return };
        let user = socket.get_int(libc::IPPROTO_TCP, libc::TCP_NODELAY).map(|v| v != 0).unwrap_or(false);
        if socket.set_int(libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).is_ok() {
            state.user_nodelay = Some(user);
        }
    }

    fn set_fatal(&self, state: &mut State, error: Error) {
        if state.fatal.is_none() {
            let handshake = state.neg.as_ref().is_some_and(|n| n.pending() && n.peer_speaks_hadronio());
            if error.status == Status::Protocol {
                // A peer that breaks the protocol (or fails authentication) is worth a line.
                warn!("connection {} {}: {}; the connection fails", self.serial, Self::peer_label(state.role, state.remote), error);
            } else if handshake {
                info!("connection {} {} failed during the hadroNIO handshake: {}", self.serial, Self::peer_label(state.role, state.remote), error);
            } else {
                debug!("connection {}: {}", self.serial, error);
            }
            // What the negotiation queued tells the peer why (its own checks fail the same way).
            if let (Some(neg), Some(socket)) = (state.neg.as_mut(), state.socket.as_ref()) {
                let _ = stream::flush(neg, socket, &state.rx);
            }
            state.fatal = Some(error);
        }
    }

    /// "from <address>" (accepted) or "to <address>" (connected), for log lines.
    fn peer_label(role: Role, remote: Option<SocketAddr>) -> String {
        let direction = if role == Role::Server { "from" } else { "to" };
        match remote {
            Some(addr) => format!("{direction} {addr}"),
            None => String::from("(unconnected)"),
        }
    }

    /// Reads the peer's TCP stream into `dst` (or only what the protocol needs, without),
    /// mapping socket failures: a reset ends the peer's stream of a hadroNIO peer like an EOF
    /// without FIN (what arrived before stays readable); other failures are errors.
    fn read_stream(&self, state: &mut State, dst: Option<&mut super::iov::Cursor<'_>>) -> Result<usize> {
        let (Some(neg), Some(socket)) = (state.neg.as_mut(), state.socket.as_ref()) else { return Ok(0) };
        match stream::read(neg, socket, &mut state.rx, dst, Instant::now()) {
            Ok(read) => {
                if read.blocked {
                    state.io.readable = false;
                }
                stats::add(Counter::BytesReceivedTcp, read.delivered as u64);
                Ok(read.delivered)
            }
            Err(Failure::Negotiation(error)) => Err(error),
            Err(Failure::Io(e)) => {
                if state.neg.as_ref().is_some_and(Negotiation::peer_speaks_hadronio) {
                    Self::control_recv_failed(state, e).map(|()| 0)
                } else {
                    Err(Error::io("", &e))
                }
            }
        }
    }

    /// A reset control socket ends the peer's stream like an EOF without FIN: what arrived
    /// before (over UCX too) stays readable, and reading past it reports the reset. A control
    /// socket that timed out (the peer stopped answering: link down, host gone) fails the whole
    /// connection: nothing more will come over UCX either.
    fn control_recv_failed(state: &mut State, e: std::io::Error) -> Result<()> {
        match Self::control_error(state, &e) {
            None => {
                state.rx.eof = true;
                Ok(())
            }
            Some(error) => Err(error),
        }
    }

    /// The error a failed control socket fails the connection with; `None` for a reset (the
    /// peer's stream just ends there).
    fn control_error(state: &State, e: &std::io::Error) -> Option<Error> {
        match e.raw_os_error() {
            Some(libc::ECONNRESET) | Some(libc::ECONNABORTED) | Some(libc::EPIPE) => None,
            Some(libc::ETIMEDOUT) | Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) | Some(libc::EHOSTDOWN)
            | Some(libc::ENETDOWN) => {
                let text = Error::io("", e).message;
                let why = match state.user_keepalive {
                    Some(_) => format!(
                        "the peer did not answer on the control connection for {} ms (hadronio.livenessMillis)",
                        state.settings.liveness_ms
                    ),
                    None => String::from("the peer did not answer on the control connection"),
                };
                Some(Error::new(Status::Io, format!("{text}: {why}")))
            }
            _ => Some(Error::io("", e)),
        }
    }

    // --- events -------------------------------------------------------------------------------

    /// The socket became readable/writable, got urgent data or failed (epoll).
    pub fn on_io_event(&self, events: u32) {
        {
            let mut state = self.lock();
            if events & (poller::READABLE | poller::HANGUP | poller::ERROR) != 0 {
                state.io.readable = true;
            }
            if events & (poller::HANGUP | poller::ERROR) != 0 {
                state.io.ended = true;
            }
            if events & (poller::WRITABLE | poller::ERROR) != 0 {
                state.io.writable = true;
            }
            if state.phase == Phase::Connected && !state.released {
                if events & poller::URGENT != 0 {
                    let st = &mut *state;
                    let result = match (st.neg.as_mut(), st.socket.as_ref()) {
                        (Some(neg), Some(socket)) => stream::urgent(neg, socket, &mut st.rx, Instant::now()),
                        _ => Ok(()),
                    };
                    if let Err(Failure::Negotiation(e)) = result {
                        self.set_fatal(&mut state, e);
                    }
                }
                self.flush_control(&mut state);
                if state.input_shutdown || self.is_closed() {
                    self.discard_input(&mut state);
                } else {
                    // After a FIN too: whatever follows it is a violation, and the socket's end
                    // bounds the wait for the UCX messages the FIN announced.
                    self.progress_stream(&mut state);
                }
            }
        }
        self.notify_keys();
    }

    /// UCX completed something for this connection (receive, send, credits, probe, error).
    pub fn on_ucx_event(&self) {
        {
            let mut state = self.lock();
            if state.released {
                return;
            }
            let mut pong = None;
            let mut ping = None;
            if let Some(link) = &mut state.link {
                link.shared().untouch();
                ping = link.take_ping();
                pong = link.take_pong();
            }
            if log_enabled!(Level::Trace) && (ping.is_some() || pong.is_some()) {
                log::trace!("connection {}: probe ping {ping:?}, pong {pong:?}", self.serial);
            }
            if let Some(token) = ping {
                self.answer_probe(&mut state, token);
            }
            if let Some(token) = pong {
                if let Some(neg) = &mut state.neg {
                    neg.on_probe_answered(token);
                }
                self.drive(&mut state);
            }
            if let Some(link) = &mut state.link {
                if let Err(e) = link.flush() {
                    self.set_fatal(&mut state, e);
                }
            }
            if state.input_shutdown {
                self.discard_input(&mut state);
            }
        }
        self.notify_keys();
    }

    /// A time the connection asked the background thread for has come: a negotiation deadline
    /// (offer wait, authentication, probe), or the wait for UCX messages a FIN announced.
    pub fn on_deadline(&self) {
        {
            let mut state = self.lock();
            state.deadline_asked = None;
            if let Some(neg) = &mut state.neg {
                if let Err(e) = neg.on_timeout(Instant::now()) {
                    self.set_fatal(&mut state, e);
                }
            }
            self.drive(&mut state);
        }
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_always();
        }
    }

    // --- selectors ----------------------------------------------------------------------------

    pub fn add_key(&self, key: &Arc<Key>) {
        let mut keys = self.keys.lock();
        keys.retain(|k| k.strong_count() > 0);
        keys.push(Arc::downgrade(key));
        self.key_count.store(keys.len(), Ordering::Release);
    }

    pub fn remove_key(&self, key: &Arc<Key>) {
        let mut keys = self.keys.lock();
        keys.retain(|k| k.strong_count() > 0 && !std::ptr::eq(k.as_ptr(), Arc::as_ptr(key)));
        self.key_count.store(keys.len(), Ordering::Release);
    }

    fn notify_keys(&self) {
        if self.key_count.load(Ordering::Acquire) == 0 {
            return;
        }
        for key in self.keys.lock().iter() {
            if let Some(key) = key.upgrade() {
                key.notify();
            }
        }
    }

    /// The operations this channel is ready for (`SelectionKey` bits). Control frames were
    /// taken when the socket reported them (see [`Conn::on_io_event`]), so OP_READ means a read
    /// returns bytes, EOF or an error (or, rarely, only takes a control frame that came since).
    pub fn ready_ops(&self) -> u32 {
        let mut state = self.lock();
        if self.hub.get().is_none() && state.phase == Phase::Connected && !state.released {
            // No epoll watches an unbound connection's socket: look now.
            self.progress_stream(&mut state);
        }
        let mut ops = 0;
        match state.phase {
            Phase::Connecting => {
                if state.io.writable || state.fatal.is_some() {
                    ops |= OP_CONNECT;
                }
            }
            Phase::Connected => {
                if self.readable_now(&state) {
                    ops |= OP_READ;
                }
                if self.writable_now(&state) {
                    ops |= OP_WRITE;
                }
            }
            Phase::Unconnected | Phase::Failed => {}
        }
        ops
    }

    // --- information --------------------------------------------------------------------------

    pub fn local_addr(&self) -> Result<Option<SocketAddr>> {
        let state = self.lock();
        if !state.bound_local {
            return Ok(None);
        }
        let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
        socket.local_addr().map(Some).map_err(|e| Error::io("getsockname", &e))
    }

    pub fn remote_addr(&self) -> Option<SocketAddr> {
        let state = self.lock();
        if state.phase == Phase::Connected {
            state.remote
        } else {
            None
        }
    }

    /// Which path the connection took and why, plus UCX's description of its endpoint.
    pub fn describe(&self) -> String {
        let state = self.lock();
        let path = state.neg.as_ref().map_or("tcp (not connected)", Negotiation::path).to_string();
        match &state.link {
            Some(link) if link.has_endpoint() && state.neg.as_ref().is_some_and(Negotiation::upgraded) => {
                format!("{path}{}\n{}", link.path_words(), link.describe())
            }
            _ => path,
        }
    }
}

/// The hub's events go to the methods of the same names.
impl Events for Conn {
    fn on_io_event(&self, events: u32) {
        Conn::on_io_event(self, events);
    }

    fn on_ucx_event(&self) {
        Conn::on_ucx_event(self);
    }

    fn on_deadline(&self) {
        Conn::on_deadline(self);
    }

    fn linger_step(&self) -> bool {
        Conn::linger_step(self)
    }

    fn has_pending_tx(&self) -> bool {
        Conn::has_pending_tx(self)
    }
}

impl Ready for Conn {
    fn ready_ops(&self) -> u32 {
        Conn::ready_ops(self)
    }

    fn forget(&self, key: &Arc<Key>, _hub: &Arc<Hub>) {
        self.remove_key(key);
    }
}
