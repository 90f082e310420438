//! The sending half of a link: straight from the caller's memory, staged, or as a BODY.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use log::warn;

use crate::core::error::{Error, Result, Status};
use crate::core::iov::Cursor;
use crate::core::protocol;
use crate::stats::{self, Counter};
use crate::ucx::{self, Completion, Start, WorkerLock};

use super::*;

impl Parts {
    // --- sending ------------------------------------------------------------------------------


    /// Whether a write could take at least one byte now; while a blocking write waits for
    /// credits, whether one came.
    pub fn writable(&self) -> bool {
        if self.tx.credit_wait.is_some_and(|since| since.elapsed() < CREDIT_WAIT) {
            return self.tx.credits.available() > 0 || self.reported_credit().is_some();
        }
        if self.peer.is_none() {
            return false;
        }
        if self.staging_has_room() {
            return true;
        }
        // Staged sends complete quietly unless someone waits (see `Shared::wake_on_demand`).
        self.shared.tx_wanted.store(true, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
        self.staging_has_room()
    }

    /// Whether staging takes more bytes: its unsent bytes are below the send buffer.
    fn staging_has_room(&self) -> bool {
        let unsent = self.unsent_staged();
        unsent == 0 || unsent < self.tx.send_buffer.max(1)
    }

    /// Bytes of staged messages not yet sent: completed sends count as gone even before their
    /// buffers are recycled (when the link is next used).
    fn unsent_staged(&self) -> usize {
        self.tx.staged.iter().filter(|b| !b.sent()).map(|b| b.bytes().len()).sum()
    }

    /// The consumed count the peer reported since the credits were last taken, if it did.
    fn reported_credit(&self) -> Option<u64> {
        let reported = self.shared.peer_consumed.load(Ordering::Acquire);
        (reported > self.tx.credits.peer_consumed()).then_some(reported)
    }

    /// Messages sent or staged: the count the peer must consume before end of stream.
    pub fn messages_committed(&self) -> u64 {
        self.tx.credits.sent() + self.tx.staged.iter().filter(|b| !b.posted()).count() as u64
    }

    /// Whether the peer consumed every message we sent. Only then may our endpoint close: UCX
    /// discards the peer's unfinished receives of our messages when it does.
    pub fn peer_caught_up(&self) -> bool {
        self.peer.is_none() || self.tx.credits.peer_consumed() >= self.tx.credits.sent()
    }

    /// Whether everything written has been handed to UCX and completed.
    pub fn tx_idle(&self) -> bool {
        self.tx.staged.iter().all(|b| b.sent()) && self.tx.large.is_none() && !self.credit.message.in_flight()
    }

    /// The tag of our next slot message.
    pub(super) fn tag(&self, peer: Peer) -> u64 {
        protocol::make_tag(peer.id, protocol::KIND_SLOT, self.tx.credits.sent())
    }

    /// Writes from `src`; returns how many bytes were sent or staged (possibly 0). With
    /// `blocking`, a large piece may be sent straight from the caller's memory: the call then
    /// returns with [`Parts::user_tx_pending`] set and the caller must wait for it; and whole
    /// slots that find no credit are left in `src` ([`Parts::writable`] says when to go on).
    pub(super) fn write_locked(&mut self, lock: &WorkerLock<'_>, src: &mut Cursor<'_>, blocking: bool) -> Result<usize> {
        let Some(peer) = self.peer else { return Ok(0) };
        if self.tx.credits.available() == 0 || !self.tx.staged.is_empty() {
            // Take credits that arrived meanwhile (their callbacks only touch atomics).
            lock.progress();
        }
        self.flush_locked(lock)?;
        let direct = self.sends_direct();
        let start = src.moved();
        let large_min = (2 * peer.slot_len).max(LARGE_MIN);
        while src.remaining() > 0 {
            if self.tx.large.is_some() {
                break;
            }
            let message = src.remaining().min(peer.slot_len);
            let has_unposted = self.tx.staged.back().is_some_and(|b| !b.posted());
            if !has_unposted && self.tx.credits.available() > 0 {
                if blocking && self.tx.staged.is_empty() && peer.max_message >= large_min && src.remaining() >= large_min {
                    if let Some((addr, len)) = src.chunk(peer.max_message) {
                        if len >= large_min && self.send_large(lock, peer, addr, len)? {
                            src.advance(len);
                            continue;
                        }
                    }
                }
                if let Some(bytes) = src.chunk_bytes(message) {
                    let len = bytes.len();
                    if len == message && (self.send_immediate(lock, peer, bytes)? || (direct && self.send_direct(lock, peer, bytes)?)) {
                        src.advance(len);
                        continue;
                    }
                }
            }
            if blocking && self.tx.staged.is_empty() && self.tx.credits.available() == 0 && src.remaining() >= peer.slot_len {
                // Whole slots of a blocking write wait for the peer's credits and then go from
                // the caller's memory to UCX: staging them would copy every byte once more.
                let since = *self.tx.credit_wait.get_or_insert_with(Instant::now);
                if since.elapsed() < CREDIT_WAIT {
                    break;
                }
            }
            if !self.stage(src, peer) {
                break;
            }
            if self.tx.staged.back().is_some_and(|b| b.bytes().len() == peer.slot_len) {
                self.post_staged(lock)?;
            }
        }
        self.post_staged(lock)?;
        if self.tx.credits.available() == 0 && (self.tx.credit_wait.is_some() || self.tx.staged.back().is_some_and(|b| !b.posted())) {
            stats::count(Counter::CreditStalls);
        }
        let written = src.moved() - start;
        stats::add(Counter::BytesSentUcx, written as u64);
        Ok(written)
    }

    /// Sends a BODY announcement (an empty slot message) and the BODY from the caller's memory.
    /// `Ok(false)` if the announcement could not go out at once (nothing sent).
    pub(super) fn send_large(&mut self, lock: &WorkerLock<'_>, peer: Peer, addr: usize, len: usize) -> Result<bool> {
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(false) };
        if !ep.tag_send_now(lock, &[], self.tag(peer)).map_err(send_failed)? {
            return Ok(false);
        }
        self.tx.credits.on_sent();
        let status = Arc::new(Completion::new(waker(&self.shared), false));
        let tag = protocol::make_tag(peer.id, protocol::KIND_BODY, self.tx.large_seq);
        self.tx.large_seq += 1;
        // SAFETY: no safe form: the memory is the Java caller's, lent for its write, and that
        // write does not return before the send completed (it waits for `user_tx_pending` to
        // clear; teardown closes the endpoint, which completes it).
        let started = unsafe { ep.tag_send(lock, addr as *const u8, len, tag, false, Some(&status)) };
        match started {
            Ok(Some(Start::Done(()))) | Ok(None) => {}
            Ok(Some(Start::Pending(request))) => self.tx.large = Some(LargeTx { status, request: Some(request) }),
            Err(e) => return Err(send_failed(e)),
        }
        stats::count(Counter::LargeSendsDirect);
        Ok(true)
    }

