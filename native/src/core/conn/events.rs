//! What wakes a connection (socket, UCX and timer events from its hub) and the selection keys
//! it tells.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use log::{log_enabled, Level};

use crate::core::hub::{Events, Hub};
use crate::core::readiness::{Key, Ready, OP_CONNECT, OP_READ, OP_WRITE};
use crate::core::stream::{self, Failure};
use crate::net::poller;

use super::{Conn, Phase};

impl Conn {
    // --- events -------------------------------------------------------------------------------

    /// The socket became readable/writable, got urgent data or failed (epoll).
    pub fn on_io_event(&self, events: u32) {
        {
            let mut state = self.lock();
            if events & (poller::READABLE | poller::HANGUP | poller::ERROR) != 0 {
                state.tcp.io.readable = true;
            }
            if events & (poller::HANGUP | poller::ERROR) != 0 {
                state.tcp.io.ended = true;
            }
            if events & (poller::WRITABLE | poller::ERROR) != 0 {
                state.tcp.io.writable = true;
            }
            if state.phase == Phase::Connected && !state.closing.released {
                if events & poller::URGENT != 0 {
                    let st = &mut *state;
                    let result = match (st.neg.as_deref_mut(), st.tcp.socket.as_ref()) {
                        (Some(neg), Some(socket)) => stream::urgent(neg, socket, &mut st.rx, Instant::now()),
                        _ => Ok(()),
                    };
                    if let Err(Failure::Negotiation(e)) = result {
                        self.set_fatal(&mut state, e);
                    }
                }
                self.flush_control(&mut state);
                if state.closing.input_shutdown || self.is_closed() {
                    self.discard_input(&mut state);
                } else {
                    // After a FIN too: whatever follows it is a violation, and the socket's end
                    // bounds the wait for the UCX messages the FIN announced.
                    self.progress_stream(&mut state);
                }
            }
        }
        self.notify_keys();
    }

    /// UCX completed something for this connection (receive, send, credits, probe, error).
    pub fn on_ucx_event(&self) {
        {
            let mut state = self.lock();
            if state.closing.released {
                return;
            }
            let mut pong = None;
            let mut ping = None;
            if let Some(link) = &mut state.link {
                link.shared().untouch();
                (ping, pong) = link.take_probes();
            }
            if log_enabled!(Level::Trace) && (ping.is_some() || pong.is_some()) {
                log::trace!("connection {}: probe ping {ping:?}, pong {pong:?}", self.serial);
            }
            if let Some(token) = ping {
                self.answer_probe(&mut state, token);
            }
            if let Some(token) = pong {
                if let Some(neg) = &mut state.neg {
                    neg.on_probe_answered(token);
                }
                self.drive(&mut state);
            }
            if let Some(link) = &mut state.link {
                if let Err(e) = link.flush() {
                    self.set_fatal(&mut state, e);
                }
            }
            if state.closing.input_shutdown {
                self.discard_input(&mut state);
            }
        }
        self.notify_keys();
    }

    /// A time the connection asked the background thread for has come: a negotiation deadline
    /// (offer wait, authentication, probe), or the wait for UCX messages a FIN announced.
    pub fn on_deadline(&self) {
        let id = {
            let mut state = self.lock();
            state.deadline_asked = None;
            let now = Instant::now();
            let mut acted = Self::announced_deadline(&state).is_some_and(|at| now >= at);
            if let Some(neg) = &mut state.neg {
                match neg.on_timeout(now) {
                    Ok(changed) => acted |= changed,
                    Err(e) => {
                        self.set_fatal(&mut state, e);
                        acted = true;
                    }
                }
            }
            self.drive(&mut state);
            if !acted {
                // A client's look for a stream that found none: its keys and waiters would wake
                // for nothing (a hundred fresh connections look seven times each).
                return;
            }
            state.id
        };
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_conn(id);
        }
    }

    /// The lane asked for by [`Conn::open_link`] is open (or could not be): the link opens now.
    pub fn on_lane(&self) {
        let id = {
            let mut state = self.lock();
            if let Some(identity) = state.upgrade.wanted.take().filter(|_| !state.closing.released) {
                self.open_link(&mut state, identity, false);
            }
            self.drive(&mut state);
            state.id
        };
        self.notify_keys();
        if let Some(hub) = self.hub.get() {
            hub.wake_conn(id);
        }
    }

    // --- selectors ----------------------------------------------------------------------------

    pub fn add_key(&self, key: &Arc<Key>) {
        let count = self.keys.lock().add(key);
        self.key_count.store(count, Ordering::Release);
    }

    pub fn remove_key(&self, key: &Arc<Key>) {
        let count = self.keys.lock().remove(key);
        self.key_count.store(count, Ordering::Release);
    }

    pub(super) fn notify_keys(&self) {
        if self.key_count.load(Ordering::Acquire) == 0 {
            return;
        }
        self.keys.lock().notify();
    }

    /// The operations this channel is ready for (`SelectionKey` bits). Control frames were
    /// taken when the socket reported them (see [`Conn::on_io_event`]), so OP_READ means a read
    /// returns bytes, EOF or an error (or, rarely, only takes a control frame that came since).
    pub fn ready_ops(&self) -> u32 {
        let mut state = self.lock();
        if self.hub.get().is_none() && state.phase == Phase::Connected && !state.closing.released {
            // No epoll watches an unbound connection's socket: look now.
            self.progress_stream(&mut state);
        }
        let mut ops = 0;
        match state.phase {
            Phase::Connecting => {
                if state.tcp.io.writable || state.failure.is_fatal() {
                    ops |= OP_CONNECT;
                }
            }
            Phase::Connected => {
                if self.readable_now(&state) {
                    ops |= OP_READ;
                }
                if self.writable_now(&state) {
                    ops |= OP_WRITE;
                }
            }
            Phase::Unconnected | Phase::Failed => {}
        }
        ops
    }
}

/// The hub's events go to the methods of the same names.
impl Events for Conn {
    fn on_io_event(&self, events: u32) {
        Conn::on_io_event(self, events);
    }

    fn on_ucx_event(&self) {
        Conn::on_ucx_event(self);
    }

    fn on_deadline(&self) {
        Conn::on_deadline(self);
    }

    fn on_lane(&self) {
        Conn::on_lane(self);
    }

    fn linger_step(&self) -> bool {
        Conn::linger_step(self)
    }

    fn has_pending_tx(&self) -> bool {
        Conn::has_pending_tx(self)
    }

    fn wants_watching(&self) -> bool {
        self.watched.load(Ordering::Acquire)
    }
}

impl Ready for Conn {
    fn ready_ops(&self) -> u32 {
        Conn::ready_ops(self)
    }

    fn forget(&self, key: &Arc<Key>, _hub: &Arc<Hub>) {
        self.remove_key(key);
    }
}
