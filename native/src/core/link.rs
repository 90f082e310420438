//! The UCX half of a connection: posted receive slots, credits, staged sends.
//!
//! Receiving: `slots` buffers of `slot_len` bytes are posted, each for one message: slot `k`
//! receives the slot messages whose sequence number is `k` modulo the slot count, by exact tag
//! (UCX finds an exact tag by hash; a masked receive would be searched for in a list of every
//! masked receive of the worker). The peer may have at most that many unconsumed messages in
//! flight (its credits). UCX may complete receives in any order, so every slot has its own
//! completion flag and the reader consumes slots strictly in ring order. A consumed slot is posted
//! again at once, for the message `slots` later, and counted; the count returns to the peer in a
//! small active message once half the slots were consumed. An empty slot message announces a
//! BODY, received outside the slots (straight into the reader's memory when its length fits).
//!
//! Sending: a message carries at most the peer's slot length. A write is sent straight from the
//! caller's memory when UCX can complete it before returning; otherwise, or when credits are
//! exhausted, the bytes are copied into staging buffers (small writes coalesce there) that go out
//! as credits return. Staged bytes are bounded by the send buffer setting.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, trace, warn};

use super::credits::{RxCredits, TxCredits};
use super::error::{Error, Result, Status};
use super::iov::Cursor;
use super::lanes::{Lane, Notice, PeerEndpoint, Touched};
use super::protocol::{self, Addr};
use crate::stats::{self, Counter};
use crate::ucx::{self, Completion, Request, Start, Wake, WorkerLock};

/// The part of a link that completion callbacks see. Only atomics.
pub struct Shared {
    pub id: u32,
    touched_flag: AtomicBool,
    touched: Arc<Touched>,
    /// The receive slots' completions.
    slots: Box<[Completion]>,
    /// Highest consumed count the peer reported in a credit message.
    peer_consumed: AtomicU64,
    /// The token of a probe ping to answer, and whether there is one.
    ping: AtomicU64,
    pinged: AtomicBool,
    /// The token of the last pong, and whether one came.
    pong: AtomicU64,
    ponged: AtomicBool,
}

impl Wake for Shared {
    fn wake(&self) {
        self.touch();
    }
}

/// What the completions of a link's operations wake: its `Shared`, which outlives them.
fn waker(shared: &Arc<Shared>) -> *const dyn Wake {
    let shared: *const Shared = Arc::as_ptr(shared);
    shared
}

impl Shared {
    /// A credit or probe message for this link arrived (inside progress).
    pub fn on_notice(&self, notice: Notice) {
        log::trace!("link {}: {notice:?}", self.id);
        match notice {
            Notice::Credit(consumed) => {
                self.peer_consumed.fetch_max(consumed, Ordering::AcqRel);
            }
            Notice::Ping(token) => {
                self.ping.store(token, Ordering::Relaxed);
                self.pinged.store(true, Ordering::Release);
            }
            Notice::Pong(token) => {
                self.pong.store(token, Ordering::Relaxed);
                self.ponged.store(true, Ordering::Release);
            }
        }
        self.touch();
    }

    /// Queues this link for attention after the current progress call.
    pub fn touch(&self) {
        if !self.touched_flag.swap(true, Ordering::AcqRel) {
            self.touched.push(self.id);
        }
    }

    /// Clears the touched mark before the link is looked at.
    pub fn untouch(&self) {
        self.touched_flag.store(false, Ordering::Release);
    }
}

/// A staging buffer: bytes copied from the application, waiting for credits or for UCX.
struct SendBuf {
    status: Completion,
    data: Vec<u8>,
    posted: bool,
    request: Option<Request>,
}

/// A credit message in flight (its header must stay valid until it completes).
struct CreditSend {
    status: Completion,
    header: [u8; protocol::CREDIT_HEADER_LEN],
    request: Option<Request>,
}

/// What the peer told us in its ADDR frame.
#[derive(Clone, Copy, Debug)]
struct Peer {
    id: u32,
    slot_len: usize,
    max_message: usize,
}

/// Smallest write that goes as a BODY straight from the caller's memory (and at least two slots).
/// A BODY waits for the reader (UCX's rendezvous); smaller writes are copied into staging and the
/// writer goes on at once, as with the kernel's send buffer, so that both directions of a stream
/// flow at the same time.
const LARGE_MIN: usize = 256 * 1024;

/// Largest BODY message this side accepts (announced in ADDR).
pub const MAX_LARGE_MESSAGE: usize = 1 << 20;

/// A BODY being received: into the caller's memory (blocking reads) or into the bounce buffer.
struct LargeRx {
    /// Its length, if UCX knew it when the receive was posted.
    expected: Option<usize>,
    /// Size of the receive buffer.
    capacity: usize,
    into_user: bool,
    offset: usize,
    status: Box<Completion>,
    request: Option<Request>,
}

/// A BODY being sent straight from the caller's memory (blocking writes).
struct LargeTx {
    status: Arc<Completion>,
    request: Option<Request>,
}

