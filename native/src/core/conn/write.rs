//! Writing: raw, held back, in DATA frames or over UCX, as the negotiation says; bytes that must
//! go out without the writer's help.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{Conn, Phase, State};
use crate::core::background::background;
use crate::core::error::{Error, Result, Status};
use crate::core::iov::{Cursor, Region};
use crate::core::negotiation::{Negotiation, WriteMode};
use crate::core::stream::{self, HOLD_LIMIT};
use crate::net::host::coarse_now;
use crate::net::socket::{send_parts_waiting, Socket, MAX_PARTS};
use crate::stats::{self, Counter};

use super::read::{ABANDON_WAIT_CLOSED, ABANDON_WAIT_PEER_GONE};

/// How often the write path looks at the control socket for a peer's close, at most: it reads the
/// time on the coarse clock (on every write; the precise clock costs as much as a small write
/// over shared memory on a virtual machine), so the interval it sees is also at least one of that
/// clock's ticks.
const TCP_CHECK_INTERVAL: Duration = Duration::from_millis(1);

impl Conn {
    fn write_now(&self, state: &mut State, src: &mut Cursor<'_>, blocking: bool) -> Result<()> {
        if let Some(error) = state.failure.fatal() {
            return Err(error.clone());
        }
        if state.closing.output_shutdown {
            return Err(Error::new(Status::OutputShutdown, "output shut down"));
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        if let Some(error) = state.failure.output() {
            return Err(error.clone());
        }
        Self::check_peer_closed(state)?;
        if src.remaining() > 0 {
            if let Some(neg) = state.neg.as_deref_mut() {
                neg.before_write(Instant::now);
            }
        }
        let mode = state.neg.as_deref().map_or(WriteMode::Raw, Negotiation::write_mode);
        if state.neg.as_deref().is_some_and(Negotiation::pending) {
            // Take the peer's answer, mark and frames so that the upgrade goes on while we write.
            self.progress_stream(state);
            if state.neg.as_deref().is_some_and(Negotiation::peer_speaks_hadronio) && !state.rx.eof {
                Self::check_control(state)?;
            }
        } else if mode == WriteMode::Ucx && !state.rx.eof {
            self.look_at_control(state)?;
        }
        if let Some(error) = state.failure.fatal() {
            return Err(error.clone());
        }
        Self::check_peer_closed(state)?;
        let mode = state.neg.as_deref().map_or(WriteMode::Raw, Negotiation::write_mode);
        if mode == WriteMode::Ucx {
            // Bytes held back before the peer authenticated went into DATA frames ahead of
            // SWITCH when it did; nothing else comes before the UCX messages.
            if let Some(link) = &mut state.link {
                link.write(src, blocking)?;
            }
            return Ok(());
        }
        let (Some(neg), Some(socket)) = (state.neg.as_deref_mut(), state.tcp.socket.as_ref()) else {
            return Err(Error::closed());
        };
        let before = src.moved();
        let result = stream::write(neg, socket, &state.rx, &mut state.tx, src);
        let sent = src.moved() - before;
        stats::add(Counter::BytesSentTcp, sent as u64);
        if neg.pending() {
            neg.on_written(sent);
            if before == 0 && sent > 0 && neg.on_write(Instant::now()) {
                // A second write brought the client's mark: it goes out now.
                self.flush_control(state);
            }
        }
        match result {
            Ok(()) => {
                if src.remaining() > 0 && src.moved() == before && mode != WriteMode::Hold {
                    state.tcp.io.writable = false;
                }
                Ok(())
            }
            Err(e) => Err(Error::io("", &e)),
        }
    }

    /// Now and then looks at the control socket of an upgraded connection, so that writes to a
    /// peer that closed fail (as they do with the kernel) even when nobody else watches the
    /// socket: reading it only when it has something. While the hub handles the socket's
    /// events, its flags tell; otherwise one poll asks the socket.
    fn look_at_control(&self, state: &mut State) -> Result<()> {
        let now = coarse_now();
        if now.saturating_sub(state.tcp.tcp_checked) < TCP_CHECK_INTERVAL {
            return Ok(());
        }
        state.tcp.tcp_checked = now;
        let news = if self.hub.get().is_some_and(|hub| hub.socket_events_handled(TCP_CHECK_INTERVAL)) {
            state.tcp.io.readable || state.tcp.io.ended
        } else {
            state.tcp.socket.as_ref().is_some_and(Socket::has_news)
        };
        if news {
            self.progress_stream(state);
            if !state.rx.eof {
                Self::check_control(state)?;
            }
        } else {
            self.drive(state);
        }
        Ok(())
    }

    /// Whether a framed peer closed: its TCP stream ends only when it closed altogether (its
    /// half-close is a FIN frame). The socket says so even while unread bytes come first, so
    /// that writes over UCX to a peer that is gone fail as they would on its kernel's reset.
    fn peer_closed(state: &State) -> bool {
        state.neg.as_deref().is_some_and(Negotiation::peer_framed) && (state.rx.eof || state.tcp.io.ended)
    }

    /// Fails a write to a framed peer that closed: with the reset or failure of its control
    /// socket, otherwise with a broken pipe.
    fn check_peer_closed(state: &State) -> Result<()> {
        if !Self::peer_closed(state) {
            return Ok(());
        }
        Self::check_control(state)?;
        Err(Error::new(Status::BrokenPipe, "Broken pipe"))
    }

    /// Fails a write to a hadroNIO peer whose control socket was reset or failed, looking at the
    /// socket's state rather than reading it: bytes the peer sent before may still wait there,
    /// ahead of the reset, and stay readable (the kernel fails writes to a reset connection
    /// while its received bytes can still be read, too).
    fn check_control(state: &State) -> Result<()> {
        let Some(socket) = &state.tcp.socket else { return Ok(()) };
        if !socket.hung_up() {
            return Ok(());
        }
        let error = socket.take_error().ok().flatten();
        match error.and_then(|e| Self::control_error(state, &e)) {
            Some(error) => Err(error),
            None => Err(Error::new(Status::Reset, "Connection reset by peer")),
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.lock().failure.is_fatal()
    }

    /// How long a pending transfer from or into the caller's memory may still take, if it may
    /// be given up at all.
    fn abandon_wait(&self, state: &State) -> Option<Duration> {
        if Self::peer_gone(state) {
            Some(ABANDON_WAIT_PEER_GONE)
        } else if self.is_closed() {
            Some(ABANDON_WAIT_CLOSED)
        } else {
            None
        }
    }

    /// Whether a lingering close should wait for the peer to consume our UCX messages: not once
    /// the peer closed its side (its FIN came), when everything we sent has left (the messages
    /// wait in the peer's worker; our endpoint stays open).
    pub(super) fn peer_reading(&self, state: &State) -> bool {
        !state.rx.eof && state.link.as_ref().is_some_and(|l| !l.peer_caught_up())
    }

    /// Whether written bytes still wait in this process (staged for UCX, held back, or queued
    /// for the socket).
    pub(super) fn pending_tx(&self, state: &State) -> bool {
        state.neg.as_deref().is_some_and(Negotiation::has_output)
            || !state.tx.early.is_empty()
            || state.closing.fin_pending
            || state.link.as_ref().is_some_and(|l| !l.tx_idle())
    }

    /// Whether the background thread must keep progressing this connection's hub (written bytes
    /// wait, or the upgrade's probes need answers); clears the watch mark when not.
    pub fn has_pending_tx(&self) -> bool {
        let mut state = self.lock();
        if !state.closing.released {
            // Bytes that wait for the socket go out as it drains.
            self.drive(&mut state);
        }
        let pending = !state.closing.released && (self.pending_tx(&state) || Self::upgrading(&state));
        if !pending {
            self.watched.store(false, std::sync::atomic::Ordering::Release);
        }
        pending
    }

    /// Whether the connection is plain TCP for good, with no UCX link.
    pub(super) fn plain_for_good(state: &State) -> bool {
        state.neg.as_deref().is_some_and(Negotiation::settled_plain) && state.link.is_none()
    }

    /// Bytes the caller counts as written (or a FIN) that still wait in this process must go out
    /// even if no thread of the application comes back: the background thread watches them.
    pub(super) fn watch_pending_tx(&self, mut state: MutexGuard<'_, State>) {
        use std::sync::atomic::Ordering;
        if self.watched.load(Ordering::Acquire) || !self.pending_tx(&state) {
            return;
        }
        let hub = match self.hub.get() {
            Some(hub) => Some(hub.clone()),
            None => self.ensure_bound(&mut state).ok(),
        };
        if let (Some(hub), Some(me)) = (hub, self.arc()) {
            drop(state);
            self.watched.store(true, Ordering::Release);
            hub.watch_pending(me);
            background().adopt(hub);
        }
    }

    pub(super) fn writable_now(&self, state: &State) -> bool {
        if state.failure.is_fatal() || state.closing.output_shutdown || state.failure.writes_failed() {
            return true;
        }
        if state.phase != Phase::Connected {
            return false;
        }
        let Some(neg) = &state.neg else { return false };
        let peer_closed = Self::peer_closed(state);
        match neg.write_mode() {
            WriteMode::Hold => state.tx.early.len() < HOLD_LIMIT,
            WriteMode::Raw => state.tcp.io.writable || peer_closed,
            WriteMode::Frames => peer_closed || (!neg.has_output() && state.tcp.io.writable),
            WriteMode::Ucx => peer_closed || state.rx.eof || state.link.as_ref().is_some_and(|l| l.writable()),
        }
    }

    /// Writes from `regions`. Blocking writes return when everything was written (sent or
    /// staged); non-blocking ones may write less, possibly nothing.
    pub fn write(&self, regions: &[Region], blocking: bool) -> Result<usize> {
        let mut src = Cursor::new(regions);
        let mut polled = false;
        loop {
            let Some(mut state) = self.settle_user_tx(self.lock())? else { continue };
            if self.is_closed() {
                return Err(Error::closed());
            }
            // A plain connection writes to its socket first and binds only if it must wait
            // (below): a hub for a blocking channel without UCX is an epoll set and an event fd
            // of its own, two descriptors the kernel's channels do not hold.
            if blocking && self.hub.get().is_none() && !Self::plain_for_good(&state) {
                self.ensure_bound(&mut state)?;
            }
            Self::assume_ready_unbound(&self.hub, &mut state);
            if let Err(e) = self.write_now(&mut state, &mut src, blocking) {
                return self.write_failed(state, e, src.moved());
            }
            if state.link.as_ref().is_some_and(|l| l.user_tx_pending()) {
                continue;
            }
            if src.remaining() == 0 || (!blocking && (src.moved() > 0 || polled)) {
                let upgrading = Self::upgrading(&state);
                self.watch_pending_tx(state);
                self.progress_upgrade(upgrading);
                return Ok(src.moved());
            }
            if !blocking {
                let Some(hub) = self.hub.get() else { return Ok(src.moved()) };
                drop(state);
                hub.poll_now();
                polled = true;
                continue;
            }
            if Self::writes_in_kernel(&state) {
                let (state, result) = self.write_in_kernel(state, &mut src);
                if let Err(e) = result {
                    return self.write_failed(state, e, src.moved());
                }
                // Written whole: done, whatever another thread does to the channel meanwhile.
                if src.remaining() == 0 {
                    return Ok(src.moved());
                }
                continue;
            }
            let hub = self.ensure_bound(&mut state)?;
            let key = Some(state.id);
            // A writer that waits for credits stages after all at the deadline.
            let credit_deadline = state.link.as_ref().and_then(|l| l.credit_deadline()).filter(|d| *d > Instant::now());
            drop(state);
            hub.wait(key, &mut || self.is_closed() || self.writable_now(&self.lock()), credit_deadline);
        }
    }

    /// Whether a blocking write that must wait for room in the socket may wait in the kernel's
    /// `send`: the connection is plain TCP for good, and nothing of the negotiation or held back
    /// goes ahead of the caller's bytes. Such a write needs no hub (a channel that has none keeps
    /// its single descriptor, as the kernel's channels do).
    fn writes_in_kernel(state: &State) -> bool {
        state.phase == Phase::Connected
            && Self::plain_for_good(state)
            && state.tcp.socket.is_some()
            && state.tx.early.is_empty()
            && state.neg.as_deref().is_some_and(|n| n.write_mode() == WriteMode::Raw && n.urgent().is_none() && !n.has_output())
            && !state.closing.output_shutdown
            && !state.failure.is_fatal()
            && state.failure.output().is_none()
    }

    /// A blocking write of a plain connection, as the kernel's blocking channels write: one
    /// `sendmsg` that returns once the kernel took the bytes. `close` and `shutdownOutput` wake it
    /// by shutting the socket's output down (it returns what went, and the usual path reports
    /// the close or shutdown), and a release keeps the socket open until it left.
    fn write_in_kernel<'a>(&'a self, mut state: MutexGuard<'a, State>, src: &mut Cursor<'_>) -> (MutexGuard<'a, State>, Result<()>) {
        let raw = match state.tcp.enter_kernel(true) {
            Ok(Some(raw)) => raw,
            Ok(None) => return (state, Ok(())),
            Err(e) => return (state, Err(e)),
        };
        drop(state);
        let mut parts: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
        let count = src.gather(&mut parts);
        // SAFETY: no safe form: the socket lives in the state, which this write leaves unlocked
        // while it waits in the kernel; the descriptor stays open while `kernel.inside` counts
        // this write (a release defers its close until then).
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let sent = send_parts_waiting(fd, &parts[..count]);
        let mut state = self.lock();
        state.tcp.left_kernel(true);
        let result = match sent {
            Ok(n) => {
                src.advance(n);
                stats::add(Counter::BytesSentTcp, n as u64);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
            // The wake-up of a `close` or `shutdownOutput`: the usual path reports those.
            Err(_) if self.is_closed() || state.closing.output_shutdown => Ok(()),
            Err(e) => Err(Error::io("", &e)),
        };
        (state, result)
    }

    /// A large send from the caller's memory may still be in flight: then waits for it, even if
    /// the channel is being closed (an abortive close makes the peer discard it, which completes
    /// it), and returns `None` for the caller to look again; otherwise completes it if it is
    /// done and returns the state.
    fn settle_user_tx<'a>(&'a self, mut state: MutexGuard<'a, State>) -> Result<Option<MutexGuard<'a, State>>> {
        let Some(link) = state.link.as_mut().filter(|l| l.user_tx_pending()) else { return Ok(Some(state)) };
        if link.user_tx_done() {
            if let Err(e) = link.finish_user_tx() {
                self.set_fatal(&mut state, e.clone());
                return Err(e);
            }
            return Ok(Some(state));
        }
        let waiter = link.user_tx_waiter();
        let hub = self.hub.get().cloned();
        let key = Some(state.id);
        drop(state);
        if let (Some(hub), Some(waiter)) = (hub, waiter) {
            let since = Instant::now();
            while !waiter.done() {
                hub.wait(key, &mut || waiter.done() || self.failed(), Some(Instant::now() + Duration::from_millis(100)));
                let wait = self.abandon_wait(&self.lock());
                if !waiter.done() && wait.is_some_and(|w| since.elapsed() >= w) {
                    // A dead peer neither takes the message nor discards it.
                    let mut state = self.lock();
                    if let Some(link) = &mut state.link {
                        link.abandon_user_tx();
                    }
                    let error = Error::new(Status::Reset, "Connection reset by peer");
                    state.failure.fail_output(|| error.clone());
                    return Err(error);
                }
            }
        }
        Ok(None)
    }

    /// A write failed with `e` after `moved` bytes of this call: a peer gone for writing leaves
    /// what it sent readable, anything else but a shut-down output fails the connection. What
    /// this call already wrote counts (the JDK's blocking write also returns its count when
    /// another thread shuts the output down).
    fn write_failed(&self, mut state: MutexGuard<'_, State>, e: Error, moved: usize) -> Result<usize> {
        match e.status {
            Status::OutputShutdown | Status::NotConnected => {}
            Status::Reset | Status::BrokenPipe => state.failure.fail_output(|| e.clone()),
            _ => self.set_fatal(&mut state, e.clone()),
        }
        if moved == 0 {
            return Err(e);
        }
        log::debug!("connection {}: a write ends after {moved} bytes: {e}", self.serial);
        self.watch_pending_tx(state);
        Ok(moved)
    }
}
