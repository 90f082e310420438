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
//!
//! Slots per link: a message lands in the next slot of the ring, so a connection that exchanges
//! small messages touches `slots` different buffers before it uses one again, and a hub with
//! many such connections streams through more memory than a core's cache holds (with the default
//! 32 slots and 1 KiB echoes, 32 KiB per connection: 8 MiB for 256 connections, against 2 MiB of
//! cache per core here). So a hub that already holds [`CROWDED_HUB`] links gives each further one
//! [`CROWDED_SLOTS`] slots, unless `hadronio.slots` was set: its many connections share the
//! bandwidth anyway, and each still keeps several messages in flight.
//!
//! Files: this one holds the link's state, set-up and teardown; `rx.rs` receiving, `tx.rs`
//! sending.

mod rx;
mod tx;

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::debug;

use super::credits::{RxCredits, TxCredits};
use super::error::{Error, Result, Status};
use super::iov::Cursor;
use super::lanes::{Lane, Notice, PeerEndpoint, Touched};
use super::protocol::{self, Addr};
use crate::ucx::{self, Completion, RecvBuffer, Request, SendBuffer, SlotOwner, SlotRing, Wake, WorkerLock};

/// Links a hub holds before further ones get [`CROWDED_SLOTS`] receive slots.
pub const CROWDED_HUB: usize = 16;

/// Receive slots of a link opened on a hub that holds [`CROWDED_HUB`] links already (when
/// `hadronio.slots` is left at its default).
pub const CROWDED_SLOTS: u32 = 8;

/// Receive slots for a new link on a hub holding `links` links, with `configured` slots set
/// (`default`: whether that is the default setting).
pub fn slots_for(configured: u32, default: bool, links: usize) -> u32 {
    if default && links >= CROWDED_HUB {
        configured.min(CROWDED_SLOTS)
    } else {
        configured
    }
}

/// In [`Shared::probes`]: a ping came.
const PINGED: u8 = 1;
/// In [`Shared::probes`]: a pong came.
const PONGED: u8 = 2;

/// The part of a link that completion callbacks see. Only atomics.
pub struct Shared {
    pub id: u32,
    touched_flag: AtomicBool,
    touched: Arc<Touched>,
    /// The receive slots' completions.
    slots: Box<[Completion]>,
    /// Highest consumed count the peer reported in a credit message.
    peer_consumed: AtomicU64,
    /// The token of a probe ping to answer, and of the last pong.
    ping: AtomicU64,
    pong: AtomicU64,
    /// Which of them came since they were last taken ([`PINGED`], [`PONGED`]): one word, so
    /// that taking both is one atomic operation for each message's event.
    probes: AtomicU8,
    /// Whether a thread waits for staged sends to complete (for room in staging): only then
    /// does their completion touch the link. Set and cleared under the connection's lock.
    tx_wanted: AtomicBool,
}

impl Wake for Shared {
    fn wake(&self) {
        self.touch();
    }

    /// A staged send completed. Its buffer is recycled when the link is next used, which for a
    /// busy connection is soon: touching the link for it would cost an event (the connection's
    /// state, its keys) per message where the peer's receive queue is full and sends queue in UCX.
    fn wake_on_demand(&self) {
        // Pairs with the fence in `Parts::writable`: either the waiter sees the send done, or
        // this sees that it waits.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.tx_wanted.load(Ordering::Relaxed) {
            self.touch();
        }
    }
}