/// Lets a blocking writer wait for its large send even after the connection was torn down.
#[derive(Clone)]
pub struct TxWaiter(Arc<Completion>);

impl TxWaiter {
    pub fn done(&self) -> bool {
        self.0.is_done()
    }
}

/// How long a dropped link waits for its requests to end before their memory is left to the
/// worker (unless its peer is known to be gone).
const DROP_WAIT: Duration = Duration::from_millis(100);

/// How long a teardown waits for cancelled receives before leaving them to the hub.
const TEARDOWN_WAIT: Duration = Duration::from_millis(50);

pub struct Link {
    shared: Arc<Shared>,
    lane: Arc<Lane>,
    slot_len: usize,
    memory: Box<[u8]>,
    requests: Vec<Option<Request>>,
    head: usize,
    head_offset: usize,
    /// Slot messages consumed by the application, and what the peer was told.
    rx: RxCredits,
    ep: Option<Arc<PeerEndpoint>>,
    peer: Option<Peer>,
    /// Our messages to the peer: sent and consumed by it.
    tx: TxCredits,
    staged: VecDeque<Box<SendBuf>>,
    staged_bytes: usize,
    send_buffer: usize,
    spare: Vec<Box<SendBuf>>,
    credit: Box<CreditSend>,
    credit_wanted: bool,
    /// Sequence number of the slot message the next posted receive is for.
    rx_posted: u64,
    large_rx: Option<LargeRx>,
    rx_large_seq: u64,
    bounce: Vec<u8>,
    large_tx: Option<LargeTx>,
    tx_large_seq: u64,
}

/// What an empty slot message (a BODY announcement) is sent from.
static EMPTY: [u8; 1] = [0];

impl Link {
    /// Allocates the receive slots for connection `id` on the worker of `lane` and posts them all.
    pub fn new(lane: Arc<Lane>, id: u32, slots: u32, slot_len: u32, send_buffer: u32) -> Result<Link> {
        let slot_len = slot_len as usize;
        let count = slots as usize;
        let shared = Arc::new_cyclic(|weak: &std::sync::Weak<Shared>| {
            let owner: *const dyn Wake = weak.as_ptr();
            Shared {
                id,
                touched_flag: AtomicBool::new(false),
                touched: lane.touched.clone(),
                slots: (0..count).map(|_| Completion::new(owner, false)).collect(),
                peer_consumed: AtomicU64::new(0),
                ping: AtomicU64::new(0),
                pinged: AtomicBool::new(false),
                pong: AtomicU64::new(0),
                ponged: AtomicBool::new(false),
            }
        });
        let credit = Box::new(CreditSend {
            status: Completion::new(waker(&shared), true),
            header: [0; protocol::CREDIT_HEADER_LEN],
            request: None,
        });
        let mut link = Link {
            shared,
            lane,
            slot_len,
            memory: vec![0u8; count * slot_len].into_boxed_slice(),
            requests: (0..count).map(|_| None).collect(),
            head: 0,
            head_offset: 0,
            rx: RxCredits::new(slots),
            ep: None,
            peer: None,
            tx: TxCredits::new(0),
            staged: VecDeque::new(),
            staged_bytes: 0,
            send_buffer: send_buffer as usize,
            spare: Vec::new(),
            credit,
            credit_wanted: false,
            rx_posted: 0,
            large_rx: None,
            rx_large_seq: 0,
            bounce: Vec::new(),
            large_tx: None,
            tx_large_seq: 0,
        };
        let worker = link.lane.worker.clone();
        let lock = worker.lock();
        for slot in 0..count {
            link.post(&lock, slot)?;
        }
        Ok(link)
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The lane (worker) this link receives on.
    pub fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }

    /// What the peer needs to send to us (the ADDR frame).
    pub fn local_addr(&self) -> Addr {
        Addr {
            tag_id: self.shared.id,
            slots: self.shared.slots.len() as u32,
            slot_len: self.slot_len as u32,
            max_message: MAX_LARGE_MESSAGE.max(self.slot_len) as u32,
            worker_address: self.lane.worker.address().to_vec(),
        }
    }

    /// Posts `slot` for the next slot message in sequence.
    fn post(&mut self, lock: &WorkerLock<'_>, slot: usize) -> Result<()> {
        let tag = protocol::make_tag(self.shared.id, protocol::KIND_SLOT, self.rx_posted);
        self.rx_posted += 1;
        let done = &self.shared.slots[slot];
        done.start();
        let buffer = self.memory[slot * self.slot_len..].as_mut_ptr();
        // SAFETY: the slot's memory and completion (and the `Shared` it wakes) live until the link
        // is torn down, which cancels and waits for every pending receive first.
        let started = unsafe { lock.tag_recv(buffer, self.slot_len, tag, protocol::FULL_MASK, done) };
        match started {
            Ok(request) => self.requests[slot] = Some(request),
            Err(e) => return Err(Error::new(Status::Io, format!("posting a UCX receive: {e}"))),
        }
        Ok(())
    }

