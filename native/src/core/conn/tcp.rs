//! The kernel's side of a connection: its socket, its addresses, the socket options the
//! application set (as far as the connection's own use of the socket lets them show), and the
//! blocking reads and writes that wait inside the kernel's calls.

use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use super::options::{get_socket_option, set_socket_option, OPT_SO_KEEPALIVE, OPT_TCP_NODELAY};
use super::close::SocketEnd;
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

/// Blocking reads and writes of a plain connection that wait in the kernel's `recv` and `send`
/// (`Conn::read`, `Conn::write`).
#[derive(Default)]
pub(super) struct KernelWaits {
    /// The socket was made blocking (every other call on it still passes `MSG_DONTWAIT`).
    blocking: bool,
    /// The hub's epoll set does not hear of bytes arriving (`Hub::watch_reads`): these reads
    /// learn of them in `recv`. A read of another kind, or a selector, has it hear them again.
    pub(super) unwatched: bool,
    /// Reads and writes using the socket now (spinning, inside `recv` or `send`): it stays open
    /// until they left.
    pub(super) inside: usize,
    /// Those of them that write (inside `send`).
    writers: usize,
    /// The socket a release took while a call was inside, and how to close it once it left.
    pub(super) deferred: Option<(Socket, SocketEnd)>,
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
    /// Blocking reads and writes that wait in the kernel.
    pub(super) kernel: KernelWaits,
}

impl Tcp {
    /// A read or a write (`writes`) is about to wait in the kernel: makes the socket blocking
    /// (once) and counts the call as inside; the socket's descriptor, `None` if there is no socket.
    pub(super) fn enter_kernel(&mut self, writes: bool) -> Result<Option<RawFd>> {
        let Some(socket) = &self.socket else { return Ok(None) };
        let raw = socket.as_raw_fd();
        if !self.kernel.blocking {
            socket.set_blocking(true).map_err(|e| Error::io("", &e))?;
            self.kernel.blocking = true;
        }
        self.kernel.inside += 1;
        self.kernel.writers += usize::from(writes);
        Ok(Some(raw))
    }

    /// A read or a write (`writes`) left the kernel: the socket closes now if a release took it
    /// meanwhile and no other call is inside.
    pub(super) fn left_kernel(&mut self, writes: bool) {
        self.kernel.inside -= 1;
        self.kernel.writers -= usize::from(writes);
        if self.kernel.inside == 0 {
            if let Some((socket, end)) = self.kernel.deferred.take() {
                end.apply(socket);
            }
        }
    }

    /// Wakes reads that wait in `recv` on the socket (`Conn::read` on a plain connection) and,
    /// with `writers`, writes that wait in `send` (`Conn::write`): they return what they moved,
    /// and find the connection closed or its input shut down. A writer wakes only when the
    /// output is shut down, which sends the FIN after what the socket holds, as the close would.
    pub(super) fn wake_kernel_waiters(&self, writers: bool) {
        let kernel = &self.kernel;
        let how = if writers && kernel.writers > 0 {
            Shutdown::Both
        } else if kernel.inside > kernel.writers {
            Shutdown::Read
        } else {
            return;
        };
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown(how);
        }
    }

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
