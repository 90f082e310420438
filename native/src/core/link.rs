//! The UCX half of a connection: posted receive slots, credits, staged sends.
//!
//! Receiving: `slots` buffers of `slot_len` bytes are posted with the connection's tag; the peer
//! may have at most that many unconsumed messages in flight (its credits). UCX matches messages
//! to posted receives in posting order but may complete them in any order, so every slot has its
//! own completion flag and the reader consumes slots strictly in ring order. A consumed slot is
//! posted again at once and counted; the count returns to the peer piggybacked on our own data
//! messages or, when we have nothing to say, in a small active message.
//!
//! Sending: a message carries at most the peer's slot length. A write is sent straight from the
//! caller's memory when UCX can complete it before returning; otherwise, or when credits are
//! exhausted, the bytes are copied into staging buffers (small writes coalesce there) that go out
//! as credits return. Staged bytes are bounded by the send buffer setting.

use std::collections::VecDeque;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use log::{debug, trace};
use parking_lot::Mutex;

use super::credits::{RxCredits, TxCredits};
use super::error::{Error, Result, Status};
use super::iov::Cursor;
use super::protocol::{self, Addr};
use crate::ucx::{self, Endpoint, Request, Start, Worker, WorkerLock};

/// Connection ids whose UCX state changed during progress, collected by callbacks and handled by
/// the progressing thread afterwards (outside the callbacks).
#[derive(Default)]
pub struct Touched {
    ids: Mutex<Vec<u32>>,
}

impl Touched {
    pub fn push(&self, id: u32) {
        self.ids.lock().push(id);
    }

    pub fn take(&self) -> Vec<u32> {
        std::mem::take(&mut *self.ids.lock())
    }
}

/// The part of a link that completion callbacks see. Only atomics.
pub struct Shared {
    pub id: u32,
    touched_flag: AtomicBool,
    touched: Arc<Touched>,
    slots: Box<[SlotStatus]>,
    /// Highest consumed count the peer reported in a credit message.
    pub peer_consumed: AtomicU64,
    /// Non-zero: the UCX status an endpoint error was reported with.
    pub ep_error: AtomicI32,
}