    /// Sends a probe message (ping or pong) over the endpoint.
    pub fn send_probe(&self, kind: u8, token: u64) -> Result<()> {
        let (Some(ep), Some(peer)) = (self.ep.as_ref().and_then(|p| p.ep()), self.peer) else {
            return Err(Error::new(Status::Internal, "a probe without an endpoint"));
        };
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        let header = protocol::encode_probe(peer.id, kind, token);
        match ep.am_send_owned(&lock, protocol::AM_PROBE, &header, &protocol::PROBE_PADDING) {
            Ok(Start::Done(())) => Ok(()),
            Ok(Start::Pending(request)) => {
                request.free(&lock);
                Ok(())
            }
            Err(e) => Err(Error::new(Status::Reset, format!("sending a UCX probe: {e}"))),
        }
    }

    /// The token of a ping that arrived since the last call.
    pub fn take_ping(&self) -> Option<u64> {
        self.shared.pinged.swap(false, Ordering::AcqRel).then(|| self.shared.ping.load(Ordering::Relaxed))
    }

    /// The token of a pong that arrived since the last call.
    pub fn take_pong(&self) -> Option<u64> {
        self.shared.ponged.swap(false, Ordering::AcqRel).then(|| self.shared.pong.load(Ordering::Relaxed))
    }

    /// Creates the endpoint to the peer described by `addr`.
    pub fn connect(&mut self, addr: &Addr) -> std::result::Result<(), ucx::UcxError> {
        let ep = self.lane.endpoints.get(&self.lane.worker, &self.shared.touched, &addr.worker_address, self.shared.id)?;
        self.ep = Some(ep);
        self.peer = Some(Peer { id: addr.tag_id, slot_len: addr.slot_len as usize, max_message: addr.max_message as usize });
        self.tx = TxCredits::new(addr.slots);
        Ok(())
    }

    pub fn has_endpoint(&self) -> bool {
        self.ep.is_some()
    }

    /// The transports UCX chose for the endpoint.
    pub fn describe(&self) -> String {
        match self.ep.as_ref().and_then(|p| p.ep()) {
            Some(ep) => ep.describe(),
            None => String::from("(no endpoint)"),
        }
    }

    /// " over shared memory (posix/memory, ...)" or " over the network (tcp/eth0, ...)": which
    /// transports UCX chose for the endpoint, in words for a log line.
    pub fn path_words(&self) -> String {
        let unique = self.transports();
        let shared = unique.iter().any(|t| t.starts_with("posix/") || t.starts_with("sysv/") || t.starts_with("xpmem/"));
        let words = if shared { "shared memory" } else if unique.is_empty() { "UCX" } else { "the network" };
        format!(" over {words} ({})", unique.join(", "))
    }

    /// Whether UCX reaches the peer only through its TCP transport.
    pub fn tcp_only(&self) -> bool {
        let transports = self.transports();
        !transports.is_empty() && transports.iter().all(|t| t.starts_with("tcp/"))
    }

    /// The transports (`name/device`) of the endpoint's lanes, each once.
    fn transports(&self) -> Vec<String> {
        let text = self.describe();
        // Lines such as "lane[0]:  0:posix/memory.0 md[0] -> ...": the transport/device word.
        let transports: Vec<&str> = text
            .lines()
            .filter_map(|line| line.split_once("lane[").map(|(_, rest)| rest))
            .filter_map(|rest| rest.split_whitespace().nth(1))
            .map(|word| word.split_once(':').map_or(word, |(_, t)| t))
            .filter(|t| t.contains('/'))
            .collect();
        let mut unique: Vec<String> = Vec::new();
        for t in transports {
            if !unique.iter().any(|u| u == t) {
                unique.push(t.to_string());
            }
        }
        unique
    }

    pub fn endpoint_error(&self) -> Option<i32> {
        self.ep.as_ref().and_then(|p| p.failure())
    }

    // --- receiving ----------------------------------------------------------------------------

    /// Whether a read would return bytes (or make progress on a BODY).
    pub fn readable(&self) -> bool {
        match &self.large_rx {
            Some(large) => large.status.is_done(),
            None => self.shared.slots[self.head].is_done(),
        }
    }

    /// Slot messages consumed so far.
    pub fn consumed(&self) -> u64 {
        self.rx.consumed()
    }

    /// Whether a BODY is being received into the caller's memory (the caller must wait for it
    /// before returning, see [`Link::large_rx_done`]).
    pub fn user_rx_pending(&self) -> bool {
        self.large_rx.as_ref().is_some_and(|l| l.into_user && !l.status.is_done())
    }

    /// Whether the BODY receive into the caller's memory finished.
    pub fn large_rx_done(&self) -> bool {
        self.large_rx.as_ref().map_or(true, |l| !l.into_user || l.status.is_done())
    }

