//! Shutdown and close: FIN after the bytes written, lingering until they are delivered, the
//! abortive close, and the release of the socket and the UCX half.

use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use log::{debug, trace};

use super::{Conn, Phase, State};
use crate::core::error::{Error, Result, Status};
use crate::core::background::background;
use crate::core::iov::{Cursor, Region};
use crate::core::link::Link;
use crate::core::negotiation::{Negotiation, WriteMode};
use crate::net::poller;
use crate::net::socket::Socket;

impl Conn {
    /// Ends our stream: a FIN frame (with the count of our UCX messages) while it carries
    /// frames, a TCP FIN while it is raw; after held-back bytes, if any. `closing`: for a close.
    pub(super) fn send_fin(&self, state: &mut State, closing: bool) {
        let Some(neg) = state.neg.as_deref_mut() else { return };
        if neg.write_mode() == WriteMode::Hold || !state.tx.early.is_empty() {
            state.closing.fin_pending = true;
            return;
        }
        neg.on_shutdown();
        if neg.framed() {
            let messages = match (&state.link, neg.upgraded()) {
                (Some(link), true) => link.messages_committed(),
                _ => 0,
            };
            neg.fin(messages);
            self.flush_control(state);
        } else {
            self.flush_control(state);
            // Where a close releases the socket at once, closing it sends the FIN (after what the
            // socket holds), as the kernel's close does: a shutdown first would be one more system
            // call and one more event for the epoll sets the socket is still in (a selector's
            // thread would wake for it).
            if closing && self.releases_at_once(state) {
                return;
            }
            if let Some(socket) = &state.tcp.socket {
                let _ = socket.shutdown(Shutdown::Write);
            }
        }
    }

    /// Whether a close with nothing left to send releases the socket at once: nothing waits in
    /// this process or for the peer's reading, no read waits in the socket, and the peer sends
    /// no control frames that a graceful close would wait for.
    fn releases_at_once(&self, state: &State) -> bool {
        !self.pending_tx(state) && !self.peer_reading(state) && state.tcp.kernel.inside == 0 && !Self::closes_gracefully(state)
    }

    /// Whether the socket, once released, is left to the background thread until the peer closes
    /// too (see [`SocketEnd::Graceful`]). (Once the peer's end was read, nothing can come any more
    /// that closing would answer with a reset: the socket closes at once.)
    fn closes_gracefully(state: &State) -> bool {
        !state.rx.eof && state.neg.as_deref().is_some_and(Negotiation::peer_may_send_control)
    }

    pub fn shutdown_output(&self) -> Result<()> {
        let mut state = self.lock();
        if self.is_closed() {
            return Err(Error::closed());
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        if !state.closing.output_shutdown {
            state.closing.output_shutdown = true;
            // Take the peer's answer if it is there: the FIN then goes the right way.
            self.progress_stream(&mut state);
            self.send_fin(&mut state, false);
        }
        let id = state.id;
        // The FIN may wait behind written bytes the socket did not take yet.
        self.watch_pending_tx(state);
        self.notify_keys();
        // A writer blocked in this channel must see the shutdown (it returns what it wrote, or
        // fails if nothing, as with the JDK).
        if let Some(hub) = self.hub.get() {
            hub.wake_waiters_of(id);
        }
        Ok(())
    }

    pub fn shutdown_input(&self) -> Result<()> {
        let mut state = self.lock();
        if self.is_closed() {
            return Err(Error::closed());
        }
        if state.phase != Phase::Connected {
            return Err(Error::new(Status::NotConnected, "not connected"));
        }
        state.closing.input_shutdown = true;
        state.tcp.wake_kernel_waiters(false);
        self.discard_input(&mut state);
        let id = state.id;
        drop(state);
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_waiters_of(id);
        }
        Ok(())
    }

