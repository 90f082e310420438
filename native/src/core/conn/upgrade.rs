//! The upgrade: what the connection does for its negotiation (open the UCX link, connect,
//! probe, switch or give up), the control stream's reading, and the policy a connection starts
//! with.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use log::{debug, info, log_enabled, warn, Level};

use crate::core::error::{Error, Result, Status};
use crate::core::background::background;
use crate::core::hub::Hub;
use crate::core::identity::{self, Locality};
use crate::core::protocol::Identity;
use crate::core::link::{self, Link};
use crate::core::negotiation::{Action, Negotiation, Policy, TcpReason, Why};
use crate::core::peers::peers;
use crate::core::protocol::{self, Role};
use crate::core::stream::{self, Failure};
use crate::config::Settings;
use crate::rules;
use crate::stats::{self, Counter};

use super::{Conn, Phase, State};

/// How long a UCX probe round trip may take before a connection stays on TCP. The connection's
/// bytes flow over TCP meanwhile, so waiting costs little; a peer busy with a thousand
/// connections upgrading at once (or a host in emulation) takes seconds to answer.
const PROBE_WAIT: Duration = Duration::from_secs(10);

/// With a shared secret: how long a peer that offered or accepted an upgrade has to prove it.
const AUTH_WAIT: Duration = Duration::from_secs(10);

/// Client without a secret: how long its reads look for the answer to its offer (they cost a
/// look at the socket's urgent mark meanwhile; a later answer still counts when the socket
/// reports it).
const OFFER_LOOK: Duration = Duration::from_secs(2);

/// Why a connection that UCX reaches only through its TCP transport stays on the kernel's TCP.
const TCP_ONLY: &str = "UCX reaches the peer only through its TCP transport, which is slower than the kernel's TCP \
                        (set UCX_TLS to use it anyway)";

/// The same for a peer on this host that shared memory does not reach.
const TCP_ONLY_ISOLATED: &str = "UCX's shared memory does not reach the peer (another namespace, or another \
                                 hadronio.slotLength or UCX shared-memory setting) and UCX reaches it only through its \
                                 TCP transport, which is slower than the kernel's TCP (set UCX_TLS to use it anyway)";

/// Why a connection that UCX reaches only through a software RDMA device stays on the kernel's
/// TCP.
const SOFTWARE_RDMA: &str = "UCX reaches the peer only through a software RDMA device (Soft-RoCE or soft-iWARP), \
                             which is slower than the kernel's TCP (set hadronio.softwareRdma=true to use it anyway)";

/// Whether the user asked for UCX's transports by name (`UCX_TLS`): then its TCP transport is
/// used where it is the only one.
fn ucx_tcp_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| std::env::var_os("UCX_TLS").is_some_and(|v| !v.is_empty()))
}

/// A random number of this connection (its nonce and probe token): std's hash of a constant under
/// a fresh `RandomState`, whose keys come from the kernel once per thread and differ for every
/// state after that. Unique per connection and unknown outside the process, without the system
/// call per connection that asking the kernel each time would cost (most connections never send
/// a HELLO).
fn nonce() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(0u8)
}

/// What this side may do on a connection with `peer` (rules, settings, UCX availability).
pub(super) fn policy(role: Role, peer: SocketAddr, service_port: u16, s: &Settings) -> Policy {
    let upgrade = if !s.upgrade.ucx {
        Err((TcpReason::Rule, Why::from("UCX disabled by hadronio.transport=tcp")))
    } else {
        let rule_role = if role == Role::Client { rules::Role::Connect } else { rules::Role::Accept };
        let (allowed, rule) = s.upgrade.rules.decide(rule_role, peer.ip(), service_port);
        if !allowed {
            let whose = if s.upgrade.rules.is_users(rule) { "hadronio.rules" } else { "default rule" };
            Err((TcpReason::Rule, Why::from(format!("{whose} '{rule}'"))))
        } else {
            // A client skips the offer where the last connections to the address showed that it
            // only costs (see `peers.rs`).
            let learned = if role == Role::Client { peers().advice(peer, Instant::now()) } else { Ok(()) };
            // A context still being made does not hold the connection up (see `lanes.rs`).
            learned.and_then(|()| match crate::core::lanes::failure(crate::core::lanes::Kind::Full) {
                Some(e) => Err((TcpReason::NoPath, Why::from(format!("UCX unavailable: {e}")))),
                None => Ok(()),
            })
        }
    };
    let secret = s.upgrade.secret.clone();
    // With a secret the client's bytes wait for the peer's proof, which follows its mark.
    let mark_delay = if secret.is_some() { Duration::ZERO } else { Duration::from_millis(s.upgrade.delay_ms) };
    let offer_wait = if secret.is_some() { Duration::from_millis(s.upgrade.offer_ms) } else { OFFER_LOOK };
    Policy {
        role,
        upgrade,
        secret,
        identity: identity::ours(s.slot_len),
        nonce: nonce(),
        offer_wait,
        probe_wait: PROBE_WAIT,
        auth_wait: AUTH_WAIT,
        mark_delay,
    }
}