    /// Copies received bytes into `dst`, consuming and re-posting slots; returns the byte count.
    /// With `allow_user`, a large message may be received straight into `dst` (the call then
    /// returns 0 with [`Link::user_rx_pending`] set, and the caller waits and calls again with the
    /// same cursor).
    pub fn read(&mut self, dst: &mut Cursor<'_>, allow_user: bool) -> Result<usize> {
        let start = dst.moved();
        let worker = self.lane.worker.clone();
        let mut lock = None;
        while dst.remaining() > 0 {
            if let Some(large) = &mut self.large_rx {
                if !large.status.is_done() {
                    break;
                }
                let status = large.status.status();
                let got = large.status.length();
                if status != ucx::Status::OK || got == 0 || large.expected.is_some_and(|expected| got != expected) {
                    return Err(Self::body_error(status, got, large.expected, large.capacity));
                }
                if large.into_user {
                    dst.advance(got);
                    large.offset = got;
                } else {
                    // SAFETY: `dst` regions are caller memory distinct from the bounce buffer.
                    let copied = unsafe { dst.fill_from(&self.bounce[large.offset..got]) };
                    large.offset += copied;
                }
                if large.offset == got {
                    let lock = lock.get_or_insert_with(|| worker.lock());
                    if let Some(request) = self.large_rx.take().and_then(|l| l.request) {
                        request.free(lock);
                    }
                    self.rx_large_seq += 1;
                    self.consume_head(lock)?;
                }
                continue;
            }
            let slot = &self.shared.slots[self.head];
            if !slot.is_done() {
                break;
            }
            let status = slot.status();
            if status != ucx::Status::OK {
                return Err(if status == ucx::Status::MESSAGE_TRUNCATED {
                    Error::new(Status::Protocol, "hadroNIO protocol error: peer sent a message larger than its credit allows")
                } else {
                    Error::new(Status::Reset, format!("UCX receive failed: {status}"))
                });
            }
            let len = slot.length();
            if len == 0 {
                // A BODY announcement: its length is known once UCX has seen the BODY's first
                // bytes (its sender sent it right after); the reader's memory takes it if it fits.
                let lock = lock.get_or_insert_with(|| worker.lock());
                let body = self.body_length(lock)?;
                let user = match body.and_then(|body| dst.chunk(body).map(|chunk| (body, chunk))) {
                    Some((body, (addr, n))) if allow_user && n == body && dst.moved() == start => Some(addr),
                    _ => None,
                };
                self.start_large_rx(lock, body, user)?;
                continue;
            }
            let base = self.head * self.slot_len;
            let bytes = &self.memory[base + self.head_offset..base + len];
            // SAFETY: `dst` regions are caller memory valid for this call and distinct from the
            // ring memory.
            let copied = unsafe { dst.fill_from(bytes) };
            self.head_offset += copied;
            if self.head_offset == len {
                let lock = lock.get_or_insert_with(|| worker.lock());
                self.consume_head(lock)?;
            }
        }
        let read = dst.moved() - start;
        stats::add(Counter::BytesReceivedUcx, read as u64);
        if self.rx.should_report() {
            let lock = lock.get_or_insert_with(|| worker.lock());
            self.report_credits(lock)?;
        }
        Ok(read)
    }

    /// Re-posts the head slot (for the message `slots` later) and moves on to the next one.
    fn consume_head(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        if let Some(request) = self.requests[self.head].take() {
            request.free(lock);
        }
        self.post(lock, self.head)?;
        self.head = (self.head + 1) % self.shared.slots.len();
        self.head_offset = 0;
        self.rx.on_consumed();
        Ok(())
    }

    /// Largest BODY this side accepts.
    fn body_limit(&self) -> usize {
        MAX_LARGE_MESSAGE.max(self.slot_len)
    }

    /// The length of the next BODY if UCX has its first bytes already, validated.
    fn body_length(&self, lock: &WorkerLock<'_>) -> Result<Option<usize>> {
        let tag = protocol::make_tag(self.shared.id, protocol::KIND_BODY, self.rx_large_seq);
        let Some(body) = lock.probe_length(tag) else { return Ok(None) };
        let limit = self.body_limit();
        if body == 0 || body > limit {
            return Err(Error::new(
                Status::Protocol,
                format!("hadroNIO protocol error: a BODY of {body} bytes (allowed 1..={limit})"),
            ));
        }
        Ok(Some(body))
    }

    fn body_error(status: ucx::Status, got: usize, expected: Option<usize>, capacity: usize) -> Error {
        if status == ucx::Status::MESSAGE_TRUNCATED {
            return Error::new(Status::Protocol, format!("hadroNIO protocol error: a BODY larger than {capacity} bytes"));
        }
        if status == ucx::Status::OK && got == 0 {
            return Error::new(Status::Protocol, "hadroNIO protocol error: an empty BODY");
        }
        Error::new(
            Status::Reset,
            format!(
                "receiving a large message failed: {status} ({got} of {} bytes)",
                expected.map_or_else(|| String::from("?"), |e| e.to_string())
            ),
        )
    }