impl SlotOwner for Shared {
    fn slots(&self) -> &[Completion] {
        &self.slots
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
        if log::log_enabled!(log::Level::Trace) {
            log::trace!("link {}: {notice:?}", self.id);
        }
        match notice {
            Notice::Credit(consumed) => {
                self.peer_consumed.fetch_max(consumed, Ordering::AcqRel);
            }
            Notice::Ping(token) => {
                self.ping.store(token, Ordering::Relaxed);
                self.probes.fetch_or(PINGED, Ordering::Release);
            }
            Notice::Pong(token) => {
                self.pong.store(token, Ordering::Relaxed);
                self.probes.fetch_or(PONGED, Ordering::Release);
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

/// The credit report: its message, and whether one is due.
struct CreditSend {
    message: SendBuffer,
    /// A report is due that could not go yet (the last one was still in flight, or no endpoint).
    wanted: bool,
}

/// What the peer told us in its ADDR frame.
#[derive(Clone, Copy, Debug)]
struct Peer {
    id: u32,
    slot_len: usize,
    max_message: usize,
}

/// Smallest write that goes as a BODY straight from the caller's memory (and at least two slots).
/// A BODY waits for the reader (UCX's rendezvous); smaller writes go in slot messages, which UCX
/// copies into the peer's ring at once, so that both directions of a stream flow at the same
/// time. A slot message without a credit is copied into staging first and the writer goes on, as
/// with the kernel's send buffer; a blocking writer with whole slots left waits for the credit
/// instead, up to [`CREDIT_WAIT`] (one copy fewer of every byte of a stream).
const LARGE_MIN: usize = 256 * 1024;

/// How long a blocking writer with whole slots left waits for a credit before it copies them into
/// staging after all: a peer that keeps reading returns credits within microseconds, one that
/// does not read gets the same buffering as before the wait.
const CREDIT_WAIT: Duration = Duration::from_millis(5);

/// Largest BODY message this side accepts (announced in ADDR).
pub const MAX_LARGE_MESSAGE: usize = 1 << 20;

/// A BODY being received (by [`Receiving::body`]): into the caller's memory (blocking reads) or
/// into the body buffer.
struct LargeRx {
    /// Its length, if UCX knew it when the receive was posted.
    expected: Option<usize>,
    /// Size of the receive buffer.
    capacity: usize,
    into_user: bool,
    offset: usize,
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

/// A connection's UCX half: its parts, and the worker whose lock the calls that move messages
/// take while they change them (a field of its own, so that the lock and the parts are borrowed
/// side by side). Everything else is asked of the parts ([`Parts`], through `Deref`).
pub struct Link {
    worker: Arc<ucx::Worker>,
    parts: Parts,
}

impl Deref for Link {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.parts
    }
}

impl DerefMut for Link {
    fn deref_mut(&mut self) -> &mut Parts {
        &mut self.parts
    }
}

impl Link {
    /// Copies received bytes into `dst` (see [`Parts::read_with`]).
    pub fn read(&mut self, dst: &mut Cursor<'_>, allow_user: bool) -> Result<usize> {
        self.parts.read_with(&self.worker, dst, allow_user)
    }

    /// Writes from `src` (see [`Parts::write_locked`]).
    pub fn write(&mut self, src: &mut Cursor<'_>, blocking: bool) -> Result<usize> {
        let lock = self.worker.lock();
        self.parts.write_locked(&lock, src, blocking)
    }

    /// Takes credits the peer returned, posts staged data, recycles completed sends and sends a
    /// credit report that had to wait. Called after progress touched this link.
    pub fn flush(&mut self) -> Result<()> {
        let lock = self.worker.lock();
        self.parts.flush_locked(&lock)
    }

    /// Reports every consumed message now (the peer's stream ended, or we close): a closing
    /// peer waits for the full count before it lets its endpoint go.
    pub fn report_all(&mut self) -> Result<()> {
        if !self.parts.rx.credits.unreported() {
            return Ok(());
        }
        let lock = self.worker.lock();
        self.parts.report_credits(&lock)
    }
}

/// What a link holds: the peer, the receiving and the sending half, the credit report.
pub struct Parts {
    shared: Arc<Shared>,
    lane: Arc<Lane>,
    slot_len: usize,
    ep: Option<Arc<PeerEndpoint>>,
    peer: Option<Peer>,
    rx: Receiving,
    tx: Sending,
    credit: CreditSend,
}

/// The receiving half: the ring of posted slots and where the reader is in it, and the BODY
/// being received.
struct Receiving {
    ring: SlotRing,
    head: usize,
    head_offset: usize,
    /// Slot messages consumed by the application, and what the peer was told.
    credits: RxCredits,
    /// Sequence number of the slot message the next posted receive is for.
    posted: u64,
    large: Option<LargeRx>,
    large_seq: u64,
    /// Where BODY messages are received (their memory, or the record of a receive into the
    /// caller's memory).
    body: RecvBuffer,
}

/// The sending half: credits, staged messages and the BODY being sent.
struct Sending {
    /// Our messages to the peer: sent and consumed by it.
    credits: TxCredits,
    /// Bytes copied from the application, waiting for credits or for UCX; or sends from the
    /// application's memory that UCX had to queue (see [`Parts::send_direct`]).
    staged: VecDeque<SendBuffer>,
    staged_bytes: usize,
    send_buffer: usize,
    /// Since when a blocking write waits for the peer's credits rather than copy whole slots
    /// into staging.
    credit_wait: Option<Instant>,
    /// Whether slot messages go from the caller's memory through a [`ucx::Source`] (over shared
    /// memory; see [`Parts::send_direct`]); known once the endpoint is.
    direct: Option<bool>,
    spare: Vec<SendBuffer>,
    large: Option<LargeTx>,
    large_seq: u64,
}

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
                pong: AtomicU64::new(0),
                probes: AtomicU8::new(0),
                tx_wanted: AtomicBool::new(false),
            }
        });
        let worker = lane.worker.clone();
        let credit = CreditSend { message: SendBuffer::new(&worker, shared.clone(), protocol::CREDIT_HEADER_LEN, false), wanted: false };
        let ring = SlotRing::new(&worker, shared.clone(), slot_len).map_err(|e| Error::io("receive slots", &e))?;
        let body = RecvBuffer::new(&worker, shared.clone());
        let mut link = Parts {
            shared,
            lane,
            slot_len,
            ep: None,
            peer: None,
            rx: Receiving {
                ring,
                head: 0,
                head_offset: 0,
                credits: RxCredits::new(slots),
                posted: 0,
                large: None,
                large_seq: 0,
                body,
            },
            tx: Sending {
                credits: TxCredits::new(0),
                staged: VecDeque::new(),
                staged_bytes: 0,
                send_buffer: send_buffer as usize,
                credit_wait: None,
                direct: None,
                spare: Vec::new(),
                large: None,
                large_seq: 0,
            },
            credit,
        };
        {
            let lock = worker.lock();
            for slot in 0..count {
                link.post(&lock, slot)?;
            }
        }
        Ok(Link { worker, parts: link })
    }
}

