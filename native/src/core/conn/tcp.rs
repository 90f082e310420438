//! The kernel's side of a connection: its socket, its addresses and the socket options the
//! application set, as far as the connection's own use of the socket lets them show.

use std::net::SocketAddr;
use std::time::Duration;

use super::read::KernelReads;
use super::options::{get_socket_option, set_socket_option, OPT_SO_KEEPALIVE, OPT_TCP_NODELAY};
use crate::core::error::{Error, Result};
use crate::net::socket::Socket;

/// Edge-triggered socket state, refreshed by epoll events and by would-block results.
#[derive(Default)]
pub(super) struct IoFlags {
    pub(super) readable: bool,
    pub(super) writable: bool,
    /// The socket reported the end of the peer's stream or a failure (`EPOLLRDHUP`, `EPOLLHUP`,
    /// `EPOLLERR`), whether or not reads have come that far.
    pub(super) ended: bool,
}

/// The kernel's side of a connection: its socket, addresses and what the application set on it.
pub(super) struct Tcp {
    pub(super) socket: Option<Socket>,
    pub(super) bound_local: bool,
    pub(super) remote: Option<SocketAddr>,
    pub(super) io: IoFlags,
    /// When the write path last looked at the control socket (on the coarse clock).
    pub(super) tcp_checked: Duration,
    /// The application's `SO_KEEPALIVE` once the connection's own liveness timers own the
    /// kernel's keepalive (see `watch_liveness`); `None` before.
    pub(super) user_keepalive: Option<bool>,
    /// The application's `TCP_NODELAY` once the control socket has it on for good (a hadroNIO
    /// peer: control frames are small and must not wait for the peer's delayed ACK).
    pub(super) user_nodelay: Option<bool>,
    /// Blocking reads that wait in the kernel.
    pub(super) kernel: KernelReads,
}

impl Tcp {
    /// A hadroNIO peer's socket carries control frames, a few bytes each, whose delay is the
    /// connection's (the end of a stream waits for FIN): Nagle's algorithm would hold one back
    /// until the peer's delayed ACK, up to 40 ms. The application's `TCP_NODELAY` stays what it
    /// set, as far as it can tell.
    pub(super) fn control_frames_without_delay(&mut self) {
        let Some(socket) = &self.socket else { return };
        let user = socket.get_int(libc::IPPROTO_TCP, libc::TCP_NODELAY).map(|v| v != 0).unwrap_or(false);
        if socket.set_int(libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).is_ok() {
            self.user_nodelay = Some(user);
        }
    }

    /// Lets the kernel fail the socket once the peer has not answered for `millis` (see
    /// `Socket::set_liveness`). The application's `SO_KEEPALIVE` stays what it set, as far as it
    /// can tell. Nothing to do when the timers are on already or `millis` is 0.
    pub(super) fn watch_liveness(&mut self, millis: u64) -> std::io::Result<()> {
        let Some(socket) = &self.socket else { return Ok(()) };
        if millis == 0 || self.user_keepalive.is_some() {
            return Ok(());
        }
        let user = socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE).map(|v| v != 0).unwrap_or(false);
        socket.set_liveness(millis)?;
        self.user_keepalive = Some(user);
        Ok(())
    }

    /// Sets a socket option; `SO_KEEPALIVE` and `TCP_NODELAY` are only remembered while the
    /// connection keeps them on for its own use.
    pub(super) fn set_option(&mut self, option: i32, value: i32) -> Result<()> {
        let socket = self.socket.as_ref().ok_or_else(Error::closed)?;
        if option == OPT_SO_KEEPALIVE && self.user_keepalive.is_some() {
            self.user_keepalive = Some(value != 0);
            return Ok(());
        }
        if option == OPT_TCP_NODELAY && self.user_nodelay.is_some() {
            self.user_nodelay = Some(value != 0);
            return Ok(());
        }
        set_socket_option(socket, option, value)
    }

    /// A socket option as the application set it.
    pub(super) fn get_option(&self, option: i32) -> Result<i32> {
        let socket = self.socket.as_ref().ok_or_else(Error::closed)?;
        match (option, self.user_keepalive, self.user_nodelay) {
            (OPT_SO_KEEPALIVE, Some(user), _) => Ok(user as i32),
            (OPT_TCP_NODELAY, _, Some(user)) => Ok(user as i32),
            _ => get_socket_option(socket, option),
        }
    }
}
