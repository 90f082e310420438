//! A connection: a kernel TCP socket first, upgraded to UCX when both sides speak hadroNIO.
//!
//! Lifecycle. The client connects with a real TCP socket and sends [`MAGIC`] and HELLO. A server
//! recognises hadroNIO clients by the magic (anything else is served as plain TCP) and answers
//! with its own HELLO. When a side is bound to a hub with a UCX worker it posts its receive slots
//! and sends ADDR (worker address, tag id, credits). A side that has the peer's ADDR creates an
//! endpoint, sends SWITCH on TCP and from then on writes over UCX. Until then bytes travel in DATA
//! frames on TCP, so nothing waits for the upgrade: a client may write before the server even
//! accepted. End of stream is a FIN frame carrying the number of UCX messages that precede it;
//! the TCP socket stays open as control and liveness channel, and its loss without FIN is an
//! abortive close.
//!
//! Binding. A connection is bound to a hub when it is registered with a selector (the selector's
//! hub) or first used in blocking mode (a private hub). Non-blocking use without a selector works
//! on TCP alone and does not bind.

use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::{debug, info, log_enabled, trace, warn, Level};
use parking_lot::{Mutex, MutexGuard};

use super::auth;
use super::error::{Error, Result, Status};
use super::hub::{background, Hub};
use super::iov::{Cursor, Region};
use super::link::Link;
use super::protocol::{self, Addr, FrameType, Hello, MAGIC};
use super::selector::{Key, OP_CONNECT, OP_READ, OP_WRITE};
use crate::config::settings;
use crate::net::poller;
use crate::net::socket::Socket;

static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// How often the write path looks at the control socket for a peer's close.
const TCP_CHECK_INTERVAL: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Unconnected,
    Connecting,
    Connected,
    Failed,
}

/// What the peer speaks, as far as we know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proto {
    /// A server that has not seen the client's first bytes yet.
    Unknown,
    Hadronio,
    Plain,
}

/// How long a transfer from or into the caller's memory may take to end before it is given up:
/// briefly once the peer is known to be gone (nothing more comes from it), longer after a local
/// close (the peer discards the message, which ends it).
const ABANDON_WAIT_PEER_GONE: Duration = Duration::from_millis(100);
const ABANDON_WAIT_CLOSED: Duration = Duration::from_secs(2);

/// How many bytes a server connection takes before it knows the peer's protocol (the kernel
/// takes writes into its send buffer right after accept, too).
const EARLY_LIMIT: usize = 64 * 1024;

/// Socket options; see `set_option`. KEEP IN SYNC: java/src/main/java/dev/hadronio/internal/Native.java
pub const OPT_TCP_NODELAY: i32 = 1;
pub const OPT_SO_SNDBUF: i32 = 2;
pub const OPT_SO_RCVBUF: i32 = 3;
pub const OPT_SO_KEEPALIVE: i32 = 4;
pub const OPT_SO_LINGER: i32 = 5;
pub const OPT_SO_REUSEADDR: i32 = 6;
pub const OPT_IP_TOS: i32 = 7;

/// Edge-triggered socket state, refreshed by epoll events and by would-block results.
#[derive(Default)]
struct IoFlags {
    readable: bool,
    writable: bool,
}

/// Parser state of the peer's TCP stream.
#[derive(Default)]
struct Rx {
    magic: [u8; 8],
    magic_len: usize,
    header: [u8; 8],
    header_len: usize,
    control: Option<(FrameType, usize)>,
    payload: Vec<u8>,
    /// Bytes of the current DATA frame still in the socket.
    data_left: usize,
    /// The peer sent SWITCH: its later bytes come over UCX.
    switched: bool,
    /// The peer's FIN: number of UCX messages before end of stream.
    fin: Option<u64>,
    /// When the FIN came.
    fin_at: Option<Instant>,
    /// The background thread will look at the connection when its announced messages are due.
    announced_watched: bool,
    /// The TCP stream ended (peer closed its socket).
    eof: bool,
}

/// Progress of the shared-secret challenge-response.
#[derive(Default)]
struct AuthState {
    own_challenge: Option<[u8; auth::CHALLENGE_LEN]>,
    peer_challenge: Option<[u8; auth::CHALLENGE_LEN]>,
    peer_verified: bool,
}

#[derive(Default)]
struct Tx {
    /// Bytes queued for the socket (frames, or the unsent tail of one).
    out: Vec<u8>,
    hello_sent: bool,
    addr_sent: bool,
    /// We sent SWITCH: our later bytes go over UCX.
    switched: bool,
    /// Output shut down (FIN sent or due).
    shutdown: bool,
    /// FIN requested before the peer's protocol was known.
    fin_pending: bool,
    /// Bytes written before the peer's protocol was known (sent raw or as DATA frames once it is).
    early: Vec<u8>,
    /// Writing to the socket failed (peer closed or reset): later writes fail with it.
    error: Option<Error>,
}

struct State {
    socket: Option<Socket>,
    role: Role,
    phase: Phase,
    bound_local: bool,
    remote: Option<SocketAddr>,
    proto: Proto,
    io: IoFlags,
    rx: Rx,
    tx: Tx,
    input_shutdown: bool,
    auth: AuthState,
    peer_hello: Option<Hello>,
    peer_addr: Option<Addr>,
    link: Option<Link>,
    id: u32,
    upgrade_failed: bool,
    path: String,
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
}

