//! Reading: the peer's TCP stream (raw bytes, DATA frames) until it switched, UCX after;
//! end of stream and the errors that end reading.

use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use log::{log_enabled, trace, Level};
use parking_lot::MutexGuard;

use super::{Conn, Phase, State};
use crate::core::error::{Error, Result, Status};
use crate::core::hub::Hub;
use crate::core::iov::{Cursor, Region};
use crate::core::negotiation::{Negotiation, Next};
use crate::core::spin::{self, Governor};
use crate::net::socket::{recv_parts, MAX_PARTS};
use crate::stats::{self, Counter};

/// How long a transfer from or into the caller's memory may take to end before it is given up:
/// briefly once the peer is known to be gone (nothing more comes from it), longer after a local
/// close (the peer discards the message, which ends it).
pub(super) const ABANDON_WAIT_PEER_GONE: Duration = Duration::from_millis(100);
pub(super) const ABANDON_WAIT_CLOSED: Duration = Duration::from_secs(2);

/// How the peer's stream stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// More may come.
    Open,
    /// It ended cleanly and everything was delivered.
    Clean,
    /// The TCP stream ended while it carried frames and before FIN: an abortive close.
    Broken,
}

impl Conn {
    fn end(state: &State) -> End {
        let Some(neg) = &state.neg else { return End::Open };
        if !state.rx.inbox.is_empty() {
            return End::Open;
        }
        if let Some((messages, _)) = neg.peer_fin() {
            let done = if neg.peer_switched() {
                state.link.as_ref().is_none_or(|l| l.consumed() >= messages)
            } else {
                !neg.data_pending()
            };
            return if done { End::Clean } else { End::Open };
        }
        if !state.rx.eof {
            return End::Open;
        }
        match neg.next() {
            // A raw stream (never marked, or after RAW) ends with the TCP stream, unless the peer
            // reset it (as with the kernel's channels, the reader learns of the reset).
            Next::Raw(_) if !neg.peer_switched() && !state.rx.reset => End::Clean,
            _ => End::Broken,
        }
    }

    /// Whether the peer's stream is complete: all bytes up to its end were delivered.
    pub(super) fn at_end(state: &State) -> bool {
        Self::end(state) == End::Clean
    }

    /// When a peer that closed its socket after a FIN stops being waited for: the UCX messages
    /// the FIN announced were sent before it, so they come soon or never (a broken or hostile
    /// peer), and waiting for them is bounded by `hadronio.livenessMillis` (none if 0).
    pub(super) fn announced_deadline(state: &State) -> Option<Instant> {
        let millis = state.settings.liveness_ms;
        let neg = state.neg.as_deref()?;
        if millis == 0 || !state.rx.eof || Self::at_end(state) {
            return None;
        }
        neg.peer_fin().map(|(_, at)| at + Duration::from_millis(millis))
    }

    /// The error that ends reading when no more bytes can come, if any.
    pub(super) fn read_failure(state: &State) -> Option<Error> {
        if let Some(error) = state.failure.fatal() {
            return Some(error.clone());
        }
        let neg = state.neg.as_deref()?;
        if Self::announced_deadline(state).is_some_and(|d| Instant::now() >= d) {
            let announced = neg.peer_fin().map_or(0, |(m, _)| m);
            let received = state.link.as_ref().map_or(0, |l| l.consumed());
            return Some(Error::new(
                Status::Reset,
                format!("Connection reset by peer (it closed; {received} of the {announced} UCX messages it announced arrived)"),
            ));
        }
        if Self::end(state) == End::Broken && neg.peer_fin().is_none() {
            let at = neg.broken_off().unwrap_or_default();
            return Some(Error::new(Status::Reset, format!("Connection reset by peer{at}")));
        }
        if let (true, Some(link)) = (neg.peer_switched(), &state.link) {
            if let Some(code) = link.endpoint_error() {
                if !Self::at_end(state) {
                    return Some(Error::new(Status::Reset, format!("Connection reset by peer (UCX: {})", crate::ucx::Status(code as i8))));
                }
            }
        }
        None
    }