impl Conn {
    /// Posts the UCX receives on the hub's lane for a peer of `identity`. A lane that needs a new
    /// UCX worker is opened on a thread of its own when `may_wait` (see [`Hub::open_lane_later`]):
    /// the negotiation waits for it while the connection's bytes flow over TCP, and
    /// [`Conn::on_lane`] comes back here.
    pub(super) fn open_link(&self, state: &mut State, identity: Identity, may_wait: bool) {
        let Some(hub) = self.hub.get().cloned() else {
            state.upgrade.wanted = Some(identity);
            return;
        };
        let s = state.settings;
        let locality = identity::locality(&identity::ours(s.slot_len), &identity);
        if let Some(why) = Self::small_on_shared_worker(&hub, locality, state) {
            if let Some(neg) = &mut state.neg {
                neg.on_link(Err(why));
            }
            return;
        }
        if may_wait && !hub.lane_is_open(locality) {
            if let Some(me) = self.arc() {
                if hub.open_lane_later(locality, Some(Arc::<Conn>::downgrade(&me) as _)) {
                    state.upgrade.wanted = Some(identity);
                    return;
                }
            }
        }
        let slots = link::slots_for(s.slots, s.slots == Settings::default().slots, hub.link_count());
        let link = hub.lane(locality).and_then(|lane| {
            Link::new(lane, state.id, slots, s.slot_len, s.send_buffer).map_err(|e| format!("could not post UCX receives: {e}"))
        });
        let result = match link {
            Ok(link) => {
                hub.register_link(link.shared());
                let addr = link.local_addr();
                state.link = Some(link);
                debug!("connection {}: link open for a peer at {locality:?}, {slots} receive slots", self.serial);
                Ok(addr)
            }
            Err(e) => Err(e),
        };
        if let Some(neg) = &mut state.neg {
            neg.on_link(result);
        }
    }

    /// Why a connection in blocking mode stays on the kernel's TCP where its hub's UCX worker
    /// serves other channels too and the peer runs on this host, unless it moved
    /// `hadronio.sharedUpgradeBytes` already: over shared memory each message wakes the thread
    /// that leads the hub and then the reader, where the kernel wakes the reader alone, so small
    /// messages answer sooner on TCP; bulk transfers still gain. Peers on other hosts upgrade:
    /// there the network, not the wake-up, dominates what TCP costs.
    fn small_on_shared_worker(hub: &Hub, locality: Locality, state: &State) -> Option<String> {
        let limit = state.settings.upgrade.shared_bytes;
        let moved = state.neg.as_deref().map_or(0, Negotiation::moved);
        let local = matches!(locality, Locality::Local(_) | Locality::ThisProcess);
        (local && moved < limit && hub.shared_by_threads()).then(|| {
            format!(
                "a channel in blocking mode whose UCX worker serves {} connections moved {moved} bytes, fewer than \
                 hadronio.sharedUpgradeBytes ({limit}): the kernel's TCP answers small messages sooner on this host",
                hub.connections()
            )
        })
    }

    // --- the negotiation ------------------------------------------------------------------------