    /// Posts the receive of the next BODY: into `user` memory (its length is known and fits), or
    /// into the bounce buffer, sized for the BODY if its length is known and for the largest one
    /// this side accepts otherwise.
    fn start_large_rx(&mut self, lock: &WorkerLock<'_>, expected: Option<usize>, user: Option<usize>) -> Result<()> {
        let status = Box::new(Completion::new(waker(&self.shared), false));
        let capacity = expected.unwrap_or_else(|| self.body_limit());
        let buffer = match user {
            Some(addr) => addr as *mut u8,
            None => {
                if self.bounce.len() < capacity {
                    self.bounce.resize(capacity, 0);
                }
                self.bounce.as_mut_ptr()
            }
        };
        let tag = protocol::make_tag(self.shared.id, protocol::KIND_BODY, self.rx_large_seq);
        // SAFETY: the buffer (caller memory kept alive until the caller saw completion, or the
        // bounce buffer owned by the link) and the boxed completion (and the `Shared` it wakes)
        // stay valid until the receive completes; teardown cancels and waits for it.
        let started = unsafe { lock.tag_recv(buffer, capacity, tag, protocol::FULL_MASK, &status) };
        let request = match started {
            Ok(request) => request,
            Err(e) => return Err(Error::new(Status::Io, format!("posting a UCX receive: {e}"))),
        };
        self.large_rx = Some(LargeRx { expected, capacity, into_user: user.is_some(), offset: 0, status, request: Some(request) });
        Ok(())
    }

    /// Gives up a BODY receive into caller memory (the connection is closing): cancels it and
    /// waits until UCX no longer references that memory, at most `wait`.
    pub fn abandon_user_rx(&mut self, wait: Duration) {
        let Some(large) = &self.large_rx else { return };
        if !large.into_user {
            return;
        }
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        if let Some(request) = &large.request {
            lock.cancel(request);
        }
        // A matched receive completes when the rest of the message arrives or the endpoint
        // fails; a peer that died mid-message does neither.
        let deadline = Instant::now() + wait;
        while !large.status.is_done() {
            if Instant::now() >= deadline {
                warn!("link {}: a receive into the caller's memory did not end in time; leaving it to UCX", self.shared.id);
                let large = self.large_rx.take();
                self.leave_to_ucx(large);
                return;
            }
            lock.progress();
        }
        if let Some(request) = self.large_rx.take().and_then(|l| l.request) {
            request.free(&lock);
        }
    }

    /// Sends the consumed count to the peer in an active message (one at a time).
    fn report_credits(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let (Some(ep), Some(peer)) = (self.ep.as_ref().and_then(|p| p.ep()), self.peer) else {
            self.credit_wanted = true;
            return Ok(());
        };
        if !self.credit.status.is_done() {
            self.credit_wanted = true;
            return Ok(());
        }
        if let Some(request) = self.credit.request.take() {
            request.free(lock);
        }
        self.credit_wanted = false;
        self.credit.header = protocol::encode_credit(peer.id, self.rx.consumed());
        self.credit.status.start();
        let credit = &mut *self.credit;
        // SAFETY: the header and completion live in a box owned by the link until teardown, which
        // completes every send first.
        let started = unsafe { ep.am_send(lock, protocol::AM_CREDIT, &credit.header, &[], &credit.status) };
        match started {
            Ok(Start::Done(())) => credit.status.finish(),
            Ok(Start::Pending(request)) => credit.request = Some(request),
            Err(e) => {
                credit.status.finish();
                return Err(Error::new(Status::Reset, format!("sending credits: {e}")));
            }
        }
        trace!("link {}: reported {} consumed", self.shared.id, self.rx.consumed());
        self.rx.on_reported();
        Ok(())
    }

    // --- sending ------------------------------------------------------------------------------


    /// Whether a write could take at least one byte now.
    pub fn writable(&self) -> bool {
        self.peer.is_some() && (self.staged_bytes < self.send_buffer.max(1) || self.staged.is_empty())
    }

    /// Messages sent or staged: the count the peer must consume before end of stream.
    pub fn messages_committed(&self) -> u64 {
        self.tx.sent() + self.staged.iter().filter(|b| !b.posted).count() as u64
    }

    /// Reports every consumed message now (the peer's stream ended, or we close): a closing
    /// peer waits for the full count before it lets its endpoint go.
    pub fn report_all(&mut self) -> Result<()> {
        if !self.rx.unreported() {
            return Ok(());
        }
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        self.report_credits(&lock)
    }

    /// Whether the peer consumed every message we sent. Only then may our endpoint close: UCX
    /// discards the peer's unfinished receives of our messages when it does.
    pub fn peer_caught_up(&self) -> bool {
        self.peer.is_none() || self.tx.peer_consumed() >= self.tx.sent()
    }

    /// Whether everything written has been handed to UCX and completed.
    pub fn tx_idle(&self) -> bool {
        self.staged.is_empty() && self.large_tx.is_none() && self.credit.status.is_done()
    }

    /// The tag of our next slot message.
    fn tag(&self, peer: Peer) -> u64 {
        protocol::make_tag(peer.id, protocol::KIND_SLOT, self.tx.sent())
    }

