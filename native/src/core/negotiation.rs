//! The control stream of a connection as a state machine without I/O: what the peer's TCP stream
//! and the UCX half report go in, and out come the bytes this side must write on its TCP socket
//! (urgent bytes, frames), how the next bytes of the peer's stream must be read, and what the
//! connection must do (open its UCX link, create an endpoint, switch its writes to UCX, fall back
//! to raw bytes, fail). The connection (`conn/`) owns the socket and the link and reports back
//! what its I/O did; nothing here touches a socket, so every path is tested without one (see the
//! tests below and the `negotiation` fuzz target).
//!
//! The wire format is described in [`protocol`](super::protocol). In short: a client that may
//! upgrade sends an urgent OFFER as its first byte; a hadroNIO server answers with an urgent
//! ACCEPT; the client then marks the offset at which its stream turns into frames, the server
//! answers with its own mark, and both exchange HELLO, AUTH and ADDR there. Before SWITCH a side
//! proves its UCX path with a probe round trip; if anything stops the upgrade it sends RAW and
//! its later bytes are raw again. Application bytes flow the whole time: raw before a side's
//! mark, in DATA frames after it, over UCX after SWITCH.
//!
//! One exception holds bytes back: with a shared secret, a side that learned that its peer offers
//! or accepts an upgrade delivers none of the peer's bytes, and sends none of its own, until the
//! peer proved the secret (or, for a client, until the server failed to answer the offer within
//! the offer wait and so is a plain server).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::auth::{self, Secret};
use super::error::{Error, Result, Status};
use super::protocol::{self, Addr, FrameType, Hello, Identity, Role, FRAME_HEADER_LEN, MAGIC};

/// Why a connection stays on TCP. Put in words only when shown (a log line, `describe`): most
/// connections that stay on TCP are never shown, and a connection per request should not pay for
/// a text nobody reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    Text(Cow<'static, str>),
    /// The client's record of the server (see `peers.rs`) says the offer would only cost:
    /// `count` connections in a row showed a plain server (`plain`) or ended before their upgrade
    /// was due, and one connection in `gap` still offers.
    Learned { plain: bool, count: u32, gap: u32 },
}

impl From<&'static str> for Why {
    fn from(text: &'static str) -> Why {
        Why::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Why {
    fn from(text: String) -> Why {
        Why::Text(Cow::Owned(text))
    }
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Text(text) => f.write_str(text),
            Why::Learned { plain: true, count, gap } => write!(
                f,
                "the last {count} offers to this address went unanswered (a plain server); one connection in {gap} still offers"
            ),
            Why::Learned { plain: false, count, gap } => write!(
                f,
                "the last {count} connections to this address ended before their upgrade was due (a connection per request); one connection in {gap} still offers"
            ),
        }
    }
}

/// The path a connection takes, as [`Negotiation::path`] puts it in words.
#[derive(Clone, Debug)]
enum Path {
    /// The policy's reason (see [`Policy::upgrade`]).
    Policy,
    NotYet,
    OutputShutDown,
    Ucx,
    Tcp(Why),
}

/// Why a connection stays on TCP, by kind (the text that goes with it says it in words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpReason {
    /// The peer does not speak hadroNIO: no offer, no answer, or it closed first.
    PlainPeer,
    /// This side's rules or settings keep the connection on TCP.
    Rule,
    /// UCX does not reach the peer, or reaches it no better than TCP.
    NoPath,
    /// Anything else: protocol versions, the peer gave up, a reflected stream.
    Other,
}

/// What a client's connection showed about its server, for the next connections to the same
/// address (see `peers.rs`): learned once per connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered and the client marked: the upgrade went ahead.
    Upgrading,
    /// The server answered, but the connection ended before the client's mark was due (one
    /// request and its answer, then a close).
    Short,
    /// The server did not answer the offer: within the offer wait, or before it closed.
    Plain,
}

/// What a connection may do, decided before it starts (settings, rules, UCX on this side).
#[derive(Clone, Debug)]
pub struct Policy {
    pub role: Role,
    /// `Ok` if this side offers (client) or accepts (server) an upgrade; otherwise why not.
    pub upgrade: std::result::Result<(), (TcpReason, Why)>,
    pub secret: Option<Secret>,
    pub identity: Identity,
    /// Random number of this connection (also the probe token).
    pub nonce: u64,
    /// Client: how long reads look for the server's answer to the offer (an answer that comes
    /// later is still taken when the socket reports it). With a secret: how long the client holds
    /// its bytes back waiting for the answer before it treats the server as a plain one.
    pub offer_wait: Duration,
    /// How long a probe round trip over UCX may take before the upgrade is given up.
    pub probe_wait: Duration,
    /// With a secret: how long the peer has to prove it once it offered or accepted.
    pub auth_wait: Duration,
    /// Client: how long after connecting its mark waits for a second write before it goes
    /// without one where a stream comes its way (zero: at once, as it must with a secret). See
    /// [`Negotiation::on_write`].
    pub mark_delay: Duration,
}

/// Bytes a client that wrote once and read its answer must have read for its mark to go without
/// a second write: a stream coming its way (a download, a subscription), not the answer to one
/// request.
pub const STREAM_READ: u64 = 64 * 1024;

/// A client that wrote once and got nothing back marks once the connection is this many times
/// its mark delay old (1.28 s by default, its last look): a server may hold its answer back until
/// the upgrade, as one with a secret holds the bytes of a client that has not proved it. Answers
/// under load often take longer than a few delays, so it waits that long.
const HELD_ANSWER_DELAYS: u32 = 1 << (MARK_CHECKS - 1);

/// How often a client that wrote once looks for such a stream: at its mark's time and each time
/// the connection's age doubled since (20 ms to 1.28 s with the default delay). An idle
/// connection then asks for no more timers.
const MARK_CHECKS: u32 = 7;

/// How the connection must read the next bytes of the peer's TCP stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Raw stream bytes. Whether they go to the application or are held back is
    /// [`Negotiation::deliverable`]; how to watch for urgent bytes is `watch`.
    Raw(Watch),
    /// `n` payload bytes of a DATA frame follow.
    Data(usize),
    /// The parser needs up to `n` more bytes (a header, a control payload or the magic).
    Control(usize),
}