impl Parts {
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The lane (worker) this link receives on.
    pub fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }

    /// Receive slots posted (the credits the peer has).
    pub fn slot_count(&self) -> u32 {
        self.shared.slots.len() as u32
    }

    /// What the peer needs to send to us (the ADDR frame).
    pub fn local_addr(&self) -> Addr {
        Addr {
            tag_id: self.shared.id,
            slots: self.slot_count(),
            slot_len: self.slot_len as u32,
            max_message: MAX_LARGE_MESSAGE.max(self.slot_len) as u32,
            worker_address: self.lane.worker.address().to_vec(),
        }
    }

    /// Posts `slot` for the next slot message in sequence.
    fn post(&mut self, lock: &WorkerLock<'_>, slot: usize) -> Result<()> {
        let tag = protocol::make_tag(self.shared.id, protocol::KIND_SLOT, self.rx.posted);
        self.rx.posted += 1;
        self.rx.ring.post(lock, slot, tag).map_err(|e| Error::new(Status::Io, format!("posting a UCX receive: {e}")))
    }

    /// Sends a probe message (ping or pong) over the endpoint.
    pub fn send_probe(&self, kind: u8, token: u64) -> Result<()> {
        let (Some(ep), Some(peer)) = (self.ep.as_ref().and_then(|p| p.ep()), self.peer) else {
            return Err(Error::new(Status::Internal, "a probe without an endpoint"));
        };
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        let header = protocol::encode_probe(peer.id, kind, token);
        ep.am_send_owned(&lock, protocol::AM_PROBE, &header, &protocol::PROBE_PADDING)
            .map_err(|e| Error::new(Status::Reset, format!("sending a UCX probe: {e}")))
    }

    /// The tokens of a ping and of a pong that arrived since the last call.
    pub fn take_probes(&self) -> (Option<u64>, Option<u64>) {
        let probes = self.shared.probes.swap(0, Ordering::AcqRel);
        let ping = (probes & PINGED != 0).then(|| self.shared.ping.load(Ordering::Relaxed));
        let pong = (probes & PONGED != 0).then(|| self.shared.pong.load(Ordering::Relaxed));
        (ping, pong)
    }

    /// Creates the endpoint to the peer described by `addr`.
    pub fn connect(&mut self, addr: &Addr) -> std::result::Result<(), ucx::UcxError> {
        let ep = self.lane.endpoints.get(&self.lane.worker, &self.shared.touched, &addr.worker_address, self.shared.id)?;
        self.ep = Some(ep);
        self.peer = Some(Peer { id: addr.tag_id, slot_len: addr.slot_len as usize, max_message: addr.max_message as usize });
        self.tx.credits = TxCredits::new(addr.slots);
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

    /// Whether UCX chose a shared-memory transport for the endpoint.
    pub fn over_shared_memory(&self) -> bool {
        self.transports().iter().any(|t| t.starts_with("posix/") || t.starts_with("sysv/") || t.starts_with("xpmem/"))
    }

    /// " over shared memory (posix/memory, ...)" or " over the network (tcp/eth0, ...)": which
    /// transports UCX chose for the endpoint, in words for a log line.
    pub fn path_words(&self) -> String {
        let transports = self.transports();
        let words = if self.over_shared_memory() {
            "shared memory"
        } else if transports.is_empty() {
            "UCX"
        } else {
            "the network"
        };
        format!(" over {words} ({})", transports.join(", "))
    }

    /// Whether the peer runs on this host where shared memory does not reach it.
    pub fn isolated(&self) -> bool {
        self.lane.isolated()
    }

    /// Whether UCX reaches the peer only through its TCP transport.
    pub fn tcp_only(&self) -> bool {
        let transports = self.transports();
        !transports.is_empty() && transports.iter().all(|t| t.starts_with("tcp/"))
    }

    /// Whether UCX reaches the peer only through software RDMA devices (Soft-RoCE, soft-iWARP;
    /// see [`ucx::is_software_rdma`]), besides its TCP transport.
    pub fn software_rdma_only(&self) -> bool {
        let transports = self.transports();
        let device = |t: &str| t.split_once('/').map(|(_, rest)| rest.split(':').next().unwrap_or(rest).to_string());
        let software = |t: &String| !t.starts_with("tcp/") && device(t).is_some_and(|d| ucx::is_software_rdma(&d));
        transports.iter().any(software) && transports.iter().all(|t| t.starts_with("tcp/") || software(t))
    }

    /// The transports of the endpoint's lanes, each once (none before the endpoint exists).
    fn transports(&self) -> &[String] {
        self.ep.as_ref().map_or(&[], |p| p.transports())
    }

    pub fn endpoint_error(&self) -> Option<i32> {
        self.ep.as_ref().and_then(|p| p.failure())
    }

    /// Releases what UCX references: cancels the posted receives, discards messages that
    /// arrived for this connection but were never matched, and frees completed requests. Returns
    /// false while requests are still in flight (the hub keeps the link until
    /// [`Parts::finish_teardown`] succeeds); the shared endpoint stays open for other connections.
    ///
    /// A receive that is already matched cannot be cancelled: it completes when the rest of its
    /// message arrives or the endpoint fails. Waiting for it is bounded so that a dead peer does
    /// not stall the caller.
    pub fn teardown(&mut self) -> bool {
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        self.rx.ring.cancel_all(&lock);
        self.rx.body.cancel(&lock);
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
        self.rx.body.in_flight() || self.rx.ring.in_flight()
    }

    /// Frees sends that completed since; true when none is left (the link may be dropped).
    pub fn finish_teardown(&mut self) -> bool {
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        let slots_free = self.rx.ring.release(&lock);
        if self.rx.body.release(&lock) {
            self.rx.large = None;
        }
        if self.tx.large.as_ref().is_some_and(|l| l.status.is_done()) {
            if let Some(request) = self.tx.large.take().and_then(|l| l.request) {
                request.free(&lock);
            }
        }
        self.tx.staged.retain_mut(|buf| !buf.release(&lock));
        self.tx.staged_bytes = self.tx.staged.iter().map(|b| b.bytes().len()).sum();
        let credit_free = self.credit.message.release(&lock);
        let done = self.tx.large.is_none() && self.tx.staged.is_empty() && credit_free && self.rx.large.is_none() && slots_free;
        if done {
            self.ep = None;
        }
        done
    }
}