    /// After `shutdownInput`, arriving bytes are read and dropped so the peer never stalls.
    pub(super) fn discard_input(&self, state: &mut State) {
        state.rx.inbox.clear();
        let mut scratch = vec![0u8; 16 * 1024];
        loop {
            let regions = [Region::of(&mut scratch)];
            let mut dst = Cursor::new(&regions);
            let mut n = 0;
            let switched = state.neg.as_deref().is_some_and(Negotiation::peer_switched);
            if !switched {
                n += self.read_stream(state, Some(&mut dst)).unwrap_or(0);
                state.rx.inbox.clear();
            }
            if state.neg.as_deref().is_some_and(Negotiation::peer_switched) {
                if let Some(link) = &mut state.link {
                    n += link.read(&mut dst, false).unwrap_or(0);
                }
            }
            if n == 0 {
                break;
            }
        }
        if let Some(link) = &mut state.link {
            let _ = link.report_all();
        }
        self.drive(state);
    }

    /// Closes the channel: graceful (FIN after pending data), abortive (RST) if unread data is
    /// left or SO_LINGER is 0. Wakes threads blocked on the channel.
    pub fn close(&self) {
        if self.closed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let mut state = self.lock();
        if state.closing.released {
            return;
        }
        state.tcp.wake_kernel_waiters(true);
        let abort = state.closing.linger_seconds == Some(0);
        if !abort && state.phase == Phase::Connected && !state.failure.is_fatal() {
            // Take the peer's control frames, so that they do not count as unread data (which
            // would make the kernel reset the connection).
            if let Err(e) = self.read_stream(&mut state, None) {
                self.set_fatal(&mut state, e);
            }
        }
        if !abort && state.phase == Phase::Connected && !state.closing.output_shutdown && !state.failure.is_fatal() {
            state.closing.output_shutdown = true;
            self.send_fin(&mut state, true);
        }
        // A send from a writer's memory cannot outlive the close: abort instead of lingering.
        let abort = abort || state.link.as_ref().is_some_and(|l| l.user_tx_pending());
        let pending = self.pending_tx(&state) || self.peer_reading(&state);
        let hub = self.hub.get().cloned();
        let id = state.id;
        let lingers = match (pending && !abort && !state.failure.is_fatal(), hub.as_ref(), self.arc()) {
            (true, Some(hub), Some(me)) => {
                let linger = Duration::from_millis(state.settings.linger_ms);
                state.closing.linger_deadline = Some(Instant::now() + linger);
                drop(state);
                hub.linger(me);
                background().adopt(hub.clone());
                true
            }
            _ => {
                if pending && !abort && !state.failure.is_fatal() {
                    self.flush_blocking(&mut state, Instant::now() + Duration::from_secs(1));
                }
                self.release(&mut state, abort);
                drop(state);
                false
            }
        };
        match hub {
            // The hub's leader has the lingering close to look after.
            Some(hub) if lingers => hub.wake_conn(id),
            Some(hub) => hub.wake_waiters_of(id),
            None => {}
        }
    }

