//! The control stream of a connection as a state machine without I/O: what the peer's TCP stream
//! and the UCX half report go in, and out come the bytes this side must write on its TCP socket
//! (urgent bytes, frames), how the next bytes of the peer's stream must be read, and what the
//! connection must do (open its UCX link, create an endpoint, switch its writes to UCX, fall back
//! to raw bytes, fail). The connection (`conn/`) owns the socket and the link and reports back
//! what its I/O did; nothing here touches a socket, so every path is tested without one (see the
//! tests below and the `negotiation` fuzz target).
//!
//! Files: this one holds the state and what it answers; `marks.rs` the offer, answer and marks,
//! `frames.rs` the peer's frames, `decisions.rs` what the connection reports and how the
//! upgrade ends.
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

mod decisions;
mod frames;
mod marks;

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

/// Why authentication failed, where the peer's HELLO or answer shows a secret on one side only,
/// or where a client wrote to a server that requires one as if it had none.
const PEER_HAS_NO_SECRET: &str = "hadroNIO authentication failed: the peer has no shared secret (hadronio.secret) configured";
const PEER_REQUIRES_SECRET: &str = "hadroNIO authentication failed: the peer requires a shared secret; set hadronio.secret or HADRONIO_SECRET";
const PEER_CLOSED_UNPROVEN: &str =
    "hadroNIO authentication failed: the peer has no shared secret (hadronio.secret) configured: it wrote and closed without proving one";
const PEER_SENT_UNPROVEN: &str =
    "hadroNIO authentication failed: the peer has no shared secret (hadronio.secret) configured: it wrote more than this side holds without proving one";

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
#[derive(Debug, Default)]
struct PeerStream {
    /// Its HELLO.
    hello: Option<Hello>,
    /// Its ADDR came.
    addr_seen: bool,
    /// Raw bytes of its stream read so far.
    raw_read: u64,
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
    ours: OurStream,
    /// The path this connection takes and why.
    path: Path,
    auth: Auth,
    client: ClientSide,
}

/// What our own stream carries, and what went out on it.
#[derive(Debug)]
struct OurStream {
    /// How it carries our bytes.
    carries: Ours,
    /// Bytes of the application it carried while the upgrade was undecided.
    written: u64,
    /// Whether we ever sent ADDR (the peer may switch only then).
    addr_sent: bool,
    /// Whether it was shut down.
    output: Output,
}

/// How our stream carries our bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ours {
    /// Raw bytes: our mark has not gone out.
    Raw,
    /// Frames: our mark went out.
    Framed,
    /// Raw again: our RAW went out.
    RawAgain,
}

/// Whether our output is shut down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Open,
    /// Shut down: nothing more to switch to UCX (the greeting goes on for the peer's sake: its
    /// probe needs our pong, its UCX messages our link).
    Shut,
    /// Shut down before the upgrade was decided, at a point where the peer's offer, answer or
    /// mark may still be on its way.
    CutShort,
}

/// A client's side: its clock for its mark, and what it learned about its server.
#[derive(Debug, Default)]
struct ClientSide {
    /// When the TCP connection came up.
    connected_at: Option<Instant>,
    /// How many writes the application made.
    writes: u32,
    /// After one write: how often its mark's time came without a stream to read (see
    /// [`Negotiation::next_mark_check`]).
    mark_checks: u32,
    /// What the connection showed about its server, for the connection to take
    /// ([`Negotiation::take_outcome`]); one per connection, and a second where the server's
    /// answer came after the offer wait had taken it for a plain one.
    outcome: Learned,
}

/// What a client connection learned about its server, and whether the connection took it.
#[derive(Debug, Default)]
enum Learned {
    #[default]
    Nothing,
    Ready(Outcome),
    Taken,
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
            ours: OurStream { carries: Ours::Raw, written: 0, addr_sent: false, output: Output::Open },
            path,
            auth: Auth::default(),
            client: ClientSide::default(),
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
        if self.ours.carries == Ours::Framed {
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
        self.pending() || (self.ours.addr_sent && !self.peer.switched && !self.peer.raw && self.peer.fin.is_none() && !self.peer.eof)
    }

    /// Whether the UCX half is needed, or may still be: our writes use it, the peer's do, the
    /// upgrade is under way, or the peer may still switch to our ADDR.
    pub fn ucx_needed(&self) -> bool {
        match self.stage {
            Stage::Upgraded | Stage::Greeting(_) => true,
            _ => self.peer.switched || (self.ours.addr_sent && !self.peer.raw && self.peer.fin.is_none() && !self.peer.eof),
        }
    }

    /// The application wrote `n` bytes to the stream while the upgrade was undecided.
    pub fn on_written(&mut self, n: usize) {
        self.ours.written = self.ours.written.saturating_add(n as u64);
    }

    /// The most bytes the application moved in one direction before the upgrade was decided
    /// (written, or read as raw bytes).
    pub fn moved(&self) -> u64 {
        self.ours.written.max(self.peer.raw_read)
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
        self.peer_speaks_hadronio() || self.pending() || self.ours.output == Output::CutShort
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
        self.ours.carries == Ours::Framed
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
        } else if self.peer.hello.is_none() {
            String::from(" (it closed during the hadroNIO handshake, before its HELLO)")
        } else {
            String::new()
        })
    }

    /// Whether the peer's bytes sit in DATA frames that were not fully read (unread data).
    pub fn data_pending(&self) -> bool {
        matches!(&self.rx, Rx::Framed(parser) if parser.data_left > 0)
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