impl Drop for Parts {
    fn drop(&mut self) {
        if self.rx.ring.has_requests() || self.rx.large.is_some() {
            self.teardown();
        }
        // Normally the hub kept the link until its requests ended; if not, give a live peer a
        // moment. Requests that do not end (a peer that vanished in the middle of a message) keep
        // their memory with the worker: UCX must not write into freed buffers. The buffers and
        // the slots go there by themselves as they drop.
        let deadline = Instant::now() + DROP_WAIT;
        while !self.finish_teardown() && !self.lane.is_lost() && Instant::now() < deadline {
            self.lane.worker.lock().progress();
        }
        if !self.finish_teardown() {
            debug!("link {}: requests still in flight at drop (peer gone?); their memory stays with the worker", self.shared.id);
            let large = self.tx.large.take();
            self.leave_to_ucx(large);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{slots_for, CROWDED_HUB, CROWDED_SLOTS};

    #[test]
    fn only_a_crowded_hub_with_the_default_setting_gives_fewer_slots() {
        assert_eq!(slots_for(32, true, CROWDED_HUB - 1), 32);
        assert_eq!(slots_for(32, true, CROWDED_HUB), CROWDED_SLOTS);
        assert_eq!(slots_for(4, true, CROWDED_HUB * 10), 4);
        // A setting someone chose is kept however many links the hub holds.
        assert_eq!(slots_for(128, false, CROWDED_HUB * 10), 128);
    }
}