    /// Writes from `src`; returns how many bytes were sent or staged (possibly 0). With
    /// `blocking`, a large piece may be sent straight from the caller's memory: the call then
    /// returns with [`Link::user_tx_pending`] set and the caller must wait for it.
    pub fn write(&mut self, src: &mut Cursor<'_>, blocking: bool) -> Result<usize> {
        let Some(peer) = self.peer else { return Ok(0) };
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        if self.tx.available() == 0 || !self.staged.is_empty() {
            // Take credits that arrived meanwhile (their callbacks only touch atomics).
            lock.progress();
        }
        self.flush_locked(&lock)?;
        let start = src.moved();
        let large_min = (2 * peer.slot_len).max(LARGE_MIN);
        while src.remaining() > 0 {
            if self.large_tx.is_some() {
                break;
            }
            let message = src.remaining().min(peer.slot_len);
            let has_unposted = self.staged.back().is_some_and(|b| !b.posted);
            if !has_unposted && self.tx.available() > 0 {
                if blocking && self.staged.is_empty() && peer.max_message >= large_min && src.remaining() >= large_min {
                    if let Some((addr, len)) = src.chunk(peer.max_message) {
                        if len >= large_min && self.send_large(&lock, peer, addr, len)? {
                            src.advance(len);
                            continue;
                        }
                    }
                }
                if let Some((addr, len)) = src.chunk(message) {
                    if len == message && self.send_immediate(&lock, peer, addr, len)? {
                        src.advance(len);
                        continue;
                    }
                }
            }
            if !self.stage(src, peer) {
                break;
            }
            if self.staged.back().is_some_and(|b| b.data.len() == peer.slot_len) {
                self.post_staged(&lock)?;
            }
        }
        self.post_staged(&lock)?;
        if self.tx.available() == 0 && self.staged.back().is_some_and(|b| !b.posted) {
            stats::count(Counter::CreditStalls);
        }
        let written = src.moved() - start;
        stats::add(Counter::BytesSentUcx, written as u64);
        Ok(written)
    }