    /// Reads what the negotiation needs from the socket (control frames, marks; no application
    /// bytes), then [`Conn::drive`]s it.
    pub(super) fn progress_stream(&self, state: &mut State) {
        if state.phase == Phase::Connected && !state.closing.released && !state.failure.is_fatal() && !state.failure.input_pending() {
            if let Err(e) = self.read_stream(state, None) {
                let plain = !state.neg.as_deref().is_some_and(Negotiation::peer_speaks_hadronio);
                if plain && e.status != Status::Protocol {
                    state.failure.fail_input(e);
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
    pub(super) fn drive(&self, state: &mut State) {
        if state.phase != Phase::Connected || state.closing.released {
            return;
        }
        while let Some(action) = state.neg.as_deref_mut().and_then(Negotiation::poll_action) {
            self.act(state, action);
        }
        Self::learn(state);
        let Some(neg) = state.neg.as_deref_mut() else { return };
        if neg.framed() && state.tcp.user_nodelay.is_none() {
            state.tcp.control_frames_without_delay();
        }
        self.flush_control(state);
        if !state.tx.early.is_empty() {
            if let (Some(neg), Some(socket)) = (state.neg.as_deref_mut(), state.tcp.socket.as_ref()) {
                if let Err(e) = stream::release(neg, socket, &state.rx, &mut state.tx) {
                    Self::control_send_failed(state, &e);
                }
            }
        }
        if state.closing.fin_pending && state.tx.early.is_empty() {
            state.closing.fin_pending = false;
            self.send_fin(state, false);
        }
        self.drop_link_if_unused(state);
        // The negotiation's next deadline, or the end of the wait for UCX messages a FIN
        // announced: selectors and waiting readers learn of it when it is due.
        let deadline = match (state.neg.as_deref().and_then(Negotiation::deadline), Self::announced_deadline(state)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let (Some(at), true) = (deadline, deadline != state.deadline_asked) {
            if let Some(me) = self.arc() {
                state.deadline_asked = Some(at);
                background().wake_at(at, Arc::<Conn>::downgrade(&me));
            }
        }
        if let Some(error) = state.neg.as_deref().and_then(|n| n.error().cloned()) {
            self.set_fatal(state, error);
        }
    }

    /// Tells the process's memory of servers what this client connection showed about its own.
    pub(super) fn learn(state: &mut State) {
        if let (Some(outcome), Some(server)) = (state.neg.as_deref_mut().and_then(Negotiation::take_outcome), state.tcp.remote) {
            peers().learn(server, outcome, Instant::now());
        }
    }

    pub(super) fn act(&self, state: &mut State, action: Action) {
        if log_enabled!(Level::Trace) {
            log::trace!("connection {}: {action:?}", self.serial);
        }
        match action {
            Action::OpenLink(identity) => self.open_link(state, identity, true),
            Action::Connect(addr) => {
                let result = match &mut state.link {
                    Some(link) => link.connect(&addr).map_err(|e| e.to_string()),
                    None => Err(String::from("no link")),
                };
                let ok = result.is_ok();
                let slower = match &state.link {
                    Some(link) if ok => Self::slower_than_tcp(link, state.settings),
                    _ => None,
                };
                if let Some(neg) = &mut state.neg {
                    match slower {
                        Some(why) => neg.decline(why),
                        None => neg.on_endpoint(result, Instant::now()),
                    }
                }
                if ok {
                    for token in std::mem::take(&mut state.upgrade.pending_pongs) {
                        self.answer_probe(state, token);
                    }
                }
            }
            Action::Probe(token) => {
                let sent = state.link.as_ref().map(|l| l.send_probe(protocol::PROBE_PING, token));
                if let (Some(Err(e)), Some(neg)) = (sent, state.neg.as_deref_mut()) {
                    neg.decline(e.to_string());
                }
            }
            Action::Switched => {
                let shared_memory = state.link.as_ref().is_some_and(|l| l.over_shared_memory());
                stats::count(if shared_memory { Counter::UpgradesSharedMemory } else { Counter::UpgradesNetwork });
                if log_enabled!(Level::Info) {
                    let over = state.link.as_ref().map_or_else(String::new, |l| l.path_words());
                    info!("connection {} {}: upgraded to UCX{over}", self.serial, Self::peer_label(state.role, state.tcp.remote));
                }
                self.watch_liveness(state);
            }
            Action::GaveUp(reason, why) => {
                stats::count(Self::tcp_counter(reason));
                info!("connection {} {}: stays on TCP: {why}", self.serial, Self::peer_label(state.role, state.tcp.remote));
            }
        }
    }

    /// Why a connection whose endpoint is `link`'s stays on the kernel's TCP, where UCX reaches
    /// the peer only through transports slower than it: its own TCP transport (unless the user
    /// named UCX's transports), or a software RDMA device (unless `hadronio.softwareRdma`).
    fn slower_than_tcp(link: &Link, settings: &Settings) -> Option<&'static str> {
        if link.tcp_only() && !ucx_tcp_wanted() {
            Some(if link.isolated() { TCP_ONLY_ISOLATED } else { TCP_ONLY })
        } else if !settings.upgrade.software_rdma && link.software_rdma_only() {
            Some(SOFTWARE_RDMA)
        } else {
            None
        }
    }

    /// While the UCX half is being set up, probes and their answers need the worker to make
    /// progress even if the application never waits (its data always there): reads and writes
    /// then progress the hub themselves, and the background thread does while the application
    /// does something else (the peer's probe would otherwise go unanswered, and its side of the
    /// connection stay on TCP). Call without the state lock.
    pub(super) fn progress_upgrade(&self, upgrading: bool) {
        use std::sync::atomic::Ordering;
        if upgrading {
            if let Some(hub) = self.hub.get() {
                hub.poll_now();
                if !self.watched.swap(true, Ordering::AcqRel) {
                    if let Some(me) = self.arc() {
                        hub.watch_pending(me);
                        background().adopt(hub.clone());
                    }
                }
            }
        }
    }

    /// Whether the upgrade is under way with the UCX half open, on either side (see
    /// [`Conn::progress_upgrade`]).
    pub(super) fn upgrading(state: &State) -> bool {
        state.link.is_some() && state.neg.as_deref().is_some_and(Negotiation::probes_due)
    }

    /// Answers the peer's probe over UCX (once our endpoint exists).
    pub(super) fn answer_probe(&self, state: &mut State, token: u64) {
        match &state.link {
            Some(link) if link.has_endpoint() => {
                if let Err(e) = link.send_probe(protocol::PROBE_PONG, token) {
                    debug!("connection {}: {e}", self.serial);
                }
            }
            Some(_) => state.upgrade.pending_pongs.push(token),
            None => {}
        }
    }

    /// Writes the negotiation's urgent byte and control bytes (as far as the socket takes them).
    pub(super) fn flush_control(&self, state: &mut State) {
        let (Some(neg), Some(socket)) = (state.neg.as_deref_mut(), state.tcp.socket.as_ref()) else { return };
        if !neg.has_output() {
            return;
        }
        match stream::flush(neg, socket, &state.rx) {
            Ok(true) => {}
            Ok(false) => state.tcp.io.writable = false,
            Err(e) => {
                neg.out().clear();
                Self::control_send_failed(state, &e);
            }
        }
    }

    /// A send of our own (control bytes, bytes held back during the negotiation) failed: the
    /// peer is gone for writing, and what it sent before can still be read. A reset reported
    /// here is no longer pending on the socket (the kernel reports it once), so the reader's
    /// `recv` would see a clean end of stream: the reader learns of the reset from `rx.reset`,
    /// as it would from the kernel's channels, whose application made no send that took it.
    pub(super) fn control_send_failed(state: &mut State, e: &std::io::Error) {
        state.failure.fail_output(|| Error::io("", e));
        if e.raw_os_error() == Some(libc::ECONNRESET) {
            state.rx.reset = true;
        }
    }

    /// Gives the UCX half up once neither direction can use it: we gave up (or never got
    /// there) and the peer did not switch to it.
    pub(super) fn drop_link_if_unused(&self, state: &mut State) {
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
    pub(super) fn bury(&self, link: Link) {
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
    pub(super) fn watch_liveness(&self, state: &mut State) {
        if let Err(e) = state.tcp.watch_liveness(state.settings.liveness_ms) {
            info!("connection {}: no liveness timers on the control socket: {e}", self.serial);
        }
    }

    pub(super) fn set_fatal(&self, state: &mut State, error: Error) {
        if !state.failure.is_fatal() {
            let handshake = state.neg.as_deref().is_some_and(|n| n.pending() && n.peer_speaks_hadronio());
            if error.status == Status::Protocol {
                // A peer that breaks the protocol (or fails authentication) is worth a line.
                warn!("connection {} {}: {}; the connection fails", self.serial, Self::peer_label(state.role, state.tcp.remote), error);
            } else if handshake {
                info!("connection {} {} failed during the hadroNIO handshake: {}", self.serial, Self::peer_label(state.role, state.tcp.remote), error);
            } else {
                debug!("connection {}: {}", self.serial, error);
            }
            // What the negotiation queued tells the peer why (its own checks fail the same way).
            if let (Some(neg), Some(socket)) = (state.neg.as_deref_mut(), state.tcp.socket.as_ref()) {
                let _ = stream::flush(neg, socket, &state.rx);
            }
            state.failure.set_fatal(error);
        }
    }

    /// "from <address>" (accepted) or "to <address>" (connected), for log lines.
    pub(super) fn peer_label(role: Role, remote: Option<SocketAddr>) -> String {
        let direction = if role == Role::Server { "from" } else { "to" };
        match remote {
            Some(addr) => format!("{direction} {addr}"),
            None => String::from("(unconnected)"),
        }
    }

    /// Reads the peer's TCP stream into `dst` (or only what the protocol needs, without),
    /// mapping socket failures: a reset ends the peer's stream of a hadroNIO peer like an EOF
    /// without FIN (what arrived before stays readable); other failures are errors.
    pub(super) fn read_stream(&self, state: &mut State, dst: Option<&mut crate::core::iov::Cursor<'_>>) -> Result<usize> {
        let (Some(neg), Some(socket)) = (state.neg.as_deref_mut(), state.tcp.socket.as_ref()) else { return Ok(0) };
        match stream::read(neg, socket, &mut state.rx, dst, &Instant::now) {
            Ok(read) => {
                // A short receive drained the socket, unless its end was reported already: then
                // the end waits behind the bytes, with no edge to come (the kernel's selector
                // reports such a socket readable until its end is read).
                if read.blocked && !state.tcp.io.ended {
                    state.tcp.io.readable = false;
                }
                stats::add(Counter::BytesReceivedTcp, read.delivered as u64);
                Ok(read.delivered)
            }
            Err(Failure::Negotiation(error)) => Err(error),
            Err(Failure::Io(e)) => Self::recv_failed(state, e).map(|()| 0),
        }
    }

    /// A receive on the socket failed: for a hadroNIO peer, as its control socket failing;
    /// otherwise the error ends reading, as with the kernel's channels.
    pub(super) fn recv_failed(state: &mut State, e: std::io::Error) -> Result<()> {
        if state.neg.as_deref().is_some_and(Negotiation::peer_speaks_hadronio) {
            Self::control_recv_failed(state, e)
        } else {
            Err(Error::io("", &e))
        }
    }

    /// A reset control socket ends the peer's stream like an EOF without FIN: what arrived
    /// before (over UCX too) stays readable, and reading past it reports the reset. A control
    /// socket that timed out (the peer stopped answering: link down, host gone) fails the whole
    /// connection: nothing more will come over UCX either.
    pub(super) fn control_recv_failed(state: &mut State, e: std::io::Error) -> Result<()> {
        match Self::control_error(state, &e) {
            None => {
                state.rx.eof = true;
                state.rx.reset = true;
                Ok(())
            }
            Some(error) => Err(error),
        }
    }

    /// The error a failed control socket fails the connection with; `None` for a reset (the
    /// peer's stream just ends there).
    pub(super) fn control_error(state: &State, e: &std::io::Error) -> Option<Error> {
        match e.raw_os_error() {
            Some(libc::ECONNRESET) | Some(libc::ECONNABORTED) | Some(libc::EPIPE) => None,
            Some(libc::ETIMEDOUT) | Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) | Some(libc::EHOSTDOWN)
            | Some(libc::ENETDOWN) => {
                let text = Error::io("", e).message;
                let why = match state.tcp.user_keepalive {
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
}
