//! Memory that UCX reads or writes after the call that started an operation returned, owned
//! together with the operation's completion record and request: a send buffer, a receive buffer
//! and a ring of receive slots.
//!
//! While an operation may still run, nothing else writes the memory of a send or reads that of a
//! receive; one of these dropped then goes to its worker's keeping, with its completion records,
//! so that UCX never touches freed memory (a peer that vanished in the middle of a message
//! leaves its receive matched for good). Their owners thus start operations without `unsafe`,
//! except on memory they lend (a Java caller's buffer), which only they can vouch for.

use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::Arc;

use super::{Completion, Endpoint, Request, Result, SlotMemory, Source, Start, Status, Wake, Worker, WorkerLock};

/// Match every bit of a receive's tag.
const EXACT: u64 = u64::MAX;

/// One operation's record: its completion, its request until freed, and whether it was started.
struct Record {
    done: Completion,
    request: Option<Request>,
    posted: bool,
}

impl Record {
    fn new(owner: &Arc<dyn Wake>, on_demand: bool) -> Record {
        let waker: *const dyn Wake = Arc::as_ptr(owner);
        let done = if on_demand { Completion::on_demand(waker) } else { Completion::new(waker, true) };
        Record { done, request: None, posted: false }
    }

    fn in_flight(&self) -> bool {
        self.posted && !self.done.is_done()
    }