/// Which urgent byte may come in the peer's raw stream, and so how raw bytes must be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// None that matters: ordinary reads (they skip any urgent byte, as the JDK's do).
    Nothing,
    /// Server before any byte was read: an OFFER may sit at offset 0. Read strictly: at a mark,
    /// report the urgent byte ([`Negotiation::on_mark`]); otherwise report the first bytes seen
    /// ([`Negotiation::on_raw`]) without reading further than the socket holds.
    Offer,
    /// Client after its offer: an ACCEPT may come anywhere. While [`Negotiation::looking`],
    /// reads are strict (a read that starts right at the ACCEPT would skip it); later, ordinary,
    /// and an ACCEPT counts when the socket reports urgent data.
    Accept,
    /// Client after the ACCEPT: reads must stop at its offset ([`Negotiation::on_mark_reached`]),
    /// read strictly.
    Reach,
    /// The peer's mark is due: read strictly; at the mark report its byte ([`Negotiation::on_mark`]).
    Mark,
}

impl Watch {
    /// Whether reads must check for a mark first and read no further than the bytes before it.
    pub fn strict(self) -> bool {
        matches!(self, Watch::Offer | Watch::Reach | Watch::Mark)
    }
}

/// How application writes travel now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Straight onto the socket.
    Raw,
    /// Kept until the peer authenticated (or turned out to be plain).
    Hold,
    /// In DATA frames, after the queued control bytes.
    Frames,
    /// Over UCX.
    Ucx,
}

/// What the connection must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Post the UCX receives on the lane that suits a peer of this identity, then report
    /// [`Negotiation::on_link`].
    OpenLink(Identity),
    /// Create the endpoint to the peer's worker, then report [`Negotiation::on_endpoint`].
    Connect(Addr),
    /// Send a probe ping with this token over UCX (the pong comes to
    /// [`Negotiation::on_probe_answered`]).
    Probe(u64),
    /// Our writes travel over UCX from now on (SWITCH is queued).
    Switched,
    /// The upgrade was given up (RAW is queued if our stream carried frames): the UCX half is
    /// not needed for our writes, for the reason given.
    GaveUp(TcpReason, Why),
}

/// Progress of the upgrade: one state for the whole negotiation.
#[derive(Clone, Debug)]
enum Stage {
    /// Client, no offer sent yet: the TCP connection is not up, or the application has not
    /// written yet (the offer goes right ahead of its first bytes, see
    /// [`Negotiation::before_write`]).
    Connecting,
    /// Client: OFFER sent; no ACCEPT seen yet. `waited`: the offer wait passed (with a secret,
    /// the bytes held back then go out raw; a later answer still counts).
    Offered { since: Instant, waited: bool },
    /// Client: ACCEPT seen; our mark goes out once reads passed its offset (`reached`) and the
    /// connection carried a second write or is [`Policy::mark_delay`] old.
    Answered { reached: bool },
    /// Server: the client's first stream byte tells whether it offers.
    Listening,
    /// Server: ACCEPT sent; the client's mark is due.
    Accepted,
    /// Our mark is out: HELLO, AUTH, ADDR, probe.
    Greeting(Box<Greeting>),
    /// Our writes travel over UCX.
    Upgraded,
    /// No upgrade (raw bytes, or frames until our RAW), for the reason in `path`.
    Plain,
    /// The connection failed.
    Failed(Error),
}

/// The UCX half being set up.
#[derive(Clone, Debug)]
struct Greeting {
    link: Link,
    peer_addr: Option<Addr>,
    endpoint: Endpoint,
}