    fn read_now(&self, state: &mut State, dst: &mut Cursor<'_>, allow_user: bool) -> Result<usize> {
        if state.closing.input_shutdown {
            return Err(Error::new(Status::Eof, "input shut down"));
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        let switched = state.neg.as_deref().is_some_and(Negotiation::peer_switched);
        let mut n = 0;
        if !switched || !state.rx.inbox.is_empty() {
            n += self.read_stream(state, Some(dst))?;
            self.drive(state);
        }
        let switched = state.neg.as_deref().is_some_and(Negotiation::peer_switched);
        if switched && dst.remaining() > 0 && state.rx.inbox.is_empty() {
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
        if let Some(error) = state.failure.take_input() {
            return Err(error);
        }
        if Self::at_end(state) {
            if let Some(link) = &mut state.link {
                link.report_all()?;
            }
            return Err(Error::new(Status::Eof, "end of stream"));
        }
        if let Some(error) = Self::read_failure(state) {
            return Err(error);
        }
        Ok(0)
    }

    pub(super) fn readable_now(&self, state: &State) -> bool {
        if state.failure.is_fatal() || state.failure.input_pending() || state.closing.input_shutdown || Self::at_end(state) || Self::read_failure(state).is_some() {
            return true;
        }
        let Some(neg) = &state.neg else { return false };
        if !neg.deliverable() {
            return false;
        }
        if !state.rx.inbox.is_empty() {
            return true;
        }
        if neg.peer_switched() {
            state.link.as_ref().is_some_and(|l| l.readable())
        } else {
            state.tcp.io.readable || state.rx.eof
        }
    }

    /// Whether a blocking read may wait in the kernel's `recv`: the connection is plain TCP for
    /// good, and nothing is held back or due ahead of the socket's next bytes.
    fn reads_in_kernel(state: &State) -> bool {
        state.phase == Phase::Connected
            && Self::plain_for_good(state)
            && state.tcp.socket.is_some()
            && state.rx.inbox.is_empty()
            && !state.rx.pass_due
            && !state.rx.eof
            && !state.closing.input_shutdown
            && !state.failure.is_fatal()
            && !state.failure.input_pending()
    }

    /// A blocking read of a plain connection, as the kernel's blocking channels read: one `recv`
    /// that waits for the bytes, no hub; before it, a busy-poll of the socket for up to the spin
    /// window where spinning pays (see `core::spin`). `close` and `shutdownInput` wake it by
    /// shutting the socket's input down, and a release keeps the socket open until it left.
    /// Returns the state again and the bytes read; `Ok(0)` leaves the rest (end of stream, a
    /// wake-up) to the usual path.
    fn read_in_kernel<'a>(&'a self, mut state: MutexGuard<'a, State>, dst: &mut Cursor<'_>) -> (MutexGuard<'a, State>, Result<usize>) {
        let raw = match state.tcp.enter_kernel(false) {
            Ok(Some(raw)) => raw,
            Ok(None) => return (state, Ok(0)),
            Err(e) => return (state, Err(e)),
        };
        let mut parts: [IoSliceMut<'_>; MAX_PARTS] = std::array::from_fn(|_| IoSliceMut::new(&mut []));
        let mut count = 0;
        for (slot, piece) in parts.iter_mut().zip(dst.slices_mut()) {
            *slot = IoSliceMut::new(piece);
            count += 1;
        }
        let parts = &mut parts[..count];
        if !state.tcp.kernel.unwatched {
            if let Some(hub) = self.hub.get() {
                state.tcp.kernel.unwatched = hub.watch_reads(state.id, raw, false).is_ok();
            }
        }
        let governor = kernel_spin(state.settings.spin_ns);
        drop(state);
        // SAFETY: no safe form: the socket lives in the state, which this read leaves unlocked
        // while it waits in the kernel; the descriptor stays open while `kernel.inside` counts
        // this read (a release defers its close until then).
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let received = match self.spin_recv(governor, fd, parts) {
            Some(received) => received,
            None => recv_parts(fd, parts, true),
        };
        let mut state = self.lock();
        state.tcp.left_kernel(false);
        let result = match received {
            Ok(n) if n > 0 => {
                dst.advance(n);
                if let Some(neg) = &mut state.neg {
                    neg.on_raw(n);
                }
                stats::add(Counter::BytesReceivedTcp, n as u64);
                Ok(n)
            }
            // The peer's end of the stream, taken as the usual path takes it (without asking the
            // socket again), unless this side shut the input down or closed (the wake-up of a
            // `shutdownInput` or `close`): the usual path reports those.
            Ok(_) => {
                if !self.is_closed() && !state.closing.input_shutdown {
                    let st = &mut *state;
                    if let Some(Err(e)) = st.neg.as_deref_mut().map(|neg| st.rx.ended(neg)) {
                        self.set_fatal(&mut state, e);
                    }
                }
                Ok(0)
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Self::recv_failed(&mut state, e).map(|()| 0),
        };
        (state, result)
    }

    /// Has the hub report the socket's readability again after reads that waited in the kernel,
    /// which leave the flag as it was: the socket says now whether it holds anything.
    pub(super) fn watch_reads_again(&self, state: &mut State) {
        if !state.tcp.kernel.unwatched {
            return;
        }
        let (Some(hub), Some(socket)) = (self.hub.get(), &state.tcp.socket) else { return };
        if hub.watch_reads(state.id, socket.as_raw_fd(), true).is_ok() {
            state.tcp.kernel.unwatched = false;
        }
        state.tcp.io.readable = socket.has_news();
    }

    /// Busy-polls the socket for up to the spin window, where spinning pays and while a core is
    /// free for it. `Some`: what a receive found (bytes, the end of the stream, a failure), or
    /// nothing if the channel was closed meanwhile; `None`: go on to wait.
    fn spin_recv(&self, governor: &Governor, fd: BorrowedFd<'_>, parts: &mut [IoSliceMut<'_>]) -> Option<std::io::Result<usize>> {
        let window = governor.window()?;
        let _permit = spin::permit()?;
        let start = Instant::now();
        let mut checked = start;
        let mut rounds = 0u32;
        loop {
            match recv_parts(fd, parts, false) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                received => {
                    governor.caught();
                    return Some(received);
                }
            }
            if self.is_closed() {
                return Some(Ok(0));
            }
            let now = Instant::now();
            if now.duration_since(start) >= window {
                governor.missed();
                return None;
            }
            if now.duration_since(checked) >= spin::RECHECK {
                checked = now;
                if !spin::core_free() {
                    governor.missed();
                    return None;
                }
            }
            rounds += 1;
            if rounds % 16 == 0 {
                // A thread that became runnable on this core gets it now.
                std::thread::yield_now();
            }
            std::hint::spin_loop();
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
            let mut state = self.lock();
            if self.is_closed() {
                Self::abandon_user_rx(&mut state);
                return Err(Error::closed());
            }
            let in_kernel = blocking && timeout.is_none() && Self::reads_in_kernel(&state);
            if blocking && !in_kernel && self.hub.get().is_none() {
                self.ensure_bound(&mut state)?;
            }
            if !in_kernel {
                self.watch_reads_again(&mut state);
            }
            Self::assume_ready_unbound(&self.hub, &mut state);
            let blocked = state.link.as_ref().is_some_and(|l| l.has_endpoint() && !l.writable());
            let mut result = Ok(0);
            if in_kernel {
                (state, result) = self.read_in_kernel(state, &mut dst);
                if self.is_closed() && !matches!(result, Ok(n) if n > 0) {
                    continue;
                }
            }
            if matches!(result, Ok(0)) {
                result = self.read_now(&mut state, &mut dst, allow_user);
            }
            match result {
                Ok(0) => {}
                Ok(n) => return Ok(self.read_done(state, n, blocked)),
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
                Err(e) => return Err(self.read_ended(&mut state, e)),
            }
            if !blocking {
                if polled || !Self::hub_may_deliver(&state) {
                    return Ok(0);
                }
                let Some(hub) = self.hub.get() else { return Ok(0) };
                drop(state);
                hub.poll_now();
                polled = true;
                continue;
            }
            let until = match (deadline, Self::announced_deadline(&state)) {
                (Some(d), Some(a)) => Some(d.min(a)),
                (d, a) => d.or(a),
            };
            let hub = self.ensure_bound(&mut state)?;
            let key = Some(state.id);
            drop(state);
            let ready = hub.wait(key, &mut || self.is_closed() || self.readable_now(&self.lock()), until);
            if !ready && !self.is_closed() && deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::new(Status::TimedOut, "Read timed out"));
            }
        }
    }

    /// A read returned `n` bytes: writers that waited for the credits it returned may go, and the
    /// upgrade is progressed.
    fn read_done(&self, state: MutexGuard<'_, State>, n: usize, blocked: bool) -> usize {
        let unblocked = blocked && state.link.as_ref().is_some_and(|l| l.writable());
        let upgrading = Self::upgrading(&state);
        let id = state.id;
        drop(state);
        if unblocked {
            self.writers_may_go(id);
        }
        self.progress_upgrade(upgrading);
        n
    }

    /// Reading ended with `e`: an end of stream leaves the connection as it is, anything else
    /// fails it.
    fn read_ended(&self, state: &mut State, e: Error) -> Error {
        Self::abandon_user_rx(state);
        if e.status != Status::Eof {
            self.set_fatal(state, e.clone());
        }
        if log_enabled!(Level::Trace) {
            trace!("connection {}: read ends with {:?} ({})", self.serial, e.status, state.neg.as_deref().map(Negotiation::path).unwrap_or_default());
        }
        e
    }

    /// Whether progressing the hub may find something for a read that found nothing: UCX
    /// messages that wait in the worker. Without a UCX half, the socket has already answered
    /// (a late ACCEPT is taken by the next `select`, which dispatches the socket's events).
    fn hub_may_deliver(state: &State) -> bool {
        state.link.is_some()
    }

    /// The messages a read consumed carried the credits a full send buffer waited for: its bytes
    /// went out, and a writer waiting for room (or a selector, for OP_WRITE) must look again.
    fn writers_may_go(&self, id: u32) {
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_conn(id);
        }
    }

    /// A connection on no hub (non-blocking, never registered) has no epoll watching its socket
    /// to say when it turns readable or writable again: try the socket on every call, as the
    /// kernel's own channels do.
    pub(super) fn assume_ready_unbound(hub: &OnceLock<Arc<Hub>>, state: &mut State) {
        if hub.get().is_none() {
            state.tcp.io.readable = true;
            state.tcp.io.writable = true;
        }
    }

    /// A read is returning early (close, error): UCX must not keep writing into its memory.
    fn abandon_user_rx(state: &mut State) {
        let wait = if Self::peer_gone(state) { ABANDON_WAIT_PEER_GONE } else { ABANDON_WAIT_CLOSED };
        if let Some(link) = &mut state.link {
            link.abandon_user_rx(wait);
        }
    }

    /// Whether the peer is known to be gone: nothing more will come from it.
    pub(super) fn peer_gone(state: &State) -> bool {
        state.failure.is_fatal()
            || state.rx.eof
            || state.failure.writes_failed()
            || state.link.as_ref().is_some_and(|l| l.endpoint_error().is_some())
    }
}

/// Whether busy-polling before a plain blocking read waits in the kernel has been paying off, for
/// all such reads of the process together: a thread-per-connection server's connections, or a
/// client that opens one per request, read a few times each, too few for a score of their own
/// (every new connection's first read would spin, and ask the kernel whether a core is free),
/// and their peers answer alike.
fn kernel_spin(spin_ns: u64) -> &'static Governor {
    static GOVERNOR: OnceLock<Governor> = OnceLock::new();
    GOVERNOR.get_or_init(|| Governor::new(spin_ns))
}