pub struct Conn {
    pub serial: u64,
    state: Mutex<State>,
    closed: AtomicBool,
    /// Set while the background thread watches this connection's staged data.
    watched: AtomicBool,
    hub: OnceLock<Arc<Hub>>,
    keys: Mutex<Vec<Weak<Key>>>,
    key_count: std::sync::atomic::AtomicUsize,
    weak: Weak<Conn>,
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
            key_count: std::sync::atomic::AtomicUsize::new(0),
            weak: weak.clone(),
        })
    }

    fn new_state(socket: Socket, role: Role, phase: Phase, proto: Proto) -> State {
        State {
            socket: Some(socket),
            role,
            phase,
            bound_local: false,
            remote: None,
            proto,
            io: IoFlags { readable: true, writable: true },
            rx: Rx::default(),
            tx: Tx::default(),
            input_shutdown: false,
            auth: AuthState::default(),
            peer_hello: None,
            peer_addr: None,
            link: None,
            id: 0,
            upgrade_failed: false,
            path: String::from("tcp (not upgraded yet)"),
            fatal: None,
            linger_deadline: None,
            linger_seconds: None,
            released: false,
            tcp_checked: Instant::now(),
            user_keepalive: None,
            user_nodelay: None,
        }
    }

    /// A new unconnected client socket.
    pub fn open() -> Result<Arc<Conn>> {
        let socket = Socket::new(settings().ipv6).map_err(|e| Error::io("socket", &e))?;
        Ok(Conn::with_state(Conn::new_state(socket, Role::Client, Phase::Unconnected, Proto::Hadronio)))
    }

    /// A connection accepted by a listener.
    pub fn accepted(socket: Socket, peer: SocketAddr) -> Arc<Conn> {
        let mut state = Conn::new_state(socket, Role::Server, Phase::Connected, Proto::Unknown);
        state.remote = Some(peer);
        state.bound_local = true;
        Conn::with_state(state)
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

    /// Binds to `hub` unless already bound; registers the socket and, with UCX, posts the
    /// receive slots. Returns the hub the connection ends up on.
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
        let id = hub.register_conn(&me, fd).map_err(|e| Error::io("epoll", &e))?;
        state.id = id;
        if !hub.has_ucx() && state.proto != Proto::Plain {
            state.upgrade_failed = true;
            state.path = String::from("tcp (UCX unavailable on this side)");
        }
        let _ = self.hub.set(hub.clone());
        debug!("connection {} bound to hub {} as id {id}", self.serial, hub.serial);
        self.advance(state);
        Ok(hub.clone())
    }

    /// Posts the UCX receive slots once the lane is known: at once on a blocking channel's hub,
    /// after the peer's HELLO on a selector's (whose lanes keep other processes of this host apart,
    /// see [`Lane`](super::hub::Lane)).
    fn ensure_link(&self, state: &mut State) {
        if state.link.is_some() || state.upgrade_failed || state.proto == Proto::Plain {
            return;
        }
        let Some(hub) = self.hub.get() else { return };
        let local = match &state.peer_hello {
            Some(hello) => super::hub::local_peer(hello),
            None if hub.is_selector() => return,
            None => None,
        };
        let s = settings();
        let link = hub.lane(local).and_then(|lane| {
            Link::new(lane, state.id, s.slots, s.slot_len, s.send_buffer).map_err(|e| format!("could not post UCX receives: {e}"))
        });
        match link {
            Ok(link) => {
                hub.register_link(link.shared());
                state.link = Some(link);
            }
            Err(e) => {
                state.upgrade_failed = true;
                state.path = format!("tcp ({e})");
            }
        }
    }

    /// Binds to a private hub if not bound yet (blocking use).
    fn ensure_bound(&self, state: &mut State) -> Result<Arc<Hub>> {
        if let Some(hub) = self.hub.get() {
            return Ok(hub.clone());
        }
        let hub = Hub::new(state.proto != Proto::Plain).map_err(|e| Error::io("creating a hub", &e))?;
        self.bind_locked(state, &hub)
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

    fn on_connected(&self, state: &mut State) {
        state.phase = Phase::Connected;
        state.bound_local = true;
        if !settings().ucx {
            state.proto = Proto::Plain;
            state.path = String::from("tcp (UCX disabled by hadronio.ucx)");
        }
        if state.proto == Proto::Hadronio && !state.tx.hello_sent {
            self.send_hello(state);
        }
        self.advance(state);
        if log_enabled!(Level::Debug) {
            debug!("connection {} connected to {:?}", self.serial, state.remote);
        }
    }

    fn send_hello(&self, state: &mut State) {
        let ucx = self.hub.get().map(|h| h.has_ucx()).unwrap_or(settings().ucx) && !state.upgrade_failed;
        let secret = settings().secret.is_some();
        let (host, process) = super::hub::origin();
        state.tx.out.extend_from_slice(&MAGIC);
        protocol::put_frame(&mut state.tx.out, FrameType::Hello, &Hello::ours(ucx, secret, host, process).encode());
        if secret {
            let challenge = auth::challenge();
            protocol::put_frame(&mut state.tx.out, FrameType::Auth, &challenge);
            state.auth.own_challenge = Some(challenge);
        }
        state.tx.hello_sent = true;
    }

    /// Whether the peer may take part in the upgrade: no secret is configured, or the peer
    /// proved it knows it.
    fn authenticated(state: &State) -> bool {
        settings().secret.is_none() || state.auth.peer_verified
    }

    /// Moves the handshake forward as far as the current state allows: ADDR, endpoint, SWITCH,
    /// a deferred FIN, and flushes the socket.
    fn advance(&self, state: &mut State) {
        if state.phase != Phase::Connected || state.released {
            return;
        }
        if !state.tx.early.is_empty() && state.proto != Proto::Unknown {
            let early = std::mem::take(&mut state.tx.early);
            if state.proto == Proto::Hadronio {
                for chunk in early.chunks(protocol::MAX_DATA_FRAME) {
                    protocol::put_frame(&mut state.tx.out, FrameType::Data, chunk);
                }
            } else {
                state.tx.out.extend_from_slice(&early);
            }
        }
        if state.proto == Proto::Hadronio && state.tx.hello_sent {
            self.ensure_link(state);
            if !state.tx.addr_sent && !state.tx.shutdown && Self::authenticated(state) {
                let peer_can = state.peer_hello.map(|h| h.capabilities & protocol::CAP_UCX != 0).unwrap_or(true);
                if let (Some(link), true) = (&state.link, peer_can) {
                    let payload = link.local_addr().encode();
                    protocol::put_frame(&mut state.tx.out, FrameType::Addr, &payload);
                    state.tx.addr_sent = true;
                }
            }
            let mut upgraded = false;
            if let (Some(link), Some(addr)) = (&mut state.link, &state.peer_addr) {
                if !link.has_endpoint() && !state.upgrade_failed {
                    match link.connect(addr) {
                        Ok(()) => {
                            state.path = String::from("ucx");
                            info!("connection {} upgraded to UCX", self.serial);
                            upgraded = true;
                        }
                        Err(e) => {
                            state.upgrade_failed = true;
                            state.path = format!("tcp (UCX endpoint could not be created: {e})");
                            info!("connection {} {} stays on TCP: {e}", self.serial, Self::peer_label(state.role, state.remote));
                        }
                    }
                }
                if link.has_endpoint() && !state.tx.switched && !state.tx.shutdown {
                    protocol::put_frame(&mut state.tx.out, FrameType::Switch, &[]);
                    state.tx.switched = true;
                }
            }
            if upgraded {
                self.watch_liveness(state);
            }
        }
        if state.tx.fin_pending && state.proto != Proto::Unknown {
            state.tx.fin_pending = false;
            self.send_fin(state);
        }
        self.flush_socket(state);
    }

    /// The control socket of an upgraded connection carries no user data: let the kernel probe
    /// it so that a peer that became unreachable (link down, host gone) fails the connection
    /// within `hadronio.livenessMillis` instead of TCP's quarter of an hour. The application's
    /// `SO_KEEPALIVE` stays what it set, as far as it can tell.
    fn watch_liveness(&self, state: &mut State) {
        let millis = settings().liveness_ms;
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
        if state.user_nodelay.is_some() {
            return;
        }
        let user = socket.get_int(libc::IPPROTO_TCP, libc::TCP_NODELAY).map(|v| v != 0).unwrap_or(false);
        if socket.set_int(libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).is_ok() {
            state.user_nodelay = Some(user);
        }
    }

    /// Gives up the UCX half (the peer turned out not to speak hadroNIO).
    fn drop_link(&self, state: &mut State) {
        if let Some(mut link) = state.link.take() {
            if let Some(hub) = self.hub.get() {
                hub.unregister_link(state.id);
                if !link.teardown() {
                    hub.bury(link);
                }
            }
        }
    }

    fn set_fatal(&self, state: &mut State, error: Error) {
        if state.fatal.is_none() {
            if error.status == Status::Protocol {
                // A peer that breaks the protocol (or fails authentication) is worth a line.
                warn!("connection {} {}: {}; the connection fails", self.serial, Self::peer_label(state.role, state.remote), error);
            } else if state.proto == Proto::Hadronio && state.peer_hello.is_none() {
                info!("connection {} {} failed during the hadroNIO handshake: {}", self.serial, Self::peer_label(state.role, state.remote), error);
            } else {
                debug!("connection {}: {}", self.serial, error);
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

    /// Writes queued control bytes to the socket.
    fn flush_socket(&self, state: &mut State) {
        while !state.tx.out.is_empty() {
            let Some(socket) = &state.socket else { return };
            match socket.send(&state.tx.out) {
                Ok(n) => {
                    state.tx.out.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    state.io.writable = false;
                    return;
                }
                Err(e) => {
                    // The peer is gone for writing; what it sent before can still be read.
                    if state.tx.error.is_none() {
                        state.tx.error = Some(Error::io("", &e));
                    }
                    state.tx.out.clear();
                    return;
                }
            }
        }
    }

    // --- the peer's TCP stream ----------------------------------------------------------------

    /// Reads what arrived on the socket and handles control frames. With `dst`, DATA bytes (and
    /// plain TCP bytes) are delivered into it; without, parsing stops before DATA bytes.
    fn pump(&self, state: &mut State, mut dst: Option<&mut Cursor<'_>>) -> Result<usize> {
        let mut delivered = 0;
        loop {
            if state.rx.eof || state.fatal.is_some() || state.released {
                break;
            }
            let Some(socket) = &state.socket else { break };
            match state.proto {
                Proto::Unknown => {
                    let mut peek = [0u8; 8];
                    // Looked at before peeking: if the peer had closed then, the bytes are final.
                    let peer_closed = socket.peer_write_closed();
                    match socket.recv(&mut peek, true) {
                        Ok(0) => {
                            state.proto = Proto::Plain;
                            state.path = String::from("tcp (peer closed before speaking)");
                            self.advance(state);
                        }
                        Ok(n) if peek[..n] == MAGIC[..n] && (n == MAGIC.len() || !peer_closed) => {
                            if n < MAGIC.len() {
                                // The rest of the greeting is on its way; wait for its edge
                                // (a FIN brings one too, and then the bytes are plain TCP).
                                state.io.readable = false;
                                break;
                            }
                            let mut discard = [0u8; 8];
                            let _ = socket.recv(&mut discard, false);
                            state.proto = Proto::Hadronio;
                            state.rx.magic_len = MAGIC.len();
                            Self::control_frames_without_delay(state);
                            self.send_hello(state);
                            self.advance(state);
                        }
                        Ok(n) => {
                            info!(
                                "connection {} {}: served as plain TCP, the peer does not speak hadroNIO (first bytes {:02x?})",
                                self.serial,
                                Self::peer_label(state.role, state.remote),
                                &peek[..n]
                            );
                            state.proto = Proto::Plain;
                            state.upgrade_failed = true;
                            state.path = String::from("tcp (peer does not speak hadroNIO)");
                            self.drop_link(state);
                            self.advance(state);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            state.io.readable = false;
                            break;
                        }
                        Err(e) => return Err(Error::io("", &e)),
                    }
                }
                Proto::Plain => {
                    let Some(dst) = dst.as_deref_mut() else { break };
                    let Some((addr, len)) = dst.chunk(usize::MAX) else { break };
                    // SAFETY: `addr..addr+len` is caller memory valid and writable for this call.
                    let buf = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
                    match socket.recv(buf, false) {
                        Ok(0) => state.rx.eof = true,
                        Ok(n) => {
                            dst.advance(n);
                            delivered += n;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            state.io.readable = false;
                            break;
                        }
                        Err(e) => return Err(Error::io("", &e)),
                    }
                }
                Proto::Hadronio => {
                    if state.rx.magic_len < MAGIC.len() {
                        let from = state.rx.magic_len;
                        match socket.recv(&mut state.rx.magic[from..], false) {
                            Ok(0) if from == 0 && state.role == Role::Client && state.tx.error.is_none() => {
                                // The server closed before it said anything (it closes each
                                // connection at once, say): a plain end of stream, as with TCP.
                                // (A reset shows as a failed send or receive, never as this.)
                                state.proto = Proto::Plain;
                                state.rx.eof = true;
                                state.path = String::from("tcp (server closed before speaking)");
                                self.drop_link(state);
                            }
                            Ok(0) => state.rx.eof = true,
                            Ok(n) => {
                                state.rx.magic_len += n;
                                let got = state.rx.magic_len;
                                if state.rx.magic[..got] != MAGIC[..got] {
                                    return Err(Error::new(
                                        Status::Protocol,
                                        "the peer is not a hadroNIO server (it did not answer with the hadroNIO \
                                         greeting); talk to plain TCP servers with hadronio.transport=tcp",
                                    ));
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                state.io.readable = false;
                                break;
                            }
                            Err(e) => Self::control_recv_failed(state, e)?,
                        }
                        continue;
                    }
                    if state.rx.data_left > 0 {
                        let Some(dst) = dst.as_deref_mut() else { break };
                        let Some((addr, len)) = dst.chunk(state.rx.data_left) else { break };
                        // SAFETY: `addr..addr+len` is caller memory valid and writable for this call.
                        let buf = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
                        match socket.recv(buf, false) {
                            Ok(0) => state.rx.eof = true,
                            Ok(n) => {
                                dst.advance(n);
                                delivered += n;
                                state.rx.data_left -= n;
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                state.io.readable = false;
                                break;
                            }
                            Err(e) => Self::control_recv_failed(state, e)?,
                        }
                        continue;
                    }
                    if let Some((kind, length)) = state.rx.control {
                        let have = state.rx.payload.len();
                        state.rx.payload.resize(length, 0);
                        match socket.recv(&mut state.rx.payload[have..], false) {
                            Ok(0) => {
                                state.rx.payload.truncate(have);
                                state.rx.eof = true;
                            }
                            Ok(n) => {
                                state.rx.payload.truncate(have + n);
                                if have + n == length {
                                    state.rx.control = None;
                                    let payload = std::mem::take(&mut state.rx.payload);
                                    self.on_frame(state, kind, &payload)?;
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                state.rx.payload.truncate(have);
                                state.io.readable = false;
                                break;
                            }
                            Err(e) => {
                                state.rx.payload.truncate(have);
                                Self::control_recv_failed(state, e)?;
                            }
                        }
                        continue;
                    }
                    let from = state.rx.header_len;
                    match socket.recv(&mut state.rx.header[from..], false) {
                        Ok(0) => state.rx.eof = true,
                        Ok(n) => {
                            state.rx.header_len += n;
                            if state.rx.header_len == protocol::FRAME_HEADER_LEN {
                                state.rx.header_len = 0;
                                let header = protocol::decode_header(&state.rx.header)?;
                                if header.kind == FrameType::Data {
                                    if state.rx.switched || state.rx.fin.is_some() {
                                        return Err(Error::new(Status::Protocol, "hadroNIO protocol error: DATA after SWITCH or FIN"));
                                    }
                                    state.rx.data_left = header.length;
                                } else if header.length == 0 {
                                    self.on_frame(state, header.kind, &[])?;
                                } else {
                                    state.rx.control = Some((header.kind, header.length));
                                    state.rx.payload.clear();
                                }
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            state.io.readable = false;
                            break;
                        }
                        Err(e) => Self::control_recv_failed(state, e)?,
                    }
                }
            }
        }
        if !state.rx.announced_watched {
            if let (Some(at), Some(me)) = (self.announced_deadline(state), self.arc()) {
                // Selectors learn of the failure when it is due, not at the next event.
                state.rx.announced_watched = true;
                background().wake_at(at, &me);
            }
        }
        Ok(delivered)
    }

    /// A time the connection asked the background thread for has come: its readiness may have
    /// changed (see [`Conn::announced_deadline`]).
    pub fn on_deadline(&self) {
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_always();
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
                        settings().liveness_ms
                    ),
                    None => String::from("the peer did not answer on the control connection"),
                };
                Some(Error::new(Status::Io, format!("{text}: {why}")))
            }
            _ => Some(Error::io("", e)),
        }
    }

    /// Fails a write to a hadroNIO peer whose control socket was reset or failed, looking at the
    /// socket's state rather than reading it: bytes the peer sent before may still wait there,
    /// ahead of the reset, and stay readable (the kernel fails writes to a reset connection
    /// while its received bytes can still be read, too).
    fn check_control(state: &State) -> Result<()> {
        let Some(socket) = &state.socket else { return Ok(()) };
        if !socket.hung_up() {
            return Ok(());
        }
        let error = socket.take_error().ok().flatten();
        match error.and_then(|e| Self::control_error(state, &e)) {
            Some(error) => Err(error),
            None => Err(Error::new(Status::Reset, "Connection reset by peer")),
        }
    }

    fn on_frame(&self, state: &mut State, kind: FrameType, payload: &[u8]) -> Result<()> {
        if log_enabled!(Level::Trace) {
            trace!("connection {}: {kind:?} frame of {} bytes", self.serial, payload.len());
        }
        let protocol_error = |what: &str| Err(Error::new(Status::Protocol, format!("hadroNIO protocol error: {what}")));
        match kind {
            FrameType::Hello => {
                if state.peer_hello.is_some() {
                    return protocol_error("second HELLO");
                }
                let hello = Hello::decode(payload)?;
                let peer_auth = hello.capabilities & protocol::CAP_AUTH != 0;
                match (settings().secret.is_some(), peer_auth) {
                    (true, false) => {
                        return Err(Error::new(
                            Status::Protocol,
                            "hadroNIO authentication failed: the peer has no shared secret (hadronio.secret) configured",
                        ))
                    }
                    (false, true) => {
                        return Err(Error::new(
                            Status::Protocol,
                            "hadroNIO authentication failed: the peer requires a shared secret; set hadronio.secret or HADRONIO_SECRET",
                        ))
                    }
                    _ => {}
                }
                state.peer_hello = Some(hello);
            }
            FrameType::Auth => {
                let Some(secret) = settings().secret.clone() else {
                    return protocol_error("AUTH without a shared secret");
                };
                let (Some(own), true) = (state.auth.own_challenge, state.peer_hello.is_some()) else {
                    return protocol_error("AUTH before HELLO");
                };
                match payload.len() {
                    auth::CHALLENGE_LEN if state.auth.peer_challenge.is_none() => {
                        let mut challenge = [0u8; auth::CHALLENGE_LEN];
                        challenge.copy_from_slice(payload);
                        let proof = auth::proof(&secret, state.role == Role::Client, &challenge, &own);
                        protocol::put_frame(&mut state.tx.out, FrameType::Auth, &proof);
                        state.auth.peer_challenge = Some(challenge);
                    }
                    auth::PROOF_LEN if state.auth.peer_challenge.is_some() && !state.auth.peer_verified => {
                        let peer_challenge = state.auth.peer_challenge.unwrap_or_default();
                        if !auth::verify(&secret, state.role == Role::Server, &own, &peer_challenge, payload) {
                            return Err(Error::new(
                                Status::Protocol,
                                "hadroNIO authentication failed: the peer's shared secret differs",
                            ));
                        }
                        state.auth.peer_verified = true;
                        debug!("connection {}: peer authenticated", self.serial);
                    }
                    _ => return protocol_error("AUTH out of order"),
                }
            }
            FrameType::Addr => {
                if state.peer_hello.is_none() || state.peer_addr.is_some() {
                    return protocol_error("ADDR out of order");
                }
                if !Self::authenticated(state) {
                    return protocol_error("ADDR before the peer authenticated");
                }
                state.peer_addr = Some(Addr::decode(payload)?);
            }
            FrameType::Switch => {
                if state.rx.switched || state.rx.fin.is_some() {
                    return protocol_error("SWITCH out of order");
                }
                if state.peer_hello.is_none() {
                    return protocol_error("SWITCH before HELLO");
                }
                if state.link.is_none() || !state.tx.addr_sent {
                    return protocol_error("SWITCH before this side sent ADDR");
                }
                state.rx.switched = true;
            }
            FrameType::Fin => {
                if state.rx.fin.is_some() {
                    return protocol_error("second FIN");
                }
                let messages = protocol::decode_u64(payload)?;
                if !state.rx.switched && messages != 0 {
                    return protocol_error("FIN counts UCX messages but the peer never switched");
                }
                if let Some(link) = &state.link {
                    if messages < link.consumed() {
                        return protocol_error("FIN counts fewer messages than were received");
                    }
                }
                state.rx.fin = Some(messages);
                state.rx.fin_at = Some(Instant::now());
            }
            FrameType::Credit | FrameType::Data => return protocol_error(&format!("unexpected {kind:?} frame")),
        }
        self.advance(state);
        Ok(())
    }

    // --- reading ------------------------------------------------------------------------------

    /// Whether the peer's stream is complete: all bytes up to its FIN were delivered.
    fn at_end(&self, state: &State) -> bool {
        match state.proto {
            Proto::Plain => state.rx.eof,
            Proto::Unknown => false,
            Proto::Hadronio => match state.rx.fin {
                Some(messages) if state.rx.switched => match &state.link {
                    Some(link) => link.consumed() >= messages,
                    None => true,
                },
                Some(_) => true,
                None => false,
            },
        }
    }

    /// When a peer that closed its socket after a FIN stops being waited for: the UCX messages
    /// the FIN announced were sent before it, so they come soon or never (a broken or hostile
    /// peer), and waiting for them is bounded by `hadronio.livenessMillis` (none if 0).
    fn announced_deadline(&self, state: &State) -> Option<Instant> {
        let millis = settings().liveness_ms;
        if millis == 0 || state.proto != Proto::Hadronio || !state.rx.eof || self.at_end(state) {
            return None;
        }
        state.rx.fin_at.map(|at| at + Duration::from_millis(millis))
    }

    /// The error that ends reading when no more bytes can come, if any.
    fn read_failure(&self, state: &State) -> Option<Error> {
        if let Some(error) = &state.fatal {
            return Some(error.clone());
        }
        if self.announced_deadline(state).is_some_and(|d| Instant::now() >= d) {
            let announced = state.rx.fin.unwrap_or(0);
            let received = state.link.as_ref().map_or(0, |l| l.consumed());
            return Some(Error::new(
                Status::Reset,
                format!("Connection reset by peer (it closed; {received} of the {announced} UCX messages it announced arrived)"),
            ));
        }
        if state.proto == Proto::Hadronio && state.rx.eof && state.rx.fin.is_none() {
            // Say where the peer's stream broke off when that is more than "somewhere".
            let at = if let Some((kind, length)) = state.rx.control {
                format!(" (it closed in the middle of a {kind:?} frame: {} of {length} bytes)", state.rx.payload.len())
            } else if state.rx.header_len > 0 {
                format!(" (it closed in the middle of a frame header: {} of {} bytes)", state.rx.header_len, protocol::FRAME_HEADER_LEN)
            } else if state.rx.data_left > 0 {
                format!(" (it closed in the middle of a DATA frame: {} bytes missing)", state.rx.data_left)
            } else if state.peer_hello.is_none() {
                String::from(" (it closed during the hadroNIO handshake, before its HELLO)")
            } else {
                String::new()
            };
            return Some(Error::new(Status::Reset, format!("Connection reset by peer{at}")));
        }
        if let (true, Some(link)) = (state.rx.switched, &state.link) {
            if let Some(code) = link.endpoint_error() {
                if !self.at_end(state) {
                    return Some(Error::new(
                        Status::Reset,
                        format!("Connection reset by peer (UCX: {})", crate::ucx::Status(code as i8)),
                    ));
                }
            }
        }
        None
    }

    fn read_now(&self, state: &mut State, dst: &mut Cursor<'_>, allow_user: bool) -> Result<usize> {
        if state.input_shutdown {
            return Err(Error::new(Status::Eof, "input shut down"));
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        let mut n = 0;
        if !state.rx.switched {
            n += self.pump(state, Some(dst))?;
        }
        if state.rx.switched && dst.remaining() > 0 {
            if let Some(link) = &mut state.link {
                // Only a read that returns nothing else may wait for a large message landing in
                // the caller's memory: returning bytes would leave UCX writing into a buffer the
                // caller owns again.
                n += link.read(dst, allow_user && n == 0)?;
            }
        }
        if n > 0 {
            return Ok(n);
        }
        if self.at_end(state) {
            if let Some(link) = &mut state.link {
                link.report_all()?;
            }
            return Err(Error::new(Status::Eof, "end of stream"));
        }
        if let Some(error) = self.read_failure(state) {
            return Err(error);
        }
        Ok(0)
    }

    fn readable_now(&self, state: &State) -> bool {
        if state.fatal.is_some() || state.input_shutdown || self.at_end(state) || self.read_failure(state).is_some() {
            return true;
        }
        match state.proto {
            Proto::Unknown | Proto::Plain => state.io.readable || state.rx.eof,
            Proto::Hadronio if !state.rx.switched => state.io.readable || state.rx.eof,
            Proto::Hadronio => state.link.as_ref().is_some_and(|l| l.readable()),
        }
    }

    /// Reads into `regions`. Blocking reads wait for at least one byte; `Ok(0)` only for
    /// non-blocking reads without data.
    pub fn read(&self, regions: &[Region], blocking: bool, timeout: Option<Duration>) -> Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut dst = Cursor::new(regions);
        if dst.remaining() == 0 {
            return Ok(0);
        }
        // Large messages may land straight in the caller's memory when the call can wait for them.
        let allow_user = blocking && timeout.is_none();
        let mut polled = false;
        let mut drained = false;
        loop {
            let hub = {
                let mut state = self.lock();
                if self.is_closed() {
                    Self::abandon_user_rx(&mut state);
                    return Err(Error::closed());
                }
                if blocking && self.hub.get().is_none() {
                    self.ensure_bound(&mut state)?;
                }
                Self::assume_ready_unbound(&self.hub, &mut state);
                let blocked = state.link.as_ref().is_some_and(|l| l.has_endpoint() && !l.writable());
                let result = self.read_now(&mut state, &mut dst, allow_user);
                match result {
                    Ok(0) => {}
                    Ok(n) => {
                        let unblocked = blocked && state.link.as_ref().is_some_and(|l| l.writable());
                        drop(state);
                        if unblocked {
                            self.writers_may_go();
                        }
                        return Ok(n);
                    }
                    Err(e) if e.status == Status::Reset && !drained && state.link.is_some() => {
                        // Messages that arrived before the reset may still wait in the worker:
                        // deliver them before reporting it.
                        drained = true;
                        let hub = self.hub.get().cloned();
                        drop(state);
                        if let Some(hub) = hub {
                            hub.poll_now();
                        }
                        continue;
                    }
                    Err(e) => {
                        Self::abandon_user_rx(&mut state);
                        if e.status != Status::Eof {
                            self.set_fatal(&mut state, e.clone());
                        }
                        trace!("connection {}: read ends with {:?} ({:?}, {})", self.serial, e.status, state.proto, state.path);
                        return Err(e);
                    }
                }
                let announced = self.announced_deadline(&state);
                if !blocking {
                    if polled {
                        return Ok(0);
                    }
                    (self.hub.get().cloned(), announced)
                } else {
                    (Some(self.ensure_bound(&mut state)?), announced)
                }
            };
            match hub {
                (None, _) => return Ok(0),
                (Some(hub), _) if !blocking => {
                    hub.poll_now();
                    polled = true;
                }
                (Some(hub), announced) => {
                    let until = match (deadline, announced) {
                        (Some(d), Some(a)) => Some(d.min(a)),
                        (d, a) => d.or(a),
                    };
                    let ready = hub.wait(&mut || self.is_closed() || self.readable_now(&self.lock()), until);
                    if !ready && !self.is_closed() && deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(Error::new(Status::TimedOut, "Read timed out"));
                    }
                }
            }
        }
    }

    /// The messages a read consumed carried the credits a full send buffer waited for: its bytes
    /// went out, and a writer waiting for room (or a selector, for OP_WRITE) must look again.
    fn writers_may_go(&self) {
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_waiters();
        }
    }

    /// A connection on no hub (non-blocking, never registered) has no epoll watching its socket
    /// to say when it turns readable or writable again: try the socket on every call, as the
    /// kernel's own channels do.
    fn assume_ready_unbound(hub: &OnceLock<Arc<Hub>>, state: &mut State) {
        if hub.get().is_none() {
            state.io.readable = true;
            state.io.writable = true;
        }
    }

    /// A read is returning early (close, error): UCX must not keep writing into its memory.
    fn abandon_user_rx(state: &mut State) {
        let wait = if Self::peer_gone(state) { ABANDON_WAIT_PEER_GONE } else { ABANDON_WAIT_CLOSED };
        if let Some(link) = &mut state.link {
            link.abandon_user_rx(wait);
        }
    }

    // --- writing ------------------------------------------------------------------------------

    fn write_now(&self, state: &mut State, src: &mut Cursor<'_>, blocking: bool) -> Result<()> {
        if let Some(error) = &state.fatal {
            return Err(error.clone());
        }
        if state.tx.shutdown {
            return Err(Error::new(Status::OutputShutdown, "output shut down"));
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        if let Some(error) = &state.tx.error {
            return Err(error.clone());
        }
        if state.proto == Proto::Hadronio && state.rx.eof {
            return Err(Error::new(Status::BrokenPipe, "Broken pipe"));
        }
        if state.proto == Proto::Unknown || (state.proto == Proto::Hadronio && !state.tx.switched) {
            // Take the peer's HELLO/ADDR so that we switch to UCX as soon as possible.
            self.pump(state, None)?;
            if state.proto == Proto::Hadronio && !state.rx.eof {
                Self::check_control(state)?;
            }
        } else if state.proto == Proto::Hadronio && !state.rx.eof {
            // Now and then look at the control socket so that writes to a peer that closed fail
            // (as they do with the kernel) even when nobody else watches the socket.
            let now = Instant::now();
            if now.duration_since(state.tcp_checked) >= TCP_CHECK_INTERVAL {
                state.tcp_checked = now;
                self.pump(state, None)?;
                if !state.rx.eof {
                    Self::check_control(state)?;
                }
            }
        }
        if state.proto == Proto::Hadronio && state.rx.eof {
            return Err(Error::new(Status::BrokenPipe, "Broken pipe"));
        }
        self.flush_socket(state);
        match state.proto {
            Proto::Unknown => {
                // Kept until the peer's first bytes tell how to send them.
                while state.tx.early.len() < EARLY_LIMIT {
                    let Some((addr, len)) = src.chunk(EARLY_LIMIT - state.tx.early.len()) else { break };
                    // SAFETY: `addr..addr+len` is caller memory valid for this call.
                    state.tx.early.extend_from_slice(unsafe { std::slice::from_raw_parts(addr as *const u8, len) });
                    src.advance(len);
                }
                Ok(())
            }
            Proto::Plain => {
                while let Some((addr, len)) = src.chunk(usize::MAX) {
                    let Some(socket) = &state.socket else { return Err(Error::closed()) };
                    // SAFETY: `addr..addr+len` is caller memory valid for this call.
                    let buf = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
                    match socket.send(buf) {
                        Ok(n) => src.advance(n),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            state.io.writable = false;
                            break;
                        }
                        Err(e) => return Err(Error::io("", &e)),
                    }
                }
                Ok(())
            }
            Proto::Hadronio if state.tx.switched => {
                if let Some(link) = &mut state.link {
                    link.write(src, blocking)?;
                }
                Ok(())
            }
            Proto::Hadronio => {
                while state.tx.out.is_empty() {
                    let Some((addr, len)) = src.chunk(protocol::MAX_DATA_FRAME) else { break };
                    let Some(socket) = &state.socket else { return Err(Error::closed()) };
                    let header = protocol::encode_header(FrameType::Data, len);
                    // SAFETY: `addr..addr+len` is caller memory valid for this call.
                    let payload = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
                    match socket.send_vectored(&[&header, payload]) {
                        Ok(sent) => {
                            if sent < header.len() + len {
                                // Keep the unsent tail of the frame; the frame counts as written.
                                if sent < header.len() {
                                    state.tx.out.extend_from_slice(&header[sent..]);
                                    state.tx.out.extend_from_slice(payload);
                                } else {
                                    state.tx.out.extend_from_slice(&payload[sent - header.len()..]);
                                }
                                state.io.writable = false;
                            }
                            src.advance(len);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            state.io.writable = false;
                            break;
                        }
                        Err(e) => return Err(Error::io("", &e)),
                    }
                }
                Ok(())
            }
        }
    }

    fn failed(&self) -> bool {
        self.lock().fatal.is_some()
    }

    /// Whether the peer is known to be gone: nothing more will come from it.
    fn peer_gone(state: &State) -> bool {
        state.fatal.is_some()
            || state.rx.eof
            || state.tx.error.is_some()
            || state.link.as_ref().is_some_and(|l| l.endpoint_error().is_some())
    }

    /// How long a pending transfer from or into the caller's memory may still take, if it may
    /// be given up at all.
    fn abandon_wait(&self, state: &State) -> Option<Duration> {
        if Self::peer_gone(state) {
            Some(ABANDON_WAIT_PEER_GONE)
        } else if self.is_closed() {
            Some(ABANDON_WAIT_CLOSED)
        } else {
            None
        }
    }

    /// Whether a lingering close should wait for the peer to consume our UCX messages: not once
    /// the peer closed its side (its FIN came), when everything we sent has left (the messages
    /// wait in the peer's worker; our endpoint stays open).
    fn peer_reading(&self, state: &State) -> bool {
        !state.rx.eof && state.link.as_ref().is_some_and(|l| !l.peer_caught_up())
    }

    /// Whether written bytes still wait in this process (staged for UCX or queued for the socket).
    fn pending_tx(&self, state: &State) -> bool {
        !state.tx.out.is_empty() || !state.tx.early.is_empty() || state.link.as_ref().is_some_and(|l| !l.tx_idle())
    }

    /// Whether the background thread must keep progressing this connection's hub; clears the
    /// watch mark when not.
    pub fn has_pending_tx(&self) -> bool {
        let state = self.lock();
        let pending = !state.released && self.pending_tx(&state);
        if !pending {
            self.watched.store(false, Ordering::Release);
        }
        pending
    }

    /// Bytes the caller counts as written (or a FIN) that still wait in this process must go out
    /// even if no thread of the application comes back: the background thread watches them.
    fn watch_pending_tx(&self, mut state: MutexGuard<'_, State>) {
        if self.watched.load(Ordering::Acquire) || !self.pending_tx(&state) {
            return;
        }
        let hub = match self.hub.get() {
            Some(hub) => Some(hub.clone()),
            None => self.ensure_bound(&mut state).ok(),
        };
        if let (Some(hub), Some(me)) = (hub, self.arc()) {
            drop(state);
            self.watched.store(true, Ordering::Release);
            hub.watch_pending(me);
        }
    }

    fn writable_now(&self, state: &State) -> bool {
        if state.fatal.is_some() || state.tx.shutdown || state.tx.error.is_some() {
            return true;
        }
        if state.phase != Phase::Connected {
            return false;
        }
        match state.proto {
            Proto::Unknown => state.tx.early.len() < EARLY_LIMIT,
            Proto::Plain => state.io.writable,
            Proto::Hadronio if state.tx.switched => state.rx.eof || state.link.as_ref().is_some_and(|l| l.writable()),
            Proto::Hadronio => state.rx.eof || (state.tx.out.is_empty() && state.io.writable),
        }
    }

    /// Writes from `regions`. Blocking writes return when everything was written (sent or
    /// staged); non-blocking ones may write less, possibly nothing.
    pub fn write(&self, regions: &[Region], blocking: bool) -> Result<usize> {
        let mut src = Cursor::new(regions);
        let mut polled = false;
        loop {
            let hub = {
                let mut state = self.lock();
                if let Some(link) = &mut state.link {
                    if link.user_tx_pending() {
                        if !link.user_tx_done() {
                            // A large send from the caller's memory: wait for it even if the
                            // channel is being closed (an abortive close makes the peer
                            // discard it, which completes it).
                            let waiter = link.user_tx_waiter();
                            let hub = self.hub.get().cloned();
                            drop(state);
                            if let (Some(hub), Some(waiter)) = (hub, waiter) {
                                let since = Instant::now();
                                while !waiter.done() {
                                    hub.wait(&mut || waiter.done() || self.failed(), Some(Instant::now() + Duration::from_millis(100)));
                                    let wait = self.abandon_wait(&self.lock());
                                    if !waiter.done() && wait.is_some_and(|w| since.elapsed() >= w) {
                                        // A dead peer neither takes the message nor discards it.
                                        let mut state = self.lock();
                                        if let Some(link) = &mut state.link {
                                            link.abandon_user_tx();
                                        }
                                        let error = Error::new(Status::Reset, "Connection reset by peer");
                                        state.tx.error.get_or_insert_with(|| error.clone());
                                        return Err(error);
                                    }
                                }
                            }
                            continue;
                        }
                        if let Err(e) = link.finish_user_tx() {
                            self.set_fatal(&mut state, e.clone());
                            return Err(e);
                        }
                    }
                }
                if self.is_closed() {
                    return Err(Error::closed());
                }
                if blocking && self.hub.get().is_none() {
                    self.ensure_bound(&mut state)?;
                }
                Self::assume_ready_unbound(&self.hub, &mut state);
                if let Err(e) = self.write_now(&mut state, &mut src, blocking) {
                    match e.status {
                        Status::OutputShutdown | Status::NotConnected => {}
                        // The peer is gone for writing; what it sent before can still be read.
                        Status::Reset | Status::BrokenPipe => {
                            state.tx.error.get_or_insert_with(|| e.clone());
                        }
                        _ => self.set_fatal(&mut state, e.clone()),
                    }
                    // What this call already wrote counts (the JDK's blocking write also returns
                    // its count when another thread shuts the output down).
                    if src.moved() > 0 {
                        self.watch_pending_tx(state);
                        return Ok(src.moved());
                    }
                    return Err(e);
                }
                if state.link.as_ref().is_some_and(|l| l.user_tx_pending()) {
                    continue;
                }
                if src.remaining() == 0 || (!blocking && (src.moved() > 0 || polled)) {
                    self.watch_pending_tx(state);
                    return Ok(src.moved());
                }
                if blocking {
                    Some(self.ensure_bound(&mut state)?)
                } else {
                    self.hub.get().cloned()
                }
            };
            match hub {
                None => return Ok(src.moved()),
                Some(hub) if !blocking => {
                    hub.poll_now();
                    polled = true;
                }
                Some(hub) => {
                    hub.wait(&mut || self.is_closed() || self.writable_now(&self.lock()), None);
                }
            }
        }
    }

    // --- shutdown and close -------------------------------------------------------------------

    fn send_fin(&self, state: &mut State) {
        match state.proto {
            Proto::Plain => {
                if let Some(socket) = &state.socket {
                    let _ = socket.shutdown(Shutdown::Write);
                }
            }
            Proto::Hadronio => {
                let messages = match (&state.link, state.tx.switched) {
                    (Some(link), true) => link.messages_committed(),
                    _ => 0,
                };
                protocol::put_frame(&mut state.tx.out, FrameType::Fin, &protocol::encode_u64(messages));
                self.flush_socket(state);
            }
            Proto::Unknown => state.tx.fin_pending = true,
        }
    }

    pub fn shutdown_output(&self) -> Result<()> {
        let mut state = self.lock();
        if self.is_closed() {
            return Err(Error::closed());
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        if !state.tx.shutdown {
            state.tx.shutdown = true;
            if state.proto == Proto::Unknown {
                // Learn the peer's protocol first if its bytes are there.
                let _ = self.pump(&mut state, None);
            }
            self.send_fin(&mut state);
        }
        // The FIN may wait behind written bytes the socket did not take yet.
        self.watch_pending_tx(state);
        self.notify_keys();
        // A writer blocked in this channel must see the shutdown (it returns what it wrote, or
        // fails if nothing, as with the JDK).
        if let Some(hub) = self.hub.get() {
            hub.wake_always();
        }
        Ok(())
    }

    pub fn shutdown_input(&self) -> Result<()> {
        let mut state = self.lock();
        if self.is_closed() {
            return Err(Error::closed());
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        state.input_shutdown = true;
        self.discard_input(&mut state);
        drop(state);
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_always();
        }
        Ok(())
    }

    /// After `shutdownInput`, arriving bytes are read and dropped so the peer never stalls.
    fn discard_input(&self, state: &mut State) {
        let mut scratch = vec![0u8; 16 * 1024];
        loop {
            let regions = [Region { addr: scratch.as_mut_ptr() as usize, len: scratch.len() }];
            let mut dst = Cursor::new(&regions);
            let mut n = 0;
            if !state.rx.switched {
                n += self.pump(state, Some(&mut dst)).unwrap_or(0);
            }
            if state.rx.switched {
                if let Some(link) = &mut state.link {
                    n += link.read(&mut dst, false).unwrap_or(0);
                }
            }
            if n == 0 {
                break;
            }
        }
        if let Some(link) = &mut state.link {
            let _ = link.report_all();
        }
    }

    /// Closes the channel: graceful (FIN after pending data), abortive (RST) if unread data is
    /// left or SO_LINGER is 0. Wakes threads blocked on the channel.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut state = self.lock();
        if state.released {
            return;
        }
        let abort = state.linger_seconds == Some(0);
        if !abort && state.phase == Phase::Connected && state.fatal.is_none() {
            // Learn the peer's protocol and take its control frames, so that they do not count
            // as unread data (which would make the kernel reset the connection).
            if let Err(e) = self.pump(&mut state, None) {
                self.set_fatal(&mut state, e);
            }
        }
        if !abort && state.phase == Phase::Connected && !state.tx.shutdown && state.fatal.is_none() {
            state.tx.shutdown = true;
            self.send_fin(&mut state);
        }
        // A send from a writer's memory cannot outlive the close: abort instead of lingering.
        let abort = abort || state.link.as_ref().is_some_and(|l| l.user_tx_pending());
        let pending = self.pending_tx(&state) || self.peer_reading(&state);
        let hub = self.hub.get().cloned();
        match (pending && !abort && state.fatal.is_none(), hub.as_ref(), self.arc()) {
            (true, Some(hub), Some(me)) => {
                let linger = Duration::from_millis(settings().linger_ms);
                state.linger_deadline = Some(Instant::now() + linger);
                drop(state);
                hub.linger(me);
            }
            _ => {
                if pending && !abort && state.fatal.is_none() {
                    self.flush_socket_blocking(&mut state, Instant::now() + Duration::from_secs(1));
                }
                self.release(&mut state, abort);
                drop(state);
            }
        }
        if let Some(hub) = hub {
            hub.wake_always();
        }
    }

    /// Writes queued socket bytes of a connection that has no hub, waiting for the socket up to
    /// `deadline`.
    fn flush_socket_blocking(&self, state: &mut State, deadline: Instant) {
        loop {
            self.flush_socket(state);
            if state.tx.out.is_empty() || state.fatal.is_some() || Instant::now() >= deadline {
                return;
            }
            let Some(socket) = &state.socket else { return };
            let _ = poller::poll(&[(socket.as_raw_fd(), libc::POLLOUT)], Some(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// One step of a lingering close; true when the connection is released.
    pub fn linger_step(&self) -> bool {
        let mut state = self.lock();
        if state.released {
            return true;
        }
        let _ = self.pump(&mut state, None);
        self.discard_input(&mut state);
        if let Some(link) = &mut state.link {
            if let Err(e) = link.flush() {
                self.set_fatal(&mut state, e);
            }
        }
        self.flush_socket(&mut state);
        let idle = !self.pending_tx(&state) && !self.peer_reading(&state);
        let expired = state.linger_deadline.is_some_and(|d| Instant::now() >= d);
        if idle || expired || state.fatal.is_some() || state.rx.eof {
            if !idle {
                debug!("connection {}: lingering close gave up with data undelivered", self.serial);
            }
            self.release(&mut state, !idle);
            return true;
        }
        false
    }

    fn release(&self, state: &mut State, abort: bool) {
        if state.released {
            return;
        }
        state.released = true;
        // Unread application data makes the close abortive, as with the kernel. Control frames do
        // not count (they were taken by the last pump); raw bytes of a plain TCP peer do.
        // Bytes that reached a server connection still waiting for the peer's protocol after the
        // close's last look are the peer's greeting as far as we know, not data.
        let unread = state.rx.data_left > 0
            || state.link.as_ref().is_some_and(|l| l.readable())
            || (state.proto == Proto::Plain && state.socket.as_ref().is_some_and(|s| s.pending_bytes() > 0));
        if let Some(hub) = self.hub.get() {
            hub.unregister_conn(state.id, state.socket.as_ref().map(|s| s.as_raw_fd()));
        }
        if let Some(mut link) = state.link.take() {
            if Self::peer_vanished(state, &link) {
                link.lane().mark_lost();
            }
            if !link.teardown() {
                if let Some(hub) = self.hub.get() {
                    hub.bury(link);
                }
            }
        }
        trace!("connection {}: releasing ({:?}, abort {abort}, unread {unread})", self.serial, state.proto);
        if let Some(socket) = state.socket.take() {
            if abort || unread {
                socket.close_with_reset();
            } else if state.proto != Proto::Plain {
                // A hadroNIO peer still sends (control frames, or its greeting if we close before
                // it arrived): closing on them would reset the connection.
                background().close_gracefully(socket);
            }
        }
        debug!("connection {} released", self.serial);
    }

    /// Whether an upgraded connection's peer went away without closing it (its process may have
    /// died in the middle of a UCX message to our worker).
    fn peer_vanished(state: &State, link: &Link) -> bool {
        link.has_endpoint()
            && ((state.rx.eof && state.rx.fin.is_none()) || state.fatal.is_some() || link.endpoint_error().is_some())
    }

    // --- events -------------------------------------------------------------------------------

    /// The socket became readable/writable or failed (epoll).
    pub fn on_io_event(&self, events: u32) {
        {
            let mut state = self.lock();
            if events & (poller::READABLE | poller::HANGUP | poller::ERROR) != 0 {
                state.io.readable = true;
            }
            if events & (poller::WRITABLE | poller::ERROR) != 0 {
                state.io.writable = true;
            }
            if state.phase == Phase::Connected && !state.released {
                self.flush_socket(&mut state);
                if state.input_shutdown || self.is_closed() {
                    self.discard_input(&mut state);
                } else {
                    // After a FIN too: whatever follows it is a violation, and the socket's end
                    // bounds the wait for the UCX messages the FIN announced.
                    let before = state.rx.switched;
                    if let Err(e) = self.pump(&mut state, None) {
                        self.set_fatal(&mut state, e);
                    }
                    if !before && state.rx.switched {
                        // Control frames after SWITCH (e.g. FIN) may follow right away.
                        if let Err(e) = self.pump(&mut state, None) {
                            self.set_fatal(&mut state, e);
                        }
                    }
                }
            }
        }
        self.notify_keys();
    }

    /// UCX completed something for this connection (receive, send, credits, error).
    pub fn on_ucx_event(&self) {
        {
            let mut state = self.lock();
            if state.released {
                return;
            }
            if let Some(link) = &mut state.link {
                link.shared().untouch();
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

    /// The operations this channel is ready for (`SelectionKey` bits).
    pub fn ready_ops(&self) -> u32 {
        let mut state = self.lock();
        // Control frames still waiting on the socket (the peer's HELLO may arrive before the
        // connection completes) must not be mistaken for application data: handle them first so
        // that OP_READ means a read returns bytes, EOF or an error.
        if state.phase == Phase::Connected && !state.rx.switched && state.io.readable && !state.released {
            if let Err(e) = self.pump(&mut state, None) {
                self.set_fatal(&mut state, e);
            }
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

    // --- information and options -------------------------------------------------------------

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
        match &state.link {
            Some(link) if link.has_endpoint() => format!("{}\n{}", state.path, link.describe()),
            _ => state.path.clone(),
        }
    }

    pub fn set_option(&self, option: i32, value: i32) -> Result<()> {
        let mut state = self.lock();
        if option == OPT_SO_LINGER {
            state.linger_seconds = if value < 0 { None } else { Some(value) };
        }
        let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
        if option == OPT_SO_KEEPALIVE && state.user_keepalive.is_some() {
            // The liveness timers keep the kernel's keepalive on; remember what was asked.
            state.user_keepalive = Some(value != 0);
            return Ok(());
        }
        if option == OPT_TCP_NODELAY && state.user_nodelay.is_some() {
            // Control frames go without delay whatever the application asks; remember it.
            state.user_nodelay = Some(value != 0);
            return Ok(());
        }
        set_socket_option(socket, option, value)
    }

    pub fn get_option(&self, option: i32) -> Result<i32> {
        let state = self.lock();
        let socket = state.socket.as_ref().ok_or_else(Error::closed)?;
        match (option, state.user_keepalive, state.user_nodelay) {
            (OPT_SO_KEEPALIVE, Some(user), _) => Ok(user as i32),
            (OPT_TCP_NODELAY, _, Some(user)) => Ok(user as i32),
            _ => get_socket_option(socket, option),
        }
    }
}

/// Applies a socket option to the TCP socket (the UCX path has no equivalent; values are kept
/// and reported back as the kernel has them).
pub fn set_socket_option(socket: &Socket, option: i32, value: i32) -> Result<()> {
    let result = match option {
        OPT_TCP_NODELAY => socket.set_int(libc::IPPROTO_TCP, libc::TCP_NODELAY, value),
        OPT_SO_SNDBUF => socket.set_int(libc::SOL_SOCKET, libc::SO_SNDBUF, value),
        OPT_SO_RCVBUF => socket.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, value),
        OPT_SO_KEEPALIVE => socket.set_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE, value),
        OPT_SO_LINGER => socket.set_linger(if value < 0 { None } else { Some(value) }),
        OPT_SO_REUSEADDR => socket.set_int(libc::SOL_SOCKET, libc::SO_REUSEADDR, value),
        OPT_IP_TOS => {
            if socket.is_ipv6() {
                let _ = socket.set_int(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, value);
            }
            socket.set_int(libc::IPPROTO_IP, libc::IP_TOS, value)
        }
        _ => return Err(Error::invalid(format!("unknown socket option {option}"))),
    };
    result.map_err(|e| Error::io("setsockopt", &e))
}

pub fn get_socket_option(socket: &Socket, option: i32) -> Result<i32> {
    let result = match option {
        OPT_TCP_NODELAY => socket.get_int(libc::IPPROTO_TCP, libc::TCP_NODELAY),
        OPT_SO_SNDBUF => socket.get_int(libc::SOL_SOCKET, libc::SO_SNDBUF),
        OPT_SO_RCVBUF => socket.get_int(libc::SOL_SOCKET, libc::SO_RCVBUF),
        OPT_SO_KEEPALIVE => socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE),
        OPT_SO_LINGER => socket.linger().map(|l| l.unwrap_or(-1)),
        OPT_SO_REUSEADDR => socket.get_int(libc::SOL_SOCKET, libc::SO_REUSEADDR),
        OPT_IP_TOS => socket.get_int(libc::IPPROTO_IP, libc::IP_TOS),
        _ => return Err(Error::invalid(format!("unknown socket option {option}"))),
    };
    result.map_err(|e| Error::io("getsockopt", &e))
}