impl Shared {
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

/// Completion state of one receive slot, written by [`recv_done`].
struct SlotStatus {
    owner: *const Shared,
    done: AtomicBool,
    status: AtomicI32,
    tag: AtomicU64,
    len: AtomicUsize,
}

// SAFETY: `owner` points to the `Shared` that contains this slot; it is only dereferenced while
// that `Shared` is alive (callbacks run before the link is torn down).
unsafe impl Send for SlotStatus {}
// SAFETY: see `Send`; all other fields are atomics.
unsafe impl Sync for SlotStatus {}

impl SlotStatus {
    fn complete(&self, status: i8, tag: u64, len: usize) {
        self.status.store(status as i32, Ordering::Relaxed);
        self.tag.store(tag, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        self.done.store(true, Ordering::Release);
    }
}

/// Completion state of a send, written by [`send_done`].
struct SendStatus {
    owner: *const Shared,
    done: AtomicBool,
    status: AtomicI32,
}

// SAFETY: as for `SlotStatus`.
unsafe impl Send for SendStatus {}
// SAFETY: as for `SlotStatus`.
unsafe impl Sync for SendStatus {}

unsafe extern "C" fn recv_done(
    _request: *mut c_void,
    status: i8,
    info: *const ucx1_sys::ucp_tag_recv_info_t,
    user_data: *mut c_void,
) {
    // SAFETY: `user_data` is the `SlotStatus` the receive was posted with; it lives until the
    // receive completed (teardown waits for this callback).
    let slot = unsafe { &*(user_data as *const SlotStatus) };
    // SAFETY: UCX passes a valid info pointer for completed receives (null-checked anyway).
    let (tag, len) = match unsafe { info.as_ref() } {
        Some(info) => (info.sender_tag, info.length as usize),
        None => (0, 0),
    };
    slot.complete(status, tag, len);
    // SAFETY: the owning `Shared` outlives every pending receive of its slots.
    unsafe { &*slot.owner }.touch();
}

unsafe extern "C" fn ignore_send(_request: *mut c_void, _status: i8, _user_data: *mut c_void) {}

unsafe extern "C" fn send_done(_request: *mut c_void, status: i8, user_data: *mut c_void) {
    // SAFETY: `user_data` is the `SendStatus` the send was started with; it lives until this
    // callback ran (teardown closes the endpoint, which completes every send, before freeing).
    let send = unsafe { &*(user_data as *const SendStatus) };
    send.status.store(status as i32, Ordering::Relaxed);
    send.done.store(true, Ordering::Release);
    // SAFETY: the owning `Shared` outlives every pending send.
    unsafe { &*send.owner }.touch();
}

/// Endpoint error handler: records the failure for the connection to report.
pub unsafe extern "C" fn endpoint_failed(arg: *mut c_void, _ep: ucx1_sys::ucp_ep_h, status: i8) {
    // SAFETY: `arg` is the link's `Shared`, which outlives its endpoint.
    let shared = unsafe { &*(arg as *const Shared) };
    let code = if status == 0 { -1 } else { status as i32 };
    shared.ep_error.store(code, Ordering::Release);
    shared.touch();
}

/// A staging buffer: bytes copied from the application, waiting for credits or for UCX.
struct SendBuf {
    status: SendStatus,
    data: Vec<u8>,
    posted: bool,
    request: Option<Request>,
}

/// A credit message in flight (its header must stay valid until it completes).
struct CreditSend {
    status: SendStatus,
    header: [u8; protocol::CREDIT_HEADER_LEN],
    request: Option<Request>,
}

/// What the peer told us in its ADDR frame.
#[derive(Clone, Copy, Debug)]
struct Peer {
    id: u32,
    slot_len: usize,
}

pub struct Link {
    shared: Arc<Shared>,
    worker: Arc<Worker>,
    slot_len: usize,
    memory: Box<[u8]>,
    requests: Vec<Option<Request>>,
    head: usize,
    head_offset: usize,
    /// Slot messages consumed by the application, and what the peer was told.
    rx: RxCredits,
    ep: Option<Endpoint>,
    peer: Option<Peer>,
    /// Our messages to the peer: sent and consumed by it.
    tx: TxCredits,
    staged: VecDeque<Box<SendBuf>>,
    staged_bytes: usize,
    send_buffer: usize,
    spare: Vec<Box<SendBuf>>,
    credit: Box<CreditSend>,
    credit_wanted: bool,
}

impl Link {
    /// Allocates the receive slots for connection `id` on `worker` and posts them all.
    pub fn new(worker: Arc<Worker>, id: u32, touched: Arc<Touched>, slots: u32, slot_len: u32, send_buffer: u32) -> Result<Link> {
        let slot_len = slot_len as usize;
        let count = slots as usize;
        let shared = Arc::new_cyclic(|weak: &std::sync::Weak<Shared>| {
            let owner = weak.as_ptr();
            Shared {
                id,
                touched_flag: AtomicBool::new(false),
                touched,
                slots: (0..count)
                    .map(|_| SlotStatus {
                        owner,
                        done: AtomicBool::new(false),
                        status: AtomicI32::new(0),
                        tag: AtomicU64::new(0),
                        len: AtomicUsize::new(0),
                    })
                    .collect(),
                peer_consumed: AtomicU64::new(0),
                ep_error: AtomicI32::new(0),
            }
        });
        let credit = Box::new(CreditSend {
            status: SendStatus { owner: Arc::as_ptr(&shared), done: AtomicBool::new(true), status: AtomicI32::new(0) },
            header: [0; protocol::CREDIT_HEADER_LEN],
            request: None,
        });
        let mut link = Link {
            shared,
            worker,
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
        };
        let worker = link.worker.clone();
        let lock = worker.lock();
        for slot in 0..count {
            link.post(&lock, slot)?;
        }
        Ok(link)
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// What the peer needs to send to us (the ADDR frame).
    pub fn local_addr(&self) -> Addr {
        Addr {
            tag_id: self.shared.id,
            slots: self.shared.slots.len() as u32,
            slot_len: self.slot_len as u32,
            max_message: self.slot_len as u32,
            worker_address: self.worker.address().to_vec(),
        }
    }

    fn post(&mut self, lock: &WorkerLock<'_>, slot: usize) -> Result<()> {
        let status = &self.shared.slots[slot];
        status.done.store(false, Ordering::Relaxed);
        let buffer = self.memory[slot * self.slot_len..].as_mut_ptr();
        // SAFETY: the slot's memory and status live until the link is torn down, which cancels
        // and waits for every pending receive first.
        let started = unsafe {
            lock.tag_recv(
                buffer,
                self.slot_len,
                protocol::slot_tag(self.shared.id),
                protocol::SLOT_MASK,
                recv_done,
                status as *const SlotStatus as *mut c_void,
            )
        };
        match started {
            Ok(Start::Done(info)) => status.complete(0, info.tag, info.length),
            Ok(Start::Pending(request)) => self.requests[slot] = Some(request),
            Err(e) => return Err(Error::new(Status::Io, format!("posting a UCX receive: {e}"))),
        }
        Ok(())
    }

    /// Creates the endpoint to the peer described by `addr`.
    pub fn connect(&mut self, addr: &Addr) -> std::result::Result<(), ucx::UcxError> {
        // SAFETY: the error handler's argument is our `Shared`, which outlives the endpoint (the
        // endpoint is dropped in `teardown` or with the link, before `shared`).
        let ep = unsafe {
            Endpoint::connect(&self.worker, &addr.worker_address, endpoint_failed, Arc::as_ptr(&self.shared) as *mut c_void)
        }?;
        self.ep = Some(ep);
        self.peer = Some(Peer { id: addr.tag_id, slot_len: addr.slot_len as usize });
        self.tx = TxCredits::new(addr.slots);
        Ok(())
    }

    pub fn has_endpoint(&self) -> bool {
        self.ep.is_some()
    }

    /// The transports UCX chose for the endpoint.
    pub fn describe(&self) -> String {
        match &self.ep {
            Some(ep) => ep.describe(),
            None => String::from("(no endpoint)"),
        }
    }

    pub fn endpoint_error(&self) -> Option<i32> {
        match self.shared.ep_error.load(Ordering::Acquire) {
            0 => None,
            code => Some(code),
        }
    }

    // --- receiving ----------------------------------------------------------------------------

    /// Whether the next slot in order holds a message.
    pub fn readable(&self) -> bool {
        self.shared.slots[self.head].done.load(Ordering::Acquire)
    }

    /// Slot messages consumed so far.
    pub fn consumed(&self) -> u64 {
        self.rx.consumed()
    }

    /// Copies received bytes into `dst`, consuming and re-posting slots; returns the byte count.
    pub fn read(&mut self, dst: &mut Cursor<'_>) -> Result<usize> {
        let start = dst.moved();
        let worker = self.worker.clone();
        let mut lock = None;
        while dst.remaining() > 0 {
            let slot = &self.shared.slots[self.head];
            if !slot.done.load(Ordering::Acquire) {
                break;
            }
            let status = slot.status.load(Ordering::Relaxed);
            if status != 0 {
                return Err(if status == ucx::Status::MESSAGE_TRUNCATED.0 as i32 {
                    Error::new(Status::Protocol, "hadroNIO protocol error: peer sent a message larger than its credit allows")
                } else {
                    Error::new(Status::Reset, format!("UCX receive failed: {}", ucx::Status(status as i8)))
                });
            }
            let tag = slot.tag.load(Ordering::Relaxed);
            let len = slot.len.load(Ordering::Relaxed);
            if self.head_offset == 0 {
                self.on_message_header(tag)?;
            }
            let base = self.head * self.slot_len;
            let bytes = &self.memory[base + self.head_offset..base + len];
            // SAFETY: `dst` regions are caller memory valid for this call and distinct from the
            // ring memory.
            let copied = unsafe { dst.fill_from(bytes) };
            self.head_offset += copied;
            if self.head_offset == len {
                let lock = lock.get_or_insert_with(|| worker.lock());
                if let Some(request) = self.requests[self.head].take() {
                    request.free(lock);
                }
                self.post(lock, self.head)?;
                self.head = (self.head + 1) % self.shared.slots.len();
                self.head_offset = 0;
                self.rx.on_consumed();
            }
        }
        let read = dst.moved() - start;
        if self.rx.should_report(read > 0 && !self.readable()) {
            let lock = lock.get_or_insert_with(|| worker.lock());
            self.report_credits(lock)?;
        }
        Ok(read)
    }

    /// Checks the tag of a message at the head of the ring and takes its piggybacked credits.
    fn on_message_header(&mut self, tag: u64) -> Result<()> {
        let (dest, kind, low) = protocol::split_tag(tag);
        if dest != self.shared.id || kind != protocol::KIND_DATA {
            return Err(Error::new(
                Status::Protocol,
                format!("hadroNIO protocol error: unexpected message kind {kind} for connection {dest}"),
            ));
        }
        let consumed = protocol::unwrap_counter(self.tx.peer_consumed(), low);
        self.tx.on_consumed(consumed)
    }

    /// Sends the consumed count to the peer in an active message (one at a time).
    fn report_credits(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let (Some(ep), Some(peer)) = (&self.ep, self.peer) else {
            self.credit_wanted = true;
            return Ok(());
        };
        if !self.credit.status.done.load(Ordering::Acquire) {
            self.credit_wanted = true;
            return Ok(());
        }
        if let Some(request) = self.credit.request.take() {
            request.free(lock);
        }
        self.credit_wanted = false;
        self.credit.header = protocol::encode_credit(peer.id, self.rx.consumed());
        self.credit.status.done.store(false, Ordering::Relaxed);
        let credit = &mut *self.credit;
        // SAFETY: the header and status live in a box owned by the link until teardown, which
        // completes every send first.
        let started = unsafe {
            ep.am_send(lock, protocol::AM_CREDIT, &credit.header, send_done, &credit.status as *const SendStatus as *mut c_void)
        };
        match started {
            Ok(Start::Done(())) => credit.status.done.store(true, Ordering::Release),
            Ok(Start::Pending(request)) => credit.request = Some(request),
            Err(e) => {
                credit.status.done.store(true, Ordering::Release);
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

    /// Whether everything written has been handed to UCX and completed.
    pub fn tx_idle(&self) -> bool {
        self.staged.is_empty() && self.credit.status.done.load(Ordering::Acquire)
    }

    fn tag(&self, peer: Peer) -> u64 {
        protocol::make_tag(peer.id, protocol::KIND_DATA, self.rx.consumed())
    }

    /// Writes from `src`; returns how many bytes were sent or staged (possibly 0).
    pub fn write(&mut self, src: &mut Cursor<'_>) -> Result<usize> {
        let Some(peer) = self.peer else { return Ok(0) };
        let worker = self.worker.clone();
        let lock = worker.lock();
        self.flush_locked(&lock)?;
        let start = src.moved();
        while src.remaining() > 0 {
            let message = src.remaining().min(peer.slot_len);
            let has_unposted = self.staged.back().is_some_and(|b| !b.posted);
            if !has_unposted && self.tx.available() > 0 {
                if let Some((addr, len)) = src.chunk(message) {
                    if len == message {
                        if self.send_immediate(&lock, peer, addr, len)? {
                            src.advance(len);
                            continue;
                        }
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
        Ok(src.moved() - start)
    }

    /// Tries to send straight from the caller's memory; `Ok(false)` if UCX could not complete the
    /// send at once.
    fn send_immediate(&mut self, lock: &WorkerLock<'_>, peer: Peer, addr: usize, len: usize) -> Result<bool> {
        let Some(ep) = &self.ep else { return Ok(false) };
        let tag = self.tag(peer);
        // SAFETY: with `immediate_only` UCX either completes (and no longer needs the memory) or
        // does nothing; the memory is valid for this call.
        let started = unsafe { ep.tag_send(lock, addr as *const u8, len, tag, true, ignore_send, std::ptr::null_mut()) };
        match started {
            Ok(Some(Start::Done(()))) => {
                self.tx.on_sent();
                self.rx.on_reported();
                Ok(true)
            }
            Ok(Some(Start::Pending(request))) => {
                // Not expected with FORCE_IMM_CMPL; the caller's memory must not be referenced
                // after we return, so finish the send here.
                debug!("UCX returned a pending request for an immediate send");
                lock.complete(&request);
                request.free(lock);
                self.tx.on_sent();
                self.rx.on_reported();
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
        let owner = Arc::as_ptr(&self.shared);
        let mut buf = self.spare.pop().unwrap_or_else(|| {
            Box::new(SendBuf {
                status: SendStatus { owner, done: AtomicBool::new(false), status: AtomicI32::new(0) },
                data: Vec::with_capacity(peer.slot_len),
                posted: false,
                request: None,
            })
        });
        buf.data.clear();
        buf.posted = false;
        buf.status.done.store(false, Ordering::Relaxed);
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
        let Some(ep) = &self.ep else { return Ok(()) };
        let mut index = self.staged.iter().position(|b| !b.posted).unwrap_or(self.staged.len());
        while index < self.staged.len() && self.tx.available() > 0 {
            let tag = protocol::make_tag(peer.id, protocol::KIND_DATA, self.rx.consumed());
            let buf = &mut self.staged[index];
            // SAFETY: the buffer and its status are boxed and stay in `staged` until the send
            // completed (or teardown closed the endpoint, which completes it).
            let started = unsafe {
                ep.tag_send(lock, buf.data.as_ptr(), buf.data.len(), tag, false, send_done, &buf.status as *const SendStatus as *mut c_void)
            };
            buf.posted = true;
            match started {
                Ok(Some(Start::Done(()))) | Ok(None) => buf.status.done.store(true, Ordering::Release),
                Ok(Some(Start::Pending(request))) => buf.request = Some(request),
                Err(e) => {
                    buf.status.done.store(true, Ordering::Release);
                    return Err(Error::new(Status::Reset, format!("UCX send failed: {e}")));
                }
            }
            self.tx.on_sent();
            self.rx.on_reported();
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
            if buf.posted && buf.status.done.load(Ordering::Acquire) {
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
        let worker = self.worker.clone();
        let lock = worker.lock();
        self.flush_locked(&lock)
    }

    fn flush_locked(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let reported = self.shared.peer_consumed.load(Ordering::Acquire);
        if reported > self.tx.peer_consumed() {
            self.tx.on_consumed(reported)?;
        }
        self.post_staged(lock)?;
        if self.credit_wanted || (self.rx.unreported() && !self.readable()) {
            self.report_credits(lock)?;
        }
        Ok(())
    }

    /// Releases everything UCX still references: cancels the posted receives, closes the
    /// endpoint (which completes pending sends) and discards messages that arrived for this
    /// connection but were never matched.
    pub fn teardown(&mut self) {
        let worker = self.worker.clone();
        let lock = worker.lock();
        for request in self.requests.iter().flatten() {
            lock.cancel(request);
        }
        let mut spins = 0u64;
        while self.requests.iter().enumerate().any(|(i, r)| r.is_some() && !self.shared.slots[i].done.load(Ordering::Acquire)) {
            lock.progress();
            spins += 1;
            if spins % 1_000_000 == 0 {
                debug!("link {}: still waiting for cancelled receives", self.shared.id);
            }
        }
        for request in self.requests.iter_mut().filter_map(Option::take) {
            request.free(&lock);
        }
        self.ep = None;
        for mut buf in self.staged.drain(..) {
            if let Some(request) = buf.request.take() {
                request.free(&lock);
            }
        }
        if let Some(request) = self.credit.request.take() {
            request.free(&lock);
        }
        let mut scratch = Vec::new();
        let drained = lock.drain_unexpected(protocol::slot_tag(self.shared.id), 0xFFFF_FFFF_0000_0000, &mut scratch);
        if drained > 0 {
            debug!("link {}: discarded {drained} unread messages", self.shared.id);
        }
        self.staged_bytes = 0;
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.requests.iter().any(Option::is_some) || self.ep.is_some() || !self.staged.is_empty() {
            self.teardown();
        }
    }
}

/// Active-message handler of credit messages: `arg` is the hub's registry lookup.
pub type CreditSink = dyn Fn(u32, u64) + Send + Sync;

/// # Safety
/// Installed by the hub with `arg` pointing to a `Box<CreditSink>` that outlives the worker.
pub unsafe extern "C" fn credit_received(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    _data: *mut c_void,
    _length: usize,
    _param: *const ucx1_sys::ucp_am_recv_param_t,
) -> i8 {
    if header.is_null() {
        return 0;
    }
    // SAFETY: UCX passes `header_length` readable bytes at `header`.
    let bytes = unsafe { std::slice::from_raw_parts(header as *const u8, header_length) };
    match protocol::decode_credit(bytes) {
        Ok((id, consumed)) => {
            // SAFETY: the hub installed a boxed sink that outlives the worker.
            let sink = unsafe { &*(arg as *const Box<CreditSink>) };
            sink(id, consumed);
        }
        Err(e) => debug!("ignoring malformed credit message: {e}"),
    }
    0
}
