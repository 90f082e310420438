//! The receiving half of a link: slots in ring order, BODY messages, credits returned.

use std::time::{Duration, Instant};

use log::{trace, warn};

use crate::core::error::{Error, Result, Status};
use crate::core::iov::Cursor;
use crate::core::protocol;
use crate::stats::{self, Counter};
use crate::ucx::{self, WorkerLock};

use super::*;

/// Progress calls a reader makes for a BODY's first bytes after its announcement before it
/// receives the BODY into the bounce buffer.
const BODY_LOOKS: usize = 4;

impl Parts {
    // --- receiving ----------------------------------------------------------------------------

    /// Whether a read would return bytes (or make progress on a BODY).
    pub fn readable(&self) -> bool {
        match &self.rx.large {
            Some(_) => self.rx.body.is_done(),
            None => self.shared.slots[self.rx.head].is_done(),
        }
    }

    /// Slot messages consumed so far.
    pub fn consumed(&self) -> u64 {
        self.rx.credits.consumed()
    }

    /// Whether a BODY is being received into the caller's memory (the caller must wait for it
    /// before returning, see [`Parts::large_rx_done`]).
    pub fn user_rx_pending(&self) -> bool {
        self.rx.large.as_ref().is_some_and(|l| l.into_user && !self.rx.body.is_done())
    }

    /// Whether the BODY receive into the caller's memory finished.
    pub fn large_rx_done(&self) -> bool {
        self.rx.large.as_ref().map_or(true, |l| !l.into_user || self.rx.body.is_done())
    }