    /// Writes queued bytes of a connection that has no hub, waiting for the socket up to
    /// `deadline`.
    fn flush_blocking(&self, state: &mut State, deadline: Instant) {
        loop {
            self.drive(state);
            if !self.pending_tx(state) || state.failure.is_fatal() || state.failure.writes_failed() || Instant::now() >= deadline {
                return;
            }
            let Some(socket) = &state.tcp.socket else { return };
            let _ = poller::poll([(socket.as_raw_fd(), libc::POLLOUT)], Some(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// One step of a lingering close; true when the connection is released.
    pub fn linger_step(&self) -> bool {
        let mut state = self.lock();
        if state.closing.released {
            return true;
        }
        let _ = self.read_stream(&mut state, None);
        self.discard_input(&mut state);
        if let Some(link) = &mut state.link {
            if let Err(e) = link.flush() {
                self.set_fatal(&mut state, e);
            }
        }
        self.drive(&mut state);
        let idle = !self.pending_tx(&state) && !self.peer_reading(&state);
        let expired = state.closing.linger_deadline.is_some_and(|d| Instant::now() >= d);
        if idle || expired || state.failure.is_fatal() || state.rx.eof || state.failure.writes_failed() {
            if !idle {
                debug!("connection {}: lingering close gave up with data undelivered", self.serial);
            }
            self.release(&mut state, !idle);
            return true;
        }
        false
    }

    fn release(&self, state: &mut State, abort: bool) {
        if state.closing.released {
            return;
        }
        state.closing.released = true;
        Self::learn(state);
        let graceful = Self::closes_gracefully(state);
        // Unread application data makes the close abortive, as with the kernel. A socket that
        // closes at once is reset by the kernel itself if it holds unread bytes, so only one
        // that would close gracefully is asked.
        let unread = Self::unread_here(state) || (graceful && Self::unread_in_socket(state));
        let end = if abort || unread {
            SocketEnd::Reset
        } else if graceful {
            SocketEnd::Graceful
        } else {
            SocketEnd::Close
        };
        if let Some(hub) = self.hub.get() {
            // Closing a descriptor takes it out of every epoll set; only a socket that stays
            // open for a while (closed gracefully, or after a read that waits in it) is taken
            // out first.
            let stays_open = matches!(end, SocketEnd::Graceful) || state.tcp.kernel.inside > 0;
            hub.unregister_conn(state.id, state.tcp.socket.as_ref().filter(|_| stays_open).map(|s| s.as_raw_fd()));
        }
        if let Some(mut link) = state.link.take() {
            if Self::peer_vanished(state, &link) {
                link.lane().mark_lost();
            }
            if !link.teardown() {
                self.bury(link);
            }
        }
        if log::log_enabled!(log::Level::Trace) {
            trace!("connection {}: releasing (abort {abort}, unread {unread})", self.serial);
        }
        if let Some(socket) = state.tcp.socket.take() {
            if state.tcp.kernel.inside > 0 {
                // A read waits in `recv` on this socket (`close` woke it): the descriptor stays
                // open until it left, so that it cannot read from another socket that gets the
                // same number.
                state.tcp.kernel.deferred = Some((socket, end));
            } else {
                end.apply(socket);
            }
        }
        debug!("connection {} released", self.serial);
    }

    /// Whether application data arrived that nobody read. Control frames do not count (the last
    /// read took them); raw bytes and DATA bytes do.
    pub(super) fn unread(state: &State) -> bool {
        Self::unread_here(state) || Self::unread_in_socket(state)
    }

    /// Application data that this process took from the socket or UCX and nobody read.
    fn unread_here(state: &State) -> bool {
        state.neg.as_deref().is_some_and(Negotiation::data_pending)
            || !state.rx.inbox.is_empty()
            || state.link.as_ref().is_some_and(|l| l.readable())
    }

    /// Raw stream bytes that wait in the socket.
    fn unread_in_socket(state: &State) -> bool {
        let raw = state.neg.as_deref().is_none_or(|n| matches!(n.next(), crate::core::negotiation::Next::Raw(_)));
        raw && state.tcp.socket.as_ref().is_some_and(|s| s.pending_bytes() > 0)
    }

    /// Whether an upgraded connection's peer went away without closing it (its process may have
    /// died in the middle of a UCX message to our worker).
    fn peer_vanished(state: &State, link: &Link) -> bool {
        let fin = state.neg.as_deref().and_then(Negotiation::peer_fin);
        link.has_endpoint() && ((state.rx.eof && fin.is_none()) || state.failure.is_fatal() || link.endpoint_error().is_some())
    }
}

/// How a released connection's socket is closed.
pub(super) enum SocketEnd {
    /// Abortively: the kernel sends RST (unread data, `SO_LINGER` 0, an abort).
    Reset,
    /// By the background thread, once the hadroNIO peer closed too: it still sends (control
    /// frames, or its mark if we close before it arrived), and closing on them would reset the
    /// connection and discard what our socket has not sent yet.
    Graceful,
    /// At once, as the kernel closes: FIN after what the socket still holds.
    Close,
}

impl SocketEnd {
    pub(super) fn apply(self, socket: Socket) {
        match self {
            SocketEnd::Reset => socket.close_with_reset(),
            SocketEnd::Graceful => background().close_gracefully(socket),
            SocketEnd::Close => drop(socket),
        }
    }
}