    /// Whether a BODY is being sent from the caller's memory.
    pub fn user_tx_pending(&self) -> bool {
        self.tx.large.is_some()
    }

    /// A handle to wait for that send.
    pub fn user_tx_waiter(&self) -> Option<TxWaiter> {
        self.tx.large.as_ref().map(|l| TxWaiter(l.status.clone()))
    }

    /// Whether that send completed (then [`Parts::finish_user_tx`] releases it).
    pub fn user_tx_done(&self) -> bool {
        self.tx.large.as_ref().map_or(true, |l| l.status.is_done())
    }

    /// Gives up on a BODY send the peer will never take (it is gone): the request and its
    /// status stay allocated in case UCX still completes it.
    pub fn abandon_user_tx(&mut self) {
        if let Some(large) = self.tx.large.take() {
            warn!("link {}: a send from the caller's memory did not end in time; leaving it to UCX", self.shared.id);
            self.leave_to_ucx(large);
        }
    }

    /// Hands `request_state` (a request and the memory it writes or reads) with this link's
    /// `Shared`, which its callback touches, to the worker: UCX may still complete the request at
    /// any time, even after the link is gone (when the endpoint or the worker is closed).
    pub(super) fn leave_to_ucx<T: Send + 'static>(&self, request_state: T) {
        self.lane.worker.keep_until_destroyed(Box::new((request_state, self.shared.clone())));
    }

    /// Releases a completed BODY send; an error if it failed.
    pub fn finish_user_tx(&mut self) -> Result<()> {
        if !self.user_tx_done() {
            return Ok(());
        }
        let Some(large) = self.tx.large.take() else { return Ok(()) };
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
    pub(super) fn send_immediate(&mut self, lock: &WorkerLock<'_>, peer: Peer, bytes: &[u8]) -> Result<bool> {
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(false) };
        let sent = ep.tag_send_now(lock, bytes, self.tag(peer)).map_err(send_failed)?;
        if sent {
            self.tx.credits.on_sent();
        }
        Ok(sent)
    }

    /// Whether slot messages that UCX cannot complete at once go through [`Parts::send_direct`]:
    /// over shared memory. UCX's TCP transport sends a message from contiguous memory without
    /// copying it (the kernel does), but packs one from a [`ucx::Source`] into its own buffers
    /// first: staging and then UCX's send from there is faster for it.
    fn sends_direct(&mut self) -> bool {
        if self.tx.direct.is_none() && self.ep.as_ref().is_some_and(|p| p.ep().is_some()) {
            self.tx.direct = Some(self.over_shared_memory());
        }
        self.tx.direct == Some(true)
    }

    /// Sends one slot message from the caller's memory, which UCX copies into the peer's ring if
    /// it has room; a message UCX queues is copied into a staging buffer, and UCX sends it from
    /// there. `Ok(false)` if staging has no room for such a copy (nothing sent).
    pub(super) fn send_direct(&mut self, lock: &WorkerLock<'_>, peer: Peer, bytes: &[u8]) -> Result<bool> {
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(false) };
        if !self.staging_has_room() {
            return Ok(false);
        }
        let tag = self.tag(peer);
        let mut buf = fresh_buf(&mut self.tx.spare, &self.lane, &self.shared, peer);
        if buf.send_from(ep, lock, tag, bytes).map_err(send_failed)? {
            self.tx.staged_bytes += bytes.len();
            self.tx.staged.push_back(buf);
        } else {
            self.keep_spare(buf);
        }
        self.tx.credits.on_sent();
        Ok(true)
    }

    /// Keeps a buffer whose send is over for the next one (two at most).
    fn keep_spare(&mut self, buf: SendBuffer) {
        if self.tx.spare.len() < 2 {
            self.tx.spare.push(buf);
        }
    }

    /// Copies bytes from `src` into staging; `false` if the send buffer is full.
    pub(super) fn stage(&mut self, src: &mut Cursor<'_>, peer: Peer) -> bool {
        if let Some(tail) = self.tx.staged.back_mut() {
            if !tail.posted() && tail.bytes().len() < peer.slot_len {
                let room = peer.slot_len - tail.bytes().len();
                let copied = src.drain_append(tail.filling(), room);
                self.tx.staged_bytes += copied;
                return true;
            }
        }
        if !self.tx.staged.is_empty() && self.tx.staged_bytes + peer.slot_len > self.tx.send_buffer {
            return false;
        }
        let mut buf = fresh_buf(&mut self.tx.spare, &self.lane, &self.shared, peer);
        let copied = src.drain_append(buf.filling(), peer.slot_len);
        self.tx.staged_bytes += copied;
        self.tx.staged.push_back(buf);
        true
    }

    /// Posts staged buffers while credits last.
    pub(super) fn post_staged(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let Some(peer) = self.peer else { return Ok(()) };
        let Some(ep) = self.ep.as_ref().and_then(|p| p.ep()) else { return Ok(()) };
        let mut index = self.tx.staged.iter().position(|b| !b.posted()).unwrap_or(self.tx.staged.len());
        while index < self.tx.staged.len() && self.tx.credits.available() > 0 {
            let tag = self.tag(peer);
            self.tx.staged[index].send(ep, lock, tag).map_err(send_failed)?;
            self.tx.credits.on_sent();
            index += 1;
        }
        self.recycle(lock);
        Ok(())
    }

    /// Bytes waiting in staging buffers (not yet sent), and the credits left for sending.
    pub fn tx_backlog(&self) -> (usize, u64) {
        (self.unsent_staged(), self.tx.credits.available())
    }

    /// Until when a blocking writer waits for a credit rather than stage (see [`CREDIT_WAIT`]).
    pub fn credit_deadline(&self) -> Option<Instant> {
        self.tx.credit_wait.map(|since| since + CREDIT_WAIT)
    }

    /// Returns completed staging buffers to the spare list.
    pub(super) fn recycle(&mut self, lock: &WorkerLock<'_>) {
        let mut i = 0;
        while i < self.tx.staged.len() {
            let buf = &self.tx.staged[i];
            if buf.sent() {
                if let Some(mut buf) = self.tx.staged.remove(i) {
                    self.tx.staged_bytes -= buf.bytes().len();
                    buf.reset(lock);
                    self.keep_spare(buf);
                }
            } else {
                i += 1;
            }
        }
        if self.tx.staged.is_empty() {
            self.shared.tx_wanted.store(false, Ordering::Relaxed);
        }
    }

    pub(super) fn flush_locked(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        if let Some(reported) = self.reported_credit() {
            self.tx.credits.on_consumed(reported)?;
            self.tx.credit_wait = None;
        }
        self.post_staged(lock)?;
        if self.credit.wanted {
            self.report_credits(lock)?;
        }
        Ok(())
    }
}

/// An empty staging buffer of a link (its `spare` list, `lane` and `shared`), a spare one if there
/// is one.
fn fresh_buf(spare: &mut Vec<SendBuffer>, lane: &Lane, shared: &Arc<Shared>, peer: Peer) -> SendBuffer {
    spare.pop().unwrap_or_else(|| SendBuffer::new(&lane.worker, shared.clone(), peer.slot_len, true))
}

/// The error of a write whose message UCX refused: the connection is reset.
fn send_failed(e: ucx::UcxError) -> Error {
    Error::new(Status::Reset, format!("UCX send failed: {e}"))
}