    /// Sends a BODY announcement (an empty slot message) and the BODY from the caller's memory.
    /// `Ok(false)` if the announcement could not go out at once (nothing sent).
    fn send_large(&mut self, lock: &WorkerLock<'_>, peer: Peer, addr: usize, len: usize) -> Result<bool> {
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(false) };
        let tag = self.tag(peer);
        // SAFETY: immediate-only and empty: UCX completes or does nothing.
        let started = unsafe { ep.tag_send(lock, EMPTY.as_ptr(), 0, tag, true, None) };
        match started {
            Ok(Some(Start::Done(()))) => {}
            Ok(Some(Start::Pending(request))) => {
                lock.complete(&request);
                request.free(lock);
            }
            Ok(None) => return Ok(false),
            Err(e) => return Err(Error::new(Status::Reset, format!("UCX send failed: {e}"))),
        }
        self.tx.on_sent();
        let status = Arc::new(Completion::new(waker(&self.shared), false));
        let tag = protocol::make_tag(peer.id, protocol::KIND_BODY, self.tx_large_seq);
        self.tx_large_seq += 1;
        // SAFETY: the caller's memory stays valid until the send completed: the blocking writer
        // waits for `user_tx_pending` to clear (teardown closes the endpoint, which completes it).
        let started = unsafe { ep.tag_send(lock, addr as *const u8, len, tag, false, Some(&status)) };
        match started {
            Ok(Some(Start::Done(()))) | Ok(None) => {}
            Ok(Some(Start::Pending(request))) => self.large_tx = Some(LargeTx { status, request: Some(request) }),
            Err(e) => return Err(Error::new(Status::Reset, format!("UCX send failed: {e}"))),
        }
        Ok(true)
    }

    /// Whether a BODY is being sent from the caller's memory.
    pub fn user_tx_pending(&self) -> bool {
        self.large_tx.is_some()
    }

    /// A handle to wait for that send.
    pub fn user_tx_waiter(&self) -> Option<TxWaiter> {
        self.large_tx.as_ref().map(|l| TxWaiter(l.status.clone()))
    }

    /// Whether that send completed (then [`Link::finish_user_tx`] releases it).
    pub fn user_tx_done(&self) -> bool {
        self.large_tx.as_ref().map_or(true, |l| l.status.is_done())
    }

    /// Gives up on a BODY send the peer will never take (it is gone): the request and its
    /// status stay allocated in case UCX still completes it.
    pub fn abandon_user_tx(&mut self) {
        if let Some(large) = self.large_tx.take() {
            warn!("link {}: a send from the caller's memory did not end in time; leaving it to UCX", self.shared.id);
            self.leave_to_ucx(large);
        }
    }

    /// Hands `request_state` (a request and the memory it writes or reads) with this link's
    /// `Shared`, which its callback touches, to the worker: UCX may still complete the request at
    /// any time, even after the link is gone (when the endpoint or the worker is closed).
    fn leave_to_ucx<T: Send + 'static>(&self, request_state: T) {
        self.lane.worker.keep_until_destroyed(Box::new((request_state, self.shared.clone())));
    }

    /// Releases a completed BODY send; an error if it failed.
    pub fn finish_user_tx(&mut self) -> Result<()> {
        if !self.user_tx_done() {
            return Ok(());
        }
        let Some(large) = self.large_tx.take() else { return Ok(()) };
        let status = large.status.status();
        if let Some(request) = large.request {
            let worker = self.lane.worker.clone();
            request.free(&worker.lock());
        }
        if status != ucx::Status::OK {
            return Err(Error::new(Status::Reset, format!("sending a large message failed: {status}")));
        }
        Ok(())
    }

    /// Tries to send straight from the caller's memory; `Ok(false)` if UCX could not complete the
    /// send at once.
    fn send_immediate(&mut self, lock: &WorkerLock<'_>, peer: Peer, addr: usize, len: usize) -> Result<bool> {
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(false) };
        let tag = self.tag(peer);
        // SAFETY: with `immediate_only` UCX either completes (and no longer needs the memory) or
        // does nothing; the memory is valid for this call.
        let started = unsafe { ep.tag_send(lock, addr as *const u8, len, tag, true, None) };
        match started {
            Ok(Some(Start::Done(()))) => {
                self.tx.on_sent();
                Ok(true)
            }
            Ok(Some(Start::Pending(request))) => {
                // Not expected with FORCE_IMM_CMPL; the caller's memory must not be referenced
                // after we return, so finish the send here.
                debug!("UCX returned a pending request for an immediate send");
                lock.complete(&request);
                request.free(lock);
                self.tx.on_sent();
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => Err(Error::new(Status::Reset, format!("UCX send failed: {e}"))),
        }
    }

    /// Copies bytes from `src` into staging; `false` if the send buffer is full.
    fn stage(&mut self, src: &mut Cursor<'_>, peer: Peer) -> bool {
        if let Some(tail) = self.staged.back_mut() {
            if !tail.posted && tail.data.len() < peer.slot_len {
                let room = peer.slot_len - tail.data.len();
                let n = room.min(src.remaining());
                let old = tail.data.len();
                tail.data.resize(old + n, 0);
                // SAFETY: the source regions are caller memory valid for this call.
                let copied = unsafe { src.drain_into(&mut tail.data[old..]) };
                tail.data.truncate(old + copied);
                self.staged_bytes += copied;
                return true;
            }
        }
        if !self.staged.is_empty() && self.staged_bytes + peer.slot_len > self.send_buffer {
            return false;
        }
        let owner = waker(&self.shared);
        let mut buf = self.spare.pop().unwrap_or_else(|| {
            Box::new(SendBuf {
                status: Completion::new(owner, false),
                data: Vec::with_capacity(peer.slot_len),
                posted: false,
                request: None,
            })
        });
        buf.data.clear();
        buf.posted = false;
        buf.status.start();
        let n = peer.slot_len.min(src.remaining());
        buf.data.resize(n, 0);
        // SAFETY: the source regions are caller memory valid for this call.
        let copied = unsafe { src.drain_into(&mut buf.data) };
        buf.data.truncate(copied);
        self.staged_bytes += copied;
        self.staged.push_back(buf);
        true
    }

    /// Posts staged buffers while credits last.
    fn post_staged(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let Some(peer) = self.peer else { return Ok(()) };
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(()) };
        let mut index = self.staged.iter().position(|b| !b.posted).unwrap_or(self.staged.len());
        while index < self.staged.len() && self.tx.available() > 0 {
            let tag = self.tag(peer);
            let buf = &mut self.staged[index];
            // SAFETY: the buffer and its status are boxed and stay in `staged` until the send
            // completed (or teardown closed the endpoint, which completes it).
            let started = unsafe { ep.tag_send(lock, buf.data.as_ptr(), buf.data.len(), tag, false, Some(&buf.status)) };
            buf.posted = true;
            match started {
                Ok(Some(Start::Done(()))) | Ok(None) => buf.status.finish(),
                Ok(Some(Start::Pending(request))) => buf.request = Some(request),
                Err(e) => {
                    buf.status.finish();
                    return Err(Error::new(Status::Reset, format!("UCX send failed: {e}")));
                }
            }
            self.tx.on_sent();
            index += 1;
        }
        self.recycle(lock);
        Ok(())
    }

    /// Returns completed staging buffers to the spare list.
    fn recycle(&mut self, lock: &WorkerLock<'_>) {
        let mut i = 0;
        while i < self.staged.len() {
            let buf = &self.staged[i];
            if buf.posted && buf.status.is_done() {
                if let Some(mut buf) = self.staged.remove(i) {
                    if let Some(request) = buf.request.take() {
                        request.free(lock);
                    }
                    self.staged_bytes -= buf.data.len();
                    if self.spare.len() < 2 {
                        self.spare.push(buf);
                    }
                }
            } else {
                i += 1;
            }
        }
    }

    /// Takes credits the peer returned, posts staged data, recycles completed sends and sends a
    /// credit report that had to wait. Called after progress touched this link.
    pub fn flush(&mut self) -> Result<()> {
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        self.flush_locked(&lock)
    }

    fn flush_locked(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let reported = self.shared.peer_consumed.load(Ordering::Acquire);
        if reported > self.tx.peer_consumed() {
            self.tx.on_consumed(reported)?;
        }
        self.post_staged(lock)?;
        if self.credit_wanted {
            self.report_credits(lock)?;
        }
        Ok(())
    }

    /// Releases what UCX references: cancels the posted receives, discards messages that
    /// arrived for this connection but were never matched, and frees completed requests. Returns
    /// false while requests are still in flight (the hub keeps the link until
    /// [`Link::finish_teardown`] succeeds); the shared endpoint stays open for other connections.
    ///
    /// A receive that is already matched cannot be cancelled: it completes when the rest of its
    /// message arrives or the endpoint fails. Waiting for it is bounded so that a dead peer does
    /// not stall the caller.
    pub fn teardown(&mut self) -> bool {
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        for request in self.requests.iter().flatten() {
            lock.cancel(request);
        }
        if let Some(request) = self.large_rx.as_ref().and_then(|l| l.request.as_ref()) {
            lock.cancel(request);
        }
        let deadline = Instant::now() + TEARDOWN_WAIT;
        while self.receives_in_flight() && Instant::now() < deadline {
            lock.progress();
        }
        let mut scratch = Vec::new();
        let drained =
            lock.drain_unexpected(protocol::make_tag(self.shared.id, protocol::KIND_SLOT, 0), protocol::DEST_MASK, &mut scratch);
        if drained > 0 {
            debug!("link {}: discarded {drained} unread messages", self.shared.id);
        }
        drop(lock);
        // Outside the worker's lock: the endpoint map is locked before it elsewhere.
        if let Some(peer) = &self.ep {
            self.lane.endpoints.release(peer, self.shared.id);
        }
        self.finish_teardown()
    }

    /// Whether a cancelled receive has not completed yet.
    fn receives_in_flight(&self) -> bool {
        self.large_rx.as_ref().is_some_and(|l| l.request.is_some() && !l.status.is_done())
            || self.requests.iter().enumerate().any(|(i, r)| r.is_some() && !self.shared.slots[i].is_done())
    }

    /// Frees the receive requests that completed.
    fn free_completed_receives(&mut self, lock: &WorkerLock<'_>) {
        if self.large_rx.as_ref().is_some_and(|l| l.status.is_done()) {
            if let Some(request) = self.large_rx.take().and_then(|l| l.request) {
                request.free(lock);
            }
        }
        for (i, request) in self.requests.iter_mut().enumerate() {
            if request.is_some() && self.shared.slots[i].is_done() {
                if let Some(request) = request.take() {
                    request.free(lock);
                }
            }
        }
    }

    /// Frees sends that completed since; true when none is left (the link may be dropped).
    pub fn finish_teardown(&mut self) -> bool {
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        self.free_completed_receives(&lock);
        if self.large_tx.as_ref().is_some_and(|l| l.status.is_done()) {
            if let Some(request) = self.large_tx.take().and_then(|l| l.request) {
                request.free(&lock);
            }
        }
        self.staged.retain_mut(|buf| {
            if buf.posted && !buf.status.is_done() {
                return true;
            }
            if let Some(request) = buf.request.take() {
                request.free(&lock);
            }
            false
        });
        self.staged_bytes = self.staged.iter().map(|b| b.data.len()).sum();
        if self.credit.status.is_done() {
            if let Some(request) = self.credit.request.take() {
                request.free(&lock);
            }
        }
        let done = self.large_tx.is_none()
            && self.staged.is_empty()
            && self.credit.request.is_none()
            && self.large_rx.is_none()
            && self.requests.iter().all(Option::is_none);
        if done {
            self.ep = None;
        }
        done
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.requests.iter().any(Option::is_some) || self.large_rx.is_some() {
            self.teardown();
        }
        // Normally the hub kept the link until its requests ended; if not, give a live peer a
        // moment. Requests that do not end (a peer that vanished in the middle of a message) keep
        // their memory with the worker: UCX must not write into freed buffers.
        let deadline = Instant::now() + DROP_WAIT;
        while !self.finish_teardown() && !self.lane.is_lost() && Instant::now() < deadline {
            self.lane.worker.lock().progress();
        }
        if !self.finish_teardown() {
            debug!("link {}: requests still in flight at drop (peer gone?); their memory stays with the worker", self.shared.id);
            let credit = std::mem::replace(
                &mut self.credit,
                Box::new(CreditSend {
                    status: Completion::idle(),
                    header: [0; protocol::CREDIT_HEADER_LEN],
                    request: None,
                }),
            );
            let memory = (
                std::mem::take(&mut self.staged),
                self.large_tx.take(),
                self.large_rx.take(),
                std::mem::take(&mut self.requests),
                std::mem::take(&mut self.memory),
                std::mem::take(&mut self.bounce),
                credit,
            );
            self.leave_to_ucx(memory);
        }
    }
}