    /// Copies received bytes into `dst`, consuming and re-posting slots; returns the byte count.
    /// With `allow_user`, a large message may be received straight into `dst` (the call then
    /// returns 0 with [`Parts::user_rx_pending`] set, and the caller waits and calls again with
    /// the same cursor). `worker`'s lock is taken only where UCX is called.
    pub(super) fn read_with(&mut self, worker: &ucx::Worker, dst: &mut Cursor<'_>, allow_user: bool) -> Result<usize> {
        let start = dst.moved();
        let mut lock = None;
        while dst.remaining() > 0 {
            if self.rx.large.is_some() {
                if !self.read_large(dst, worker, &mut lock)? {
                    break;
                }
                continue;
            }
            let slot = &self.shared.slots[self.rx.head];
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
                self.start_body(dst, start, allow_user, worker, &mut lock)?;
                continue;
            }
            let received = self.rx.ring.received(self.rx.head).unwrap_or_default();
            let copied = dst.fill_from(&received[self.rx.head_offset..]);
            self.rx.head_offset += copied;
            if self.rx.head_offset == len {
                let lock = lock.get_or_insert_with(|| worker.lock());
                self.consume_head(lock)?;
            }
        }
        let read = dst.moved() - start;
        stats::add(Counter::BytesReceivedUcx, read as u64);
        if self.rx.credits.should_report() {
            let lock = lock.get_or_insert_with(|| worker.lock());
            self.report_credits(lock)?;
        }
        Ok(read)
    }

    /// The large message in progress: copies what it brought (or counts it, received into the
    /// caller's memory), and ends it once all of it was read. False while it is still arriving.
    fn read_large<'w>(&mut self, dst: &mut Cursor<'_>, worker: &'w ucx::Worker, lock: &mut Option<WorkerLock<'w>>) -> Result<bool> {
        let Some(large) = &mut self.rx.large else { return Ok(true) };
        let body = &mut self.rx.body;
        if !body.is_done() {
            return Ok(false);
        }
        let status = body.status();
        let got = body.length();
        if status != ucx::Status::OK || got == 0 || large.expected.is_some_and(|expected| got != expected) {
            return Err(Self::body_error(status, got, large.expected, large.capacity));
        }
        if large.into_user {
            dst.advance(got);
            large.offset = got;
        } else {
            let copied = dst.fill_from(&body.received()[large.offset..]);
            large.offset += copied;
        }
        if large.offset == got {
            let lock = lock.get_or_insert_with(|| worker.lock());
            body.release(lock);
            self.rx.large = None;
            self.rx.large_seq += 1;
            self.consume_head(lock)?;
        }
        Ok(true)
    }

    /// A BODY announcement at the head slot: its length is known once UCX has seen the BODY's
    /// first bytes (its sender sent it right after). Starts the BODY's receive, into the caller's
    /// memory (`allow_user`, nothing read by this call before `start`) if it fits.
    fn start_body<'w>(
        &mut self,
        dst: &mut Cursor<'_>,
        start: usize,
        allow_user: bool,
        worker: &'w ucx::Worker,
        lock: &mut Option<WorkerLock<'w>>,
    ) -> Result<()> {
        let lock = lock.get_or_insert_with(|| worker.lock());
        let mut body = self.body_length(lock)?;
        // The BODY follows its announcement at once on the same endpoint: over the network its
        // first bytes are often in the worker's queue still, one progress call away. Received
        // into the bounce buffer, it would be copied once more.
        for _ in 0..BODY_LOOKS {
            if body.is_some() || lock.progress() == 0 {
                break;
            }
            body = self.body_length(lock)?;
        }
        // The reader's memory takes the BODY if it fits: of the length UCX saw, or of the largest
        // this side accepts while UCX has not seen it yet.
        let room = body.unwrap_or_else(|| self.body_limit());
        let user = match dst.chunk(room) {
            Some((addr, n)) if allow_user && n == room && dst.moved() == start => Some(addr),
            _ => None,
        };
        self.start_large_rx(lock, body, user)
    }

    /// Re-posts the head slot (for the message `slots` later) and moves on to the next one.
    pub(super) fn consume_head(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        self.post(lock, self.rx.head)?;
        self.rx.head = (self.rx.head + 1) % self.shared.slots.len();
        self.rx.head_offset = 0;
        self.rx.credits.on_consumed();
        Ok(())
    }

    /// Largest BODY this side accepts.
    pub(super) fn body_limit(&self) -> usize {
        MAX_LARGE_MESSAGE.max(self.slot_len)
    }

    /// The length of the next BODY if UCX has its first bytes already, validated.
    pub(super) fn body_length(&self, lock: &WorkerLock<'_>) -> Result<Option<usize>> {
        let tag = protocol::make_tag(self.shared.id, protocol::KIND_BODY, self.rx.large_seq);
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

    pub(super) fn body_error(status: ucx::Status, got: usize, expected: Option<usize>, capacity: usize) -> Error {
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

    /// Posts the receive of the next BODY into `user` memory (which holds its length if known,
    /// else the largest BODY this side accepts), or into the body buffer, sized the same way.
    pub(super) fn start_large_rx(&mut self, lock: &WorkerLock<'_>, expected: Option<usize>, user: Option<usize>) -> Result<()> {
        let capacity = expected.unwrap_or_else(|| self.body_limit());
        let tag = protocol::make_tag(self.shared.id, protocol::KIND_BODY, self.rx.large_seq);
        let started = match user {
            // SAFETY: no safe form: the memory is the Java caller's, lent for its read, and that
            // read does not return before the receive ended (`user_rx_pending`; a closing channel
            // cancels it and waits, `abandon_user_rx`).
            Some(addr) => unsafe { self.rx.body.recv_lent(lock, tag, addr as *mut u8, capacity) },
            None => self.rx.body.recv(lock, tag, capacity),
        };
        started.map_err(|e| Error::new(Status::Io, format!("posting a UCX receive: {e}")))?;
        if user.is_some() {
            stats::count(Counter::LargeReceivesDirect);
        }
        self.rx.large = Some(LargeRx { expected, capacity, into_user: user.is_some(), offset: 0 });
        Ok(())
    }

    /// Gives up a BODY receive into caller memory (the connection is closing): cancels it and
    /// waits until UCX no longer references that memory, at most `wait`.
    pub fn abandon_user_rx(&mut self, wait: Duration) {
        let Some(large) = &self.rx.large else { return };
        if !large.into_user {
            return;
        }
        let worker = self.lane.worker.clone();
        let lock = worker.lock();
        self.rx.body.cancel(&lock);
        // A matched receive completes when the rest of the message arrives or the endpoint
        // fails; a peer that died mid-message does neither.
        let deadline = Instant::now() + wait;
        while !self.rx.body.is_done() {
            if Instant::now() >= deadline {
                warn!("link {}: a receive into the caller's memory did not end in time; leaving it to UCX", self.shared.id);
                self.rx.large = None;
                // The old record goes to the worker's keeping as it drops.
                self.rx.body = RecvBuffer::new(&worker, self.shared.clone());
                return;
            }
            lock.progress();
        }
        self.rx.body.release(&lock);
        self.rx.large = None;
    }

    /// Sends the consumed count to the peer in an active message (one at a time).
    pub(super) fn report_credits(&mut self, lock: &WorkerLock<'_>) -> Result<()> {
        let (Some(ep), Some(peer)) = (self.ep.as_ref().and_then(|p| p.ep()), self.peer) else {
            self.credit.wanted = true;
            return Ok(());
        };
        let message = &mut self.credit.message;
        if message.in_flight() {
            self.credit.wanted = true;
            return Ok(());
        }
        self.credit.wanted = false;
        message.reset(lock);
        message.filling().extend_from_slice(&protocol::encode_credit(peer.id, self.rx.credits.consumed()));
        message.send_active(ep, lock, protocol::AM_CREDIT).map_err(|e| Error::new(Status::Reset, format!("sending credits: {e}")))?;
        if log::log_enabled!(log::Level::Trace) {
            trace!("link {}: reported {} consumed", self.shared.id, self.rx.credits.consumed());
        }
        self.rx.credits.on_reported();
        Ok(())
    }
}