    /// What a started operation returned: done at once, pending, or refused.
    fn started(&mut self, started: Result<Start<()>>) -> Result<()> {
        self.posted = true;
        match started {
            Ok(Start::Done(())) => self.done.finish(),
            Ok(Start::Pending(request)) => self.request = Some(request),
            Err(e) => {
                self.done.finish();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Frees the request of an operation that ended; whether none is in flight.
    fn release(&mut self, lock: &WorkerLock<'_>) -> bool {
        if self.in_flight() {
            return false;
        }
        if let Some(request) = self.request.take() {
            request.free(lock);
        }
        true
    }
}

struct SendState {
    data: Vec<u8>,
    /// Where a send from [`SendBuffer::send_from`] reads its bytes: the caller's, then `data`.
    source: Source,
    record: Record,
    /// What the record's completion wakes: alive as long as the record.
    _owner: Arc<dyn Wake>,
}

/// Bytes sent as one tagged message or as an active message's header. Filled while not posted;
/// [`SendBuffer::reset`] makes a buffer whose send ended ready for the next one.
pub struct SendBuffer {
    state: ManuallyDrop<Box<SendState>>,
    /// Outside the box: a kept box must not hold its worker alive.
    worker: Arc<Worker>,
}

impl SendBuffer {
    /// An empty buffer of `worker` with room for `capacity` bytes, whose sends wake `owner` when
    /// they complete later (through [`Wake::wake_on_demand`] if `on_demand`).
    pub fn new(worker: &Arc<Worker>, owner: Arc<dyn Wake>, capacity: usize, on_demand: bool) -> SendBuffer {
        let record = Record::new(&owner, on_demand);
        let state = SendState { data: Vec::with_capacity(capacity), source: Source::default(), record, _owner: owner };
        SendBuffer { state: ManuallyDrop::new(Box::new(state)), worker: worker.clone() }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.state.data
    }

    /// Whether the bytes went to UCX (since the last reset).
    pub fn posted(&self) -> bool {
        self.state.record.posted
    }

    /// Whether they went and UCX is done with them.
    pub fn sent(&self) -> bool {
        self.state.record.posted && self.state.record.done.is_done()
    }

    /// Whether UCX may still read them.
    pub fn in_flight(&self) -> bool {
        self.state.record.in_flight()
    }

    /// The bytes to add to before they are sent.
    ///
    /// # Panics
    /// If they were posted (and not reset since).
    pub fn filling(&mut self) -> &mut Vec<u8> {
        assert!(!self.state.record.posted, "a send buffer filled after it was posted");
        &mut self.state.data
    }

    /// Empties a buffer whose send ended (or never started), freeing its request.
    ///
    /// # Panics
    /// If UCX may still read it.
    pub fn reset(&mut self, lock: &WorkerLock<'_>) {
        assert!(self.state.record.release(lock), "a send buffer reset while UCX reads it");
        self.state.data.clear();
        self.state.record.posted = false;
    }

    /// Frees the request of a send that ended; whether none is in flight.
    pub fn release(&mut self, lock: &WorkerLock<'_>) -> bool {
        self.state.record.release(lock)
    }

    fn start(&mut self, ep: &Endpoint, lock: &WorkerLock<'_>) {
        assert!(!self.state.record.posted, "a send buffer posted twice");
        debug_assert!(ptr::eq(lock.worker(), &*self.worker) && Arc::ptr_eq(ep.worker(), &self.worker));
        self.state.record.done.start();
    }

    /// Sends the bytes with `tag`.
    pub fn send(&mut self, ep: &Endpoint, lock: &WorkerLock<'_>, tag: u64) -> Result<()> {
        self.start(ep, lock);
        let state = &mut **self.state;
        // SAFETY: the bytes and the record live in this box, which stays allocated until the send
        // completed (a buffer dropped before goes to the worker's keeping, with the completion's
        // waker), and are not written while the send is posted (`filling`, `reset`).
        let started = unsafe { ep.tag_send(lock, state.data.as_ptr(), state.data.len(), tag, false, Some(&state.record.done)) };
        state.record.started(started.map(|s| s.unwrap_or(Start::Done(()))))
    }

    /// Sends the bytes as the header of an active message `id` without data.
    pub fn send_active(&mut self, ep: &Endpoint, lock: &WorkerLock<'_>, id: u32) -> Result<()> {
        self.start(ep, lock);
        let state = &mut **self.state;
        // SAFETY: as in `send`.
        let started = unsafe { ep.am_send(lock, id, &state.data, &[], &state.record.done) };
        state.record.started(started)
    }

    /// Sends `bytes` with `tag` from where they are, into the peer's ring if it has room. A send
    /// UCX completes at once leaves the buffer as it was (`Ok(false)`); one it queues is copied
    /// into the buffer before this returns, and UCX sends the copy (`Ok(true)`: posted).
    ///
    /// # Panics
    /// If the buffer holds bytes or was posted.
    pub fn send_from(&mut self, ep: &Endpoint, lock: &WorkerLock<'_>, tag: u64, bytes: &[u8]) -> Result<bool> {
        assert!(self.state.data.is_empty(), "a send from elsewhere through a buffer that holds bytes");
        self.start(ep, lock);
        let state = &mut **self.state;
        state.source.point_at(bytes.as_ptr(), bytes.len());
        // SAFETY: the source points at `bytes`, valid for this call; a send UCX keeps is pointed
        // at the copy in this box before this returns, under the worker's lock (UCX reads through
        // the source only under it), and the box is kept as in `send`.
        let started = unsafe { ep.tag_send_source(lock, &state.source, tag, &state.record.done) };
        match started {
            Ok(Start::Done(())) => {
                state.record.done.finish();
                Ok(false)
            }
            Ok(Start::Pending(request)) => {
                state.data.extend_from_slice(bytes);
                state.source.point_at(state.data.as_ptr(), bytes.len());
                state.record.posted = true;
                state.record.request = Some(request);
                Ok(true)
            }
            Err(e) => {
                state.record.done.finish();
                Err(e)
            }
        }
    }
}

impl Drop for SendBuffer {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.state` is not used again.
        let state = unsafe { ManuallyDrop::take(&mut self.state) };
        keep_or_drop(&self.worker, state);
    }
}

/// A buffer's state: its operation's record, and what the record's completion wakes.
trait Owned: Send + 'static {
    fn record(&mut self) -> &mut Record;
}

/// Frees the request of `state`'s record; if the operation may still run, leaves `state` to
/// `worker`.
fn keep_or_drop<T: Owned>(worker: &Worker, mut state: Box<T>) {
    let in_flight = state.record().in_flight();
    if let Some(request) = state.record().request.take() {
        // A pending one finishes in the background, without calling back: its memory stays.
        request.free(&worker.lock());
    }
    if in_flight {
        worker.keep_until_destroyed(state);
    }
}

impl Owned for SendState {
    fn record(&mut self) -> &mut Record {
        &mut self.record
    }
}

struct RecvState {
    data: Vec<u8>,
    record: Record,
    /// What the record's completion wakes: alive as long as the record.
    _owner: Arc<dyn Wake>,
}

impl Owned for RecvState {
    fn record(&mut self) -> &mut Record {
        &mut self.record
    }
}

/// Memory one tagged message is received into at a time (or the record of a receive into memory
/// the caller lends).
pub struct RecvBuffer {
    state: ManuallyDrop<Box<RecvState>>,
    /// Outside the box, as for [`SendBuffer`].
    worker: Arc<Worker>,
}

impl RecvBuffer {
    /// A buffer of `worker` whose receives wake `owner` when they complete.
    pub fn new(worker: &Arc<Worker>, owner: Arc<dyn Wake>) -> RecvBuffer {
        let record = Record::new(&owner, false);
        let state = RecvState { data: Vec::new(), record, _owner: owner };
        RecvBuffer { state: ManuallyDrop::new(Box::new(state)), worker: worker.clone() }
    }

    /// Whether the receive ended (or none was posted since the last release).
    pub fn is_done(&self) -> bool {
        self.state.record.done.is_done()
    }

    /// Whether UCX may still write the memory.
    pub fn in_flight(&self) -> bool {
        self.state.record.in_flight()
    }

    pub fn status(&self) -> Status {
        self.state.record.done.status()
    }

    /// The received message's length (after [`RecvBuffer::is_done`]).
    pub fn length(&self) -> usize {
        self.state.record.done.length()
    }

    /// What a receive into this buffer brought: empty while it runs.
    pub fn received(&self) -> &[u8] {
        if self.in_flight() {
            return &[];
        }
        let len = self.length().min(self.state.data.len());
        &self.state.data[..len]
    }

    fn start(&mut self, lock: &WorkerLock<'_>) {
        assert!(self.state.record.release(lock), "a receive buffer posted while a receive runs");
        debug_assert!(ptr::eq(lock.worker(), &*self.worker));
        self.state.record.done.start();
    }

    /// Receives the message with exactly `tag`, of at most `capacity` bytes, into this buffer.
    pub fn recv(&mut self, lock: &WorkerLock<'_>, tag: u64, capacity: usize) -> Result<()> {
        self.start(lock);
        let state = &mut **self.state;
        if state.data.len() < capacity {
            state.data.resize(capacity, 0);
        }
        // SAFETY: the memory and the record live in this box, which stays allocated until the
        // receive completed (a buffer dropped before goes to the worker's keeping, with the
        // completion's waker), and are not read while it runs (`received`).
        let started = unsafe { lock.tag_recv(state.data.as_mut_ptr(), capacity, tag, EXACT, &state.record.done) };
        state.record.started(started.map(Start::Pending))
    }

    /// Receives the message with exactly `tag`, of at most `capacity` bytes, into `memory`.
    ///
    /// # Safety
    /// `memory..memory+capacity` must stay valid and unused by anyone else until the receive
    /// ended ([`RecvBuffer::is_done`]).
    pub unsafe fn recv_lent(&mut self, lock: &WorkerLock<'_>, tag: u64, memory: *mut u8, capacity: usize) -> Result<()> {
        self.start(lock);
        let state = &mut **self.state;
        // SAFETY: the caller vouches for the memory; the record lives as in `recv`.
        let started = unsafe { lock.tag_recv(memory, capacity, tag, EXACT, &state.record.done) };
        state.record.started(started.map(Start::Pending))
    }

    /// Cancels a receive that was not matched yet (it then ends with `CANCELED`).
    pub fn cancel(&self, lock: &WorkerLock<'_>) {
        if let Some(request) = &self.state.record.request {
            lock.cancel(request);
        }
    }

    /// Frees the request of a receive that ended; whether none is in flight.
    pub fn release(&mut self, lock: &WorkerLock<'_>) -> bool {
        let released = self.state.record.release(lock);
        if released {
            self.state.record.posted = false;
        }
        released
    }
}

impl Drop for RecvBuffer {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.state` is not used again.
        let state = unsafe { ManuallyDrop::take(&mut self.state) };
        keep_or_drop(&self.worker, state);
    }
}

/// Who owns the completions of a ring's slots (and is woken by them).
pub trait SlotOwner: Wake {
    /// One completion per slot.
    fn slots(&self) -> &[Completion];
}

/// Receive slots posted in one mapping, each for one message at a time; their completions belong
/// to the ring's owner, which its consumers look at.
pub struct SlotRing {
    memory: SlotMemory,
    slot_len: usize,
    requests: Vec<Option<Request>>,
    worker: Arc<Worker>,
    owner: Arc<dyn SlotOwner>,
}

impl SlotRing {
    /// One slot of `slot_len` bytes per completion of `owner`, none posted.
    pub fn new(worker: &Arc<Worker>, owner: Arc<dyn SlotOwner>, slot_len: usize) -> std::io::Result<SlotRing> {
        let count = owner.slots().len();
        Ok(SlotRing {
            memory: SlotMemory::zeroed(count * slot_len)?,
            slot_len,
            requests: (0..count).map(|_| None).collect(),
            worker: worker.clone(),
            owner,
        })
    }

    /// Posts `slot` for the message with exactly `tag`, freeing the request of its last one.
    ///
    /// # Panics
    /// If the slot's last receive did not end.
    pub fn post(&mut self, lock: &WorkerLock<'_>, slot: usize, tag: u64) -> Result<()> {
        let done = &self.owner.slots()[slot];
        if let Some(request) = self.requests[slot].take() {
            assert!(done.is_done(), "a receive slot posted again while it receives");
            request.free(lock);
        }
        debug_assert!(ptr::eq(lock.worker(), &*self.worker));
        done.start();
        let memory = self.memory[slot * self.slot_len..(slot + 1) * self.slot_len].as_mut_ptr();
        // SAFETY: the slot's memory lives in this ring's mapping and its completion in the owner
        // the ring holds; a ring dropped while receives run goes to the worker's keeping with
        // both. The slot is not read while it receives (`received`).
        let request = unsafe { lock.tag_recv(memory, self.slot_len, tag, EXACT, done) }?;
        self.requests[slot] = Some(request);
        Ok(())
    }

    /// What `slot` received: `None` while it receives.
    pub fn received(&self, slot: usize) -> Option<&[u8]> {
        let done = &self.owner.slots()[slot];
        if !done.is_done() {
            return None;
        }
        let base = slot * self.slot_len;
        Some(&self.memory[base..base + done.length().min(self.slot_len)])
    }

    /// Whether a slot's request was not freed yet.
    pub fn has_requests(&self) -> bool {
        self.requests.iter().any(Option::is_some)
    }

    /// Cancels every receive not matched yet.
    pub fn cancel_all(&self, lock: &WorkerLock<'_>) {
        for request in self.requests.iter().flatten() {
            lock.cancel(request);
        }
    }

    /// Whether a receive may still write a slot.
    pub fn in_flight(&self) -> bool {
        let slots = self.owner.slots();
        self.requests.iter().enumerate().any(|(i, r)| r.is_some() && !slots[i].is_done())
    }

    /// Frees the requests of receives that ended; whether none is left.
    pub fn release(&mut self, lock: &WorkerLock<'_>) -> bool {
        let slots = self.owner.slots();
        for (i, request) in self.requests.iter_mut().enumerate() {
            if request.is_some() && slots[i].is_done() {
                if let Some(request) = request.take() {
                    request.free(lock);
                }
            }
        }
        self.requests.iter().all(Option::is_none)
    }
}

impl Drop for SlotRing {
    fn drop(&mut self) {
        if self.requests.iter().all(Option::is_none) {
            return;
        }
        let in_flight = self.in_flight();
        {
            let lock = self.worker.lock();
            // Pending ones finish in the background, without calling back: the memory stays.
            for request in self.requests.drain(..).flatten() {
                request.free(&lock);
            }
        }
        if in_flight {
            let kept: (SlotMemory, Arc<dyn SlotOwner>) = (std::mem::take(&mut self.memory), self.owner.clone());
            self.worker.keep_until_destroyed(Box::new(kept));
        }
    }
}