/// The shared-secret exchange.
#[derive(Clone, Debug, Default)]
struct Auth {
    /// When the peer showed it speaks hadroNIO (it has `auth_wait` to prove the secret).
    since: Option<Instant>,
    own_challenge: Option<[u8; auth::CHALLENGE_LEN]>,
    peer_challenge: Option<[u8; auth::CHALLENGE_LEN]>,
    verified: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Link {
    None,
    Opening,
    /// Posted; our ADDR, until it went out (after the peer authenticated).
    Ready(Option<Addr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    None,
    Creating,
    Probing { deadline: Instant },
}

/// The peer's stream.
#[derive(Clone, Debug)]
enum Rx {
    Raw(Watch),
    Framed(Parser),
}

#[derive(Clone, Debug, Default)]
struct Parser {
    magic: usize,
    header: [u8; FRAME_HEADER_LEN],
    header_len: usize,
    control: Option<(FrameType, usize)>,
    payload: Vec<u8>,
    data_left: usize,
}

/// What the peer said about its own stream.
#[derive(Clone, Copy, Debug, Default)]
struct PeerStream {
    /// It sent SWITCH: its stream bytes come over UCX.
    switched: bool,
    /// It sent RAW: its later bytes are raw.
    raw: bool,
    /// Its FIN: the number of UCX messages before end of stream, and when it came.
    fin: Option<(u64, Instant)>,
    /// Its stream came back to us (its HELLO is ours): only DATA, RAW and FIN count.
    reflected: bool,
    /// Its TCP stream ended.
    eof: bool,
}

/// What the connection is to do, oldest first. The first waits inline: more than one is rarely
/// pending, and a connection that stays on TCP allocates nothing for its one.
#[derive(Default)]
struct Actions {
    first: Option<Action>,
    more: VecDeque<Action>,
}

impl Actions {
    fn push_back(&mut self, action: Action) {
        if self.first.is_none() && self.more.is_empty() {
            self.first = Some(action);
        } else {
            self.more.push_back(action);
        }
    }

    fn pop_front(&mut self) -> Option<Action> {
        self.first.take().or_else(|| self.more.pop_front())
    }
}

/// The state machine of one connection's control stream.
pub struct Negotiation {
    policy: Policy,
    stage: Stage,
    rx: Rx,
    peer: PeerStream,
    /// Control bytes to write, after `urgent`.
    out: Vec<u8>,
    /// An urgent byte to send before `out` (and after every raw byte written so far).
    urgent: Option<u8>,
    actions: Actions,
    /// Our stream carries frames (our mark went out).
    framed: bool,
    /// Our RAW went out: our later bytes are raw.
    raw_again: bool,
    /// The path this connection takes and why.
    path: Path,
    /// Raw bytes of the peer's stream read so far.
    raw_read: u64,
    /// Whether we ever sent ADDR (the peer may switch only then).
    addr_sent: bool,
    peer_hello: Option<Hello>,
    peer_addr_seen: bool,
    auth: Auth,
    /// Our output is shut down: nothing more to switch to UCX (the greeting goes on for the
    /// peer's sake: its probe needs our pong, its UCX messages our link).
    output_done: bool,
    /// Our shutdown ended the upgrade before it was decided, at a point where the peer's offer,
    /// answer or mark may still be on its way.
    cut_short: bool,
    /// Client: when the TCP connection came up, and how many writes the application made.
    connected_at: Option<Instant>,
    writes: u32,
    /// Client that wrote once: how often its mark's time came without a stream to read (see
    /// [`Negotiation::next_mark_check`]).
    mark_checks: u32,
    /// Client: what the connection showed about its server, until the connection took it
    /// ([`Negotiation::take_outcome`]); at most one per connection.
    outcome: Option<Outcome>,
    outcome_taken: bool,
}

impl Negotiation {
    pub fn new(policy: Policy) -> Negotiation {
        let (stage, rx, path) = match (&policy.upgrade, policy.role) {
            (Err(_), _) => (Stage::Plain, Rx::Raw(Watch::Nothing), Path::Policy),
            (Ok(()), Role::Client) => (Stage::Connecting, Rx::Raw(Watch::Nothing), Path::NotYet),
            (Ok(()), Role::Server) => (Stage::Listening, Rx::Raw(Watch::Offer), Path::NotYet),
        };
        Negotiation {
            policy,
            stage,
            rx,
            peer: PeerStream::default(),
            out: Vec::new(),
            urgent: None,
            actions: Actions::default(),
            framed: false,
            raw_again: false,
            path,
            raw_read: 0,
            addr_sent: false,
            peer_hello: None,
            peer_addr_seen: false,
            auth: Auth::default(),
            output_done: false,
            cut_short: false,
            connected_at: None,
            writes: 0,
            mark_checks: 0,
            outcome: None,
            outcome_taken: false,
        }
    }

    pub fn role(&self) -> Role {
        self.policy.role
    }

    // --- what the connection asks --------------------------------------------------------------

    /// How to read the peer's TCP stream next.
    pub fn next(&self) -> Next {
        match &self.rx {
            Rx::Raw(watch) => Next::Raw(*watch),
            Rx::Framed(parser) => {
                if parser.magic < MAGIC.len() {
                    Next::Control(MAGIC.len() - parser.magic)
                } else if parser.data_left > 0 {
                    Next::Data(parser.data_left)
                } else if let Some((_, length)) = parser.control {
                    Next::Control(length - parser.payload.len())
                } else {
                    Next::Control(FRAME_HEADER_LEN - parser.header_len)
                }
            }
        }
    }

    /// Whether reads in [`Watch::Accept`] look for an urgent mark before reading.
    pub fn looking(&self, now: Instant) -> bool {
        match self.stage {
            Stage::Offered { since, .. } => now.duration_since(since) < self.policy.offer_wait,
            _ => false,
        }
    }

    /// Whether the peer's bytes may go to the application (false while a secret holds them).
    pub fn deliverable(&self) -> bool {
        if self.policy.secret.is_none() || self.peer.reflected {
            return true;
        }
        if self.auth.since.is_some() {
            return self.auth.verified;
        }
        match &self.stage {
            Stage::Offered { waited, .. } => *waited,
            _ => true,
        }
    }

    /// How application writes travel now.
    pub fn write_mode(&self) -> WriteMode {
        if matches!(self.stage, Stage::Upgraded) {
            return WriteMode::Ucx;
        }
        if self.policy.secret.is_some() && !self.deliverable() {
            return WriteMode::Hold;
        }
        if self.framed && !self.raw_again {
            return WriteMode::Frames;
        }
        WriteMode::Raw
    }

    /// The urgent byte to send now, if any: before [`Negotiation::out`] and after every raw
    /// byte written so far. Take it only once it was sent.
    pub fn urgent(&self) -> Option<u8> {
        self.urgent
    }

    pub fn urgent_sent(&mut self) {
        self.urgent = None;
    }

    /// Control bytes to write (after the urgent byte). The caller drains what it wrote.
    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    pub fn has_output(&self) -> bool {
        self.urgent.is_some() || !self.out.is_empty()
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next time [`Negotiation::on_timeout`] has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        let auth = match (self.policy.secret.is_some(), self.auth.since) {
            (true, Some(since)) if !self.auth.verified && self.error().is_none() => Some(since + self.policy.auth_wait),
            _ => None,
        };
        let other = match &self.stage {
            Stage::Offered { since, waited: false } => Some(*since + self.policy.offer_wait),
            Stage::Answered { reached: true } if self.mark_time().is_some() => self.next_mark_check(),
            Stage::Greeting(greeting) => match greeting.endpoint {
                Endpoint::Probing { deadline } => Some(deadline),
                _ => None,
            },
            _ => None,
        };
        match (auth, other) {
            (Some(a), Some(o)) => Some(a.min(o)),
            (a, o) => a.or(o),
        }
    }

    /// Which path the connection takes, and why.
    pub fn path(&self) -> Cow<'static, str> {
        match &self.path {
            Path::NotYet => Cow::Borrowed("tcp (not upgraded yet)"),
            Path::OutputShutDown => Cow::Borrowed("tcp (output shut down before the upgrade)"),
            Path::Ucx => Cow::Borrowed("ucx"),
            Path::Tcp(why) => Cow::Owned(format!("tcp ({why})")),
            Path::Policy => match self.policy.upgrade.as_ref().err() {
                Some((_, why)) => Cow::Owned(format!("tcp ({why})")),
                None => Cow::Borrowed("tcp ()"),
            },
        }
    }

    /// Why this side's policy keeps the connection on TCP from the start, if it does.
    pub fn declined_by_policy(&self) -> Option<TcpReason> {
        self.policy.upgrade.as_ref().err().map(|(reason, _)| *reason)
    }

    pub fn upgraded(&self) -> bool {
        matches!(self.stage, Stage::Upgraded)
    }

    /// Whether the connection is plain TCP for good: no upgrade to come, and the peer's stream is
    /// raw bytes with no urgent byte to watch for, so that its reads are the socket's own.
    pub fn settled_plain(&self) -> bool {
        matches!(self.stage, Stage::Plain) && matches!(self.rx, Rx::Raw(Watch::Nothing)) && !self.peer.switched && self.deliverable()
    }

    /// Whether the upgrade is still possible (no decision yet).
    pub fn pending(&self) -> bool {
        matches!(
            self.stage,
            Stage::Connecting
                | Stage::Offered { .. }
                | Stage::Answered { .. }
                | Stage::Listening
                | Stage::Accepted
                | Stage::Greeting(_)
        )
    }

    /// Whether UCX probes may still be due: our upgrade is under way, or the peer has our ADDR
    /// and has neither switched nor given up (it probes our side of the UCX path before it
    /// switches, and gives up unless we answer).
    pub fn probes_due(&self) -> bool {
        self.pending() || (self.addr_sent && !self.peer.switched && !self.peer.raw && self.peer.fin.is_none() && !self.peer.eof)
    }

    /// Whether the UCX half is needed, or may still be: our writes use it, the peer's do, the
    /// upgrade is under way, or the peer may still switch to our ADDR.
    pub fn ucx_needed(&self) -> bool {
        match self.stage {
            Stage::Upgraded | Stage::Greeting(_) => true,
            _ => self.peer.switched || (self.addr_sent && !self.peer.raw && self.peer.fin.is_none() && !self.peer.eof),
        }
    }

    /// Whether the peer proved it speaks hadroNIO (its mark came).
    pub fn peer_speaks_hadronio(&self) -> bool {
        matches!(self.rx, Rx::Framed(_)) || self.peer.raw
    }

    /// Whether the peer may still send hadroNIO bytes (an urgent byte, its mark, frames): it
    /// speaks hadroNIO, the upgrade is undecided, or our shutdown cut it short. A closing socket
    /// then reads them rather than closing on them, since a kernel answers bytes that reach a
    /// closed socket with a reset, and a reset discards what the socket had not sent yet.
    pub fn peer_may_send_control(&self) -> bool {
        self.peer_speaks_hadronio() || self.pending() || self.cut_short
    }

    /// Whether the peer's stream carries frames now: it announces its end with a FIN frame, so
    /// the end of its TCP stream means that it closed altogether (or is gone). After its RAW, or
    /// before its mark, the end of the TCP stream is an ordinary half-close.
    pub fn peer_framed(&self) -> bool {
        matches!(self.rx, Rx::Framed(_))
    }

    pub fn error(&self) -> Option<&Error> {
        match &self.stage {
            Stage::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// Whether our stream carries frames (FIN is a frame then, not a TCP FIN).
    pub fn framed(&self) -> bool {
        self.framed && !self.raw_again
    }

    /// The peer's stream bytes come over UCX.
    pub fn peer_switched(&self) -> bool {
        self.peer.switched
    }

    /// The peer's FIN frame: UCX messages before its end of stream, and when it came.
    pub fn peer_fin(&self) -> Option<(u64, Instant)> {
        self.peer.fin
    }

    /// Where the peer's stream broke off, for an error message when it ends without FIN.
    pub fn broken_off(&self) -> Option<String> {
        let Rx::Framed(parser) = &self.rx else { return None };
        if self.peer.fin.is_some() || self.peer.raw {
            return None;
        }
        Some(if parser.magic < MAGIC.len() {
            format!(" (it closed in the middle of the hadroNIO greeting: {} of {} bytes)", parser.magic, MAGIC.len())
        } else if let Some((kind, length)) = parser.control {
            format!(" (it closed in the middle of a {kind:?} frame: {} of {length} bytes)", parser.payload.len())
        } else if parser.header_len > 0 {
            format!(" (it closed in the middle of a frame header: {} of {FRAME_HEADER_LEN} bytes)", parser.header_len)
        } else if parser.data_left > 0 {
            format!(" (it closed in the middle of a DATA frame: {} bytes missing)", parser.data_left)
        } else if self.peer_hello.is_none() {
            String::from(" (it closed during the hadroNIO handshake, before its HELLO)")
        } else {
            String::new()
        })
    }

    /// Whether the peer's bytes sit in DATA frames that were not fully read (unread data).
    pub fn data_pending(&self) -> bool {
        matches!(&self.rx, Rx::Framed(parser) if parser.data_left > 0)
    }

    // --- events -----------------------------------------------------------------------------

    /// Client: the TCP connection is up. With a secret the offer goes at once: the client holds
    /// the server's bytes back from the first one until it proved the secret.
    pub fn on_connected(&mut self, now: Instant) {
        if matches!(self.stage, Stage::Connecting) {
            self.connected_at = Some(now);
            if self.policy.secret.is_some() {
                self.offer(now);
            }
        }
    }

    /// Client: the application is about to write bytes. Before its first ones, the offer goes
    /// out (as the stream's first byte). A client that only reads offers nothing: a plain server
    /// that writes and closes without reading would otherwise close with the offer unread, and
    /// its kernel would answer with a reset instead of the end of stream (however long it wrote
    /// first). Once the client wrote, an unread offer comes with unread application bytes, which
    /// reset the connection with the kernel's channels too. So a connection whose client never
    /// writes stays on TCP. `now` is asked only when the offer goes out (every write comes here).
    pub fn before_write(&mut self, now: impl FnOnce() -> Instant) {
        if matches!(self.stage, Stage::Connecting) && self.connected_at.is_some() {
            self.offer(now());
        }
    }

    fn offer(&mut self, now: Instant) {
        self.urgent = Some(protocol::URGENT_OFFER);
        self.stage = Stage::Offered { since: now, waited: false };
        self.rx = Rx::Raw(Watch::Accept);
    }

    /// Client: what this connection showed about its server, once (`None` before that and
    /// after it was taken).
    pub fn take_outcome(&mut self) -> Option<Outcome> {
        let outcome = self.outcome.take();
        self.outcome_taken |= outcome.is_some();
        outcome
    }

    fn learned(&mut self, outcome: Outcome) {
        if self.outcome.is_none() && !self.outcome_taken {
            self.outcome = Some(outcome);
        }
    }

    /// Raw bytes of the peer's stream were read (`n > 0`).
    pub fn on_raw(&mut self, n: usize) {
        self.raw_read += n as u64;
        let _ = self.on_ordinary_start();
    }

    /// Server: the client's stream starts with an ordinary byte (no mark at offset 0), read or
    /// not: the first byte is not an offer, so the client is a plain one. True if that decided
    /// the connection (its reads no longer look for marks).
    pub fn on_ordinary_start(&mut self) -> bool {
        if matches!(self.stage, Stage::Listening) {
            self.decide_plain(TcpReason::PlainPeer, "the peer does not speak hadroNIO");
            return true;
        }
        false
    }

    /// An urgent byte of the peer. `at_mark`: the socket's read position is at its offset (for
    /// [`Watch::Offer`] and [`Watch::Mark`] it always is). Before the caller reads on, it must have
    /// read past the mark if [`Negotiation::must_pass_mark`] says so.
    pub fn on_mark(&mut self, byte: u8, at_mark: bool, now: Instant) -> Result<()> {
        let watch = match &self.rx {
            Rx::Raw(watch) => *watch,
            Rx::Framed(_) => Watch::Nothing,
        };
        match (watch, &self.stage) {
            (Watch::Offer, Stage::Listening) => {
                if byte != protocol::URGENT_OFFER || self.raw_read > 0 || !at_mark {
                    // Urgent data of a plain client: ignored, as the JDK's reads ignore it.
                    return Ok(());
                }
                // The caller passes the offer's mark before the ACCEPT goes out (the client's mark
                // can only follow the ACCEPT).
                self.urgent = Some(protocol::URGENT_ACCEPT);
                self.stage = Stage::Accepted;
                self.rx = Rx::Raw(Watch::Mark);
                self.auth.since = Some(now);
            }
            (Watch::Accept, Stage::Offered { .. }) => {
                if byte != protocol::URGENT_ACCEPT {
                    // Our own offer coming back (a connection to itself), or a plain server's
                    // urgent data: not an answer.
                    return Ok(());
                }
                self.stage = Stage::Answered { reached: false };
                self.rx = Rx::Raw(Watch::Reach);
                self.auth.since = Some(now);
                if at_mark {
                    // Already at its offset: the caller passes it, then our mark can go.
                    self.reached(now);
                }
            }
            (Watch::Mark, _) => {
                if byte != self.policy.role.peer().mark() {
                    return self.fail(Error::new(
                        Status::Protocol,
                        format!("hadroNIO protocol error: urgent byte {byte:#04x} where the peer's mark was due"),
                    ));
                }
                self.rx = Rx::Framed(Parser::default());
                if self.policy.role == Role::Server && matches!(self.stage, Stage::Accepted) {
                    self.send_mark(now);
                }
            }
            // Urgent bytes at other times are not part of the protocol: ignored (ordinary reads
            // skip them).
            _ => {}
        }
        Ok(())
    }

    /// The urgent byte at which the peer's stream turns into frames.
    pub fn peer_mark(&self) -> u8 {
        self.policy.role.peer().mark()
    }

    /// Whether, having just handled an urgent byte at its offset, the caller must read past that
    /// offset before it sends [`Negotiation::urgent`] (see the protocol's rule on marks).
    pub fn must_pass_mark(&self) -> bool {
        matches!(self.urgent, Some(protocol::URGENT_ACCEPT) | Some(protocol::URGENT_MARK_CLIENT))
            || matches!(self.stage, Stage::Answered { reached: true })
    }

    /// Client in [`Watch::Reach`]: the read position reached the ACCEPT's offset. The caller
    /// passes it (reads past it) before sending our mark.
    pub fn on_mark_reached(&mut self, now: Instant) {
        if matches!(self.stage, Stage::Answered { reached: false }) {
            self.reached(now);
        }
    }

    /// A write of the application sent bytes (once per call). After a client's second one its
    /// mark goes (true: it is queued) if the ACCEPT's offset was reached: a connection that
    /// carries one request and its answer and then closes (a connection per request) stays on
    /// TCP, where it costs what the kernel's connections cost, and the upgrade goes to
    /// connections that carry more.
    pub fn on_write(&mut self, now: Instant) -> bool {
        self.writes = self.writes.saturating_add(1);
        if matches!(self.stage, Stage::Answered { reached: true }) && self.mark_due(now) {
            self.send_mark(now);
            return true;
        }
        false
    }

    /// Client: the ACCEPT's offset was reached; our mark goes now or when it is due.
    fn reached(&mut self, now: Instant) {
        self.stage = Stage::Answered { reached: true };
        if self.mark_due(now) {
            self.send_mark(now);
        } else {
            // The server's mark can only follow ours: ordinary reads until then.
            self.rx = Rx::Raw(Watch::Nothing);
        }
    }

    /// When a client's mark may go without a second write (none: at once).
    fn mark_time(&self) -> Option<Instant> {
        match self.connected_at {
            Some(at) if !self.policy.mark_delay.is_zero() => Some(at + self.policy.mark_delay),
            _ => None,
        }
    }

    /// When a client that wrote once looks again whether a stream comes its way: at its mark's
    /// time, then each time the connection's age doubled, [`MARK_CHECKS`] times in all (none
    /// after that: only a second write brings its mark).
    fn next_mark_check(&self) -> Option<Instant> {
        let at = self.connected_at?;
        (self.mark_checks < MARK_CHECKS).then(|| at + self.policy.mark_delay * (1u32 << self.mark_checks))
    }

    /// Whether a client's mark may go now: a second write came, or the connection is old enough
    /// and either a stream comes its way (it read [`STREAM_READ`] bytes) or nothing came back
    /// for [`HELD_ANSWER_DELAYS`] times the delay (a server may hold its answer until the
    /// upgrade). A connection that carried one request and its answer and then waits gains
    /// nothing from UCX until it writes again, and its upgrade would cost both processes CPU
    /// while it idles.
    fn mark_due(&self, now: Instant) -> bool {
        if self.writes >= 2 {
            return true;
        }
        let Some(at) = self.mark_time() else { return true };
        let held = self.raw_read == 0 && now >= at + self.policy.mark_delay * (HELD_ANSWER_DELAYS - 1);
        now >= at && (self.raw_read >= STREAM_READ || held)
    }

    /// Our mark, MAGIC, HELLO (and the challenge with a secret): from here on our stream
    /// carries frames.
    fn send_mark(&mut self, _now: Instant) {
        let role = self.policy.role;
        self.urgent = Some(role.mark());
        self.out.extend_from_slice(&MAGIC);
        let secret = self.policy.secret.is_some();
        let hello = Hello::ours(true, secret, role, self.policy.nonce, self.policy.identity);
        protocol::put_frame(&mut self.out, FrameType::Hello, &hello.encode());
        if secret {
            let challenge = auth::challenge();
            protocol::put_frame(&mut self.out, FrameType::Auth, &challenge);
            self.auth.own_challenge = Some(challenge);
        }
        self.framed = true;
        self.stage = Stage::Greeting(Box::new(Greeting { link: Link::None, peer_addr: None, endpoint: Endpoint::None }));
        if role == Role::Client {
            self.rx = Rx::Raw(Watch::Mark);
            self.learned(Outcome::Upgrading);
        }
    }

    /// Control bytes of the peer's stream (at most what [`Next::Control`] asked for).
    pub fn on_control(&mut self, mut bytes: &[u8], now: Instant) -> Result<()> {
        while !bytes.is_empty() {
            let Rx::Framed(parser) = &mut self.rx else {
                return Err(Error::new(Status::Internal, "control bytes outside the framed stream"));
            };
            if parser.magic < MAGIC.len() {
                let n = (MAGIC.len() - parser.magic).min(bytes.len());
                if bytes[..n] != MAGIC[parser.magic..parser.magic + n] {
                    return self.fail(Error::new(
                        Status::Protocol,
                        "hadroNIO protocol error: the bytes after the peer's mark are not the hadroNIO greeting",
                    ));
                }
                parser.magic += n;
                bytes = &bytes[n..];
                continue;
            }
            if parser.data_left > 0 {
                return Err(Error::new(Status::Internal, "control bytes where DATA was due"));
            }
            if let Some((kind, length)) = parser.control {
                let n = (length - parser.payload.len()).min(bytes.len());
                parser.payload.extend_from_slice(&bytes[..n]);
                bytes = &bytes[n..];
                if parser.payload.len() == length {
                    parser.control = None;
                    let payload = std::mem::take(&mut parser.payload);
                    self.on_frame(kind, &payload, now)?;
                }
                continue;
            }
            let n = (FRAME_HEADER_LEN - parser.header_len).min(bytes.len());
            parser.header[parser.header_len..parser.header_len + n].copy_from_slice(&bytes[..n]);
            parser.header_len += n;
            bytes = &bytes[n..];
            if parser.header_len < FRAME_HEADER_LEN {
                continue;
            }
            parser.header_len = 0;
            let header = match protocol::decode_header(&parser.header) {
                Ok(header) => header,
                Err(e) => return self.fail(e.into()),
            };
            if header.kind == FrameType::Data {
                if self.peer.switched || self.peer.fin.is_some() || self.peer.raw {
                    return self.protocol_error("DATA after SWITCH, RAW or FIN");
                }
                if let Rx::Framed(parser) = &mut self.rx {
                    parser.data_left = header.length;
                }
                if !bytes.is_empty() {
                    return Err(Error::new(Status::Internal, "control bytes read into a DATA frame"));
                }
            } else if header.length == 0 {
                self.on_frame(header.kind, &[], now)?;
            } else if let Rx::Framed(parser) = &mut self.rx {
                parser.control = Some((header.kind, header.length));
                parser.payload.clear();
            }
        }
        Ok(())
    }

    /// `n` bytes of the current DATA frame went to the application.
    pub fn on_data(&mut self, n: usize) {
        if let Rx::Framed(parser) = &mut self.rx {
            parser.data_left = parser.data_left.saturating_sub(n);
        }
    }

    fn protocol_error(&mut self, what: &str) -> Result<()> {
        self.fail(Error::new(Status::Protocol, format!("hadroNIO protocol error: {what}")))
    }

    fn fail(&mut self, error: Error) -> Result<()> {
        if !matches!(self.stage, Stage::Failed(_)) {
            self.stage = Stage::Failed(error.clone());
        }
        Err(error)
    }

    fn on_frame(&mut self, kind: FrameType, payload: &[u8], now: Instant) -> Result<()> {
        if self.peer.reflected {
            // Our own frames coming back: only what shapes the byte stream counts.
            return match kind {
                FrameType::Raw => {
                    self.peer.raw = true;
                    self.rx = Rx::Raw(Watch::Nothing);
                    Ok(())
                }
                FrameType::Fin => {
                    self.peer.fin = Some((0, now));
                    Ok(())
                }
                _ => Ok(()),
            };
        }
        match kind {
            FrameType::Hello => self.on_hello(payload, now),
            FrameType::Auth => self.on_auth(payload),
            FrameType::Addr => self.on_addr(payload),
            FrameType::Switch => {
                if self.peer.switched || self.peer.raw || self.peer.fin.is_some() {
                    return self.protocol_error("SWITCH out of order");
                }
                if !self.addr_sent {
                    return self.protocol_error("SWITCH before this side sent ADDR");
                }
                self.peer.switched = true;
                Ok(())
            }
            FrameType::Raw => {
                if self.peer.switched || self.peer.raw || self.peer.fin.is_some() {
                    return self.protocol_error("RAW out of order");
                }
                self.peer.raw = true;
                self.rx = Rx::Raw(Watch::Nothing);
                // A peer that gave up will not create an endpoint to us: give up too.
                self.give_up(TcpReason::Other, "the peer gave up the upgrade");
                Ok(())
            }
            FrameType::Fin => {
                if self.peer.fin.is_some() {
                    return self.protocol_error("second FIN");
                }
                let messages = match protocol::decode_u64(payload) {
                    Ok(messages) => messages,
                    Err(e) => return self.fail(e.into()),
                };
                if !self.peer.switched && messages != 0 {
                    return self.protocol_error("FIN counts UCX messages but the peer never switched");
                }
                self.peer.fin = Some((messages, now));
                Ok(())
            }
            FrameType::Credit | FrameType::Data => self.protocol_error(&format!("unexpected {kind:?} frame")),
        }
    }

    fn greeting(&mut self) -> Option<&mut Greeting> {
        match &mut self.stage {
            Stage::Greeting(greeting) => Some(greeting),
            _ => None,
        }
    }

    fn on_hello(&mut self, payload: &[u8], _now: Instant) -> Result<()> {
        let hello = match Hello::decode(payload) {
            Ok(hello) => hello,
            Err(e) => return self.fail(e.into()),
        };
        if self.peer_hello.is_some() {
            return self.protocol_error("second HELLO");
        }
        self.peer_hello = Some(hello);
        if hello.role != self.policy.role.peer() || hello.nonce == self.policy.nonce {
            // Our own stream came back to us (an echo that passes urgent data on): it carries
            // the application's bytes as they were written, so it stays plain TCP.
            self.peer.reflected = true;
            self.give_up(TcpReason::Other, "the peer's stream is this side's own, reflected");
            return Ok(());
        }
        let peer_secret = hello.capabilities & protocol::CAP_AUTH != 0;
        match (self.policy.secret.is_some(), peer_secret) {
            (true, false) => {
                return self.fail(Error::new(
                    Status::Protocol,
                    "hadroNIO authentication failed: the peer has no shared secret (hadronio.secret) configured",
                ))
            }
            (false, true) => {
                return self.fail(Error::new(
                    Status::Protocol,
                    "hadroNIO authentication failed: the peer requires a shared secret; set hadronio.secret or HADRONIO_SECRET",
                ))
            }
            _ => {}
        }
        if !hello.shares_version() {
            let why = format!(
                "the peer speaks hadroNIO protocol versions {}..={}, this side {}..={}",
                hello.min_version,
                hello.version,
                protocol::MIN_VERSION,
                protocol::VERSION
            );
            self.give_up(TcpReason::Other, why);
            return Ok(());
        }
        if hello.capabilities & protocol::CAP_UCX == 0 {
            self.give_up(TcpReason::NoPath, "UCX is unavailable on the peer's side");
            return Ok(());
        }
        if let Some(greeting) = self.greeting() {
            greeting.link = Link::Opening;
            self.actions.push_back(Action::OpenLink(hello.identity));
        }
        Ok(())
    }

    fn on_auth(&mut self, payload: &[u8]) -> Result<()> {
        let Some(secret) = self.policy.secret.clone() else {
            return self.protocol_error("AUTH without a shared secret");
        };
        let role = self.policy.role;
        let (Some(own), true) = (self.auth.own_challenge, self.peer_hello.is_some()) else {
            return self.protocol_error("AUTH before HELLO");
        };
        match payload.len() {
            auth::CHALLENGE_LEN if self.auth.peer_challenge.is_none() => {
                let mut challenge = [0u8; auth::CHALLENGE_LEN];
                challenge.copy_from_slice(payload);
                self.auth.peer_challenge = Some(challenge);
                let proof = auth::proof(&secret, role == Role::Client, &challenge, &own);
                protocol::put_frame(&mut self.out, FrameType::Auth, &proof);
                Ok(())
            }
            auth::PROOF_LEN if self.auth.peer_challenge.is_some() && !self.auth.verified => {
                let peer_challenge = self.auth.peer_challenge.unwrap_or_default();
                if !auth::verify(&secret, role == Role::Server, &own, &peer_challenge, payload) {
                    return self.fail(Error::new(
                        Status::Protocol,
                        "hadroNIO authentication failed: the peer's shared secret differs",
                    ));
                }
                self.auth.verified = true;
                self.advance();
                Ok(())
            }
            _ => self.protocol_error("AUTH out of order"),
        }
    }

    fn on_addr(&mut self, payload: &[u8]) -> Result<()> {
        if self.peer_hello.is_none() || self.peer_addr_seen {
            return self.protocol_error("ADDR out of order");
        }
        if self.policy.secret.is_some() && !self.auth.verified {
            return self.protocol_error("ADDR before the peer authenticated");
        }
        self.peer_addr_seen = true;
        let addr = match Addr::decode(payload) {
            Ok(addr) => addr,
            Err(e) => return self.fail(e.into()),
        };
        // A side that gave up does not connect.
        if let Some(greeting) = self.greeting() {
            greeting.peer_addr = Some(addr);
            self.advance();
        }
        Ok(())
    }

    /// Sends ADDR and asks for the endpoint once the link is posted, the peer's ADDR is here
    /// and the peer authenticated.
    fn advance(&mut self) {
        if self.policy.secret.is_some() && !self.auth.verified {
            return;
        }
        let Stage::Greeting(greeting) = &mut self.stage else { return };
        if let Link::Ready(addr) = &mut greeting.link {
            if let Some(addr) = addr.take() {
                protocol::put_frame(&mut self.out, FrameType::Addr, &addr.encode());
                self.addr_sent = true;
            }
        }
        if let (Link::Ready(_), Some(addr), Endpoint::None) = (&greeting.link, &greeting.peer_addr, greeting.endpoint) {
            greeting.endpoint = Endpoint::Creating;
            self.actions.push_back(Action::Connect(addr.clone()));
        }
    }

    /// The link is posted (`Ok(our ADDR)`) or could not be (`Err(why)`).
    pub fn on_link(&mut self, result: std::result::Result<Addr, String>) {
        let Some(greeting) = self.greeting() else { return };
        match result {
            Ok(addr) => {
                greeting.link = Link::Ready(Some(addr));
                self.advance();
            }
            Err(why) => self.give_up(TcpReason::NoPath, why),
        }
    }

    /// Our FIN frame (the output is shut down after `messages` UCX messages); only while our
    /// stream carries frames.
    pub fn fin(&mut self, messages: u64) {
        protocol::put_frame(&mut self.out, FrameType::Fin, &protocol::encode_u64(messages));
    }

    /// The endpoint exists (`Ok`; the caller sends the probe asked for) or could not be created.
    pub fn on_endpoint(&mut self, result: std::result::Result<(), String>, now: Instant) {
        let deadline = now + self.policy.probe_wait;
        let nonce = self.policy.nonce;
        let Some(greeting) = self.greeting() else { return };
        match result {
            Ok(()) => {
                greeting.endpoint = Endpoint::Probing { deadline };
                self.actions.push_back(Action::Probe(nonce));
            }
            Err(why) => self.give_up(TcpReason::NoPath, format!("UCX endpoint could not be created: {why}")),
        }
    }

    /// The connection decided against the upgrade it was setting up (the UCX path is no better
    /// than TCP, say): RAW goes out, the string says why.
    pub fn decline(&mut self, why: impl Into<Why>) {
        self.give_up(TcpReason::NoPath, why);
    }

    /// The pong of our probe came back over UCX: the path works both ways.
    pub fn on_probe_answered(&mut self, token: u64) {
        if token != self.policy.nonce || self.output_done {
            return;
        }
        let Some(greeting) = self.greeting() else { return };
        if !matches!(greeting.endpoint, Endpoint::Probing { .. }) {
            return;
        }
        protocol::put_frame(&mut self.out, FrameType::Switch, &[]);
        self.stage = Stage::Upgraded;
        self.path = Path::Ucx;
        self.actions.push_back(Action::Switched);
    }

    /// Time passed: an offer wait, an authentication or a probe may have run out.
    pub fn on_timeout(&mut self, now: Instant) -> Result<()> {
        let millis = |d: Duration| d.as_millis();
        if let (Some(since), false, true) = (self.auth.since, self.auth.verified, self.policy.secret.is_some()) {
            if now >= since + self.policy.auth_wait && self.error().is_none() {
                return self.fail(Error::new(
                    Status::Protocol,
                    format!("hadroNIO authentication failed: the peer did not authenticate within {} ms", millis(self.policy.auth_wait)),
                ));
            }
        }
        let offer_wait = self.policy.offer_wait;
        let probe_wait = self.policy.probe_wait;
        if matches!(self.stage, Stage::Answered { reached: true }) {
            if self.mark_due(now) {
                self.send_mark(now);
                return Ok(());
            }
            while self.next_mark_check().is_some_and(|at| now >= at) {
                self.mark_checks += 1;
            }
        }
        match &mut self.stage {
            Stage::Offered { since, waited } if !*waited && now >= *since + offer_wait => {
                // No answer in time: a plain server, as far as can be told (a late answer still
                // counts). With a secret the bytes held back go out raw now.
                *waited = true;
                self.learned(Outcome::Plain);
                let why = Why::from(format!("no answer to the hadroNIO offer within {} ms", millis(offer_wait)));
                self.path = Path::Tcp(why.clone());
                self.actions.push_back(Action::GaveUp(TcpReason::PlainPeer, why));
            }
            Stage::Greeting(greeting) => {
                if matches!(greeting.endpoint, Endpoint::Probing { deadline } if now >= deadline) {
                    let why = format!("the UCX path did not carry a probe round trip within {} ms", millis(probe_wait));
                    self.give_up(TcpReason::NoPath, why);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Our output is shut down. While our stream is raw that ends the upgrade (our mark can no
    /// longer be sent); with frames the caller sends FIN ([`Negotiation::fin`]) and the greeting
    /// goes on only for the peer's direction.
    pub fn on_shutdown(&mut self) {
        if self.output_done {
            return;
        }
        self.output_done = true;
        if !self.pending() {
            return;
        }
        if matches!(self.path, Path::NotYet) {
            self.path = Path::OutputShutDown;
        }
        if !self.framed() {
            // A client that did not offer, or saw the ACCEPT, waits for nothing: the server
            // answers only an offer and sends its own mark only after ours, which will not follow
            // a TCP FIN. Anywhere else the peer's offer, answer or mark may still be on its way.
            self.cut_short = !matches!(self.stage, Stage::Connecting | Stage::Answered { .. });
            if matches!(self.stage, Stage::Answered { .. }) {
                self.learned(Outcome::Short);
            }
            self.stage = Stage::Plain;
            // An offer or answer not sent yet cannot follow a TCP FIN.
            self.urgent = None;
            if matches!(self.rx, Rx::Raw(Watch::Accept) | Rx::Raw(Watch::Reach)) {
                // Without our mark the peer never sends its own.
                self.rx = Rx::Raw(Watch::Nothing);
            }
        }
    }

    /// The peer's TCP stream ended.
    pub fn on_eof(&mut self) {
        self.peer.eof = true;
        match self.stage {
            Stage::Connecting => self.decide_plain(TcpReason::Other, "the peer closed before this side wrote"),
            Stage::Listening => self.decide_plain(TcpReason::PlainPeer, "the peer closed before speaking"),
            Stage::Offered { .. } => {
                self.learned(Outcome::Plain);
                self.decide_plain(TcpReason::PlainPeer, "the peer closed without answering the offer");
            }
            // Our mark waited for a second write, and the peer is done: no upgrade to start.
            Stage::Answered { .. } => {
                self.learned(Outcome::Short);
                self.decide_plain(TcpReason::Other, "the peer closed before the upgrade");
            }
            _ => {}
        }
    }

    /// Before any mark: the connection stays plain TCP (both streams raw), for `why`.
    fn decide_plain(&mut self, reason: TcpReason, why: &'static str) {
        self.stage = Stage::Plain;
        self.rx = Rx::Raw(Watch::Nothing);
        self.path = Path::Tcp(Why::from(why));
        self.actions.push_back(Action::GaveUp(reason, Why::from(why)));
    }

    /// Gives the upgrade up for our writes: RAW if our stream carries frames.
    fn give_up(&mut self, reason: TcpReason, why: impl Into<Why>) {
        let why = why.into();
        match self.stage {
            Stage::Upgraded | Stage::Plain | Stage::Failed(_) => return,
            _ => {}
        }
        if self.framed && !self.raw_again {
            protocol::put_frame(&mut self.out, FrameType::Raw, &[]);
            self.raw_again = true;
        }
        self.stage = Stage::Plain;
        self.path = Path::Tcp(why.clone());
        self.actions.push_back(Action::GaveUp(reason, why));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_come_out_in_the_order_they_went_in() {
        let mut actions = Actions::default();
        assert!(actions.pop_front().is_none());
        actions.push_back(Action::Probe(1));
        actions.push_back(Action::Probe(2));
        assert_eq!(actions.pop_front(), Some(Action::Probe(1)));
        actions.push_back(Action::Probe(3));
        assert_eq!(actions.pop_front(), Some(Action::Probe(2)), "an older one waiting behind the inline slot goes first");
        actions.push_back(Action::Switched);
        assert_eq!(actions.pop_front(), Some(Action::Probe(3)));
        assert_eq!(actions.pop_front(), Some(Action::Switched));
        assert!(actions.pop_front().is_none());
        actions.push_back(Action::GaveUp(TcpReason::PlainPeer, Why::from("plain")));
        assert_eq!(actions.pop_front(), Some(Action::GaveUp(TcpReason::PlainPeer, Why::from("plain"))));
    }

    #[test]
    fn a_learned_reason_is_put_in_words_only_when_shown() {
        let why = Why::Learned { plain: true, count: 2, gap: 16 };
        assert_eq!(
            why.to_string(),
            "the last 2 offers to this address went unanswered (a plain server); one connection in 16 still offers"
        );
        let why = Why::Learned { plain: false, count: 8, gap: 256 };
        assert!(why.to_string().starts_with("the last 8 connections to this address ended before their upgrade"), "{why}");
    }
}
