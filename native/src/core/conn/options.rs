//! Socket options: they apply to the TCP socket (the control connection of an upgraded
//! connection, the whole connection otherwise); UCX has no equivalent of them.

use super::Conn;
use crate::core::error::{Error, Result};
use crate::net::socket::Socket;

/// Socket options; see `set_option`. KEEP IN SYNC: java/src/main/java/dev/hadronio/internal/Native.java
pub const OPT_TCP_NODELAY: i32 = 1;
pub const OPT_SO_SNDBUF: i32 = 2;
pub const OPT_SO_RCVBUF: i32 = 3;
pub const OPT_SO_KEEPALIVE: i32 = 4;
pub const OPT_SO_LINGER: i32 = 5;
pub const OPT_SO_REUSEADDR: i32 = 6;
pub const OPT_IP_TOS: i32 = 7;
pub const OPT_SO_REUSEPORT: i32 = 8;

impl Conn {
    pub fn set_option(&self, option: i32, value: i32) -> Result<()> {
        let mut state = self.lock();
        if option == OPT_SO_LINGER {
            state.closing.linger_seconds = if value < 0 { None } else { Some(value) };
        }
        state.tcp.set_option(option, value)
    }

    pub fn get_option(&self, option: i32) -> Result<i32> {
        self.lock().tcp.get_option(option)
    }
}

/// Applies a socket option to the TCP socket (the UCX path has no equivalent; values are kept
/// and reported back as the kernel has them).
pub fn set_socket_option(socket: &Socket, option: i32, value: i32) -> Result<()> {
    let result = match option {
        OPT_TCP_NODELAY => socket.set_int(libc::IPPROTO_TCP, libc::TCP_NODELAY, value),
        OPT_SO_SNDBUF => socket.set_int(libc::SOL_SOCKET, libc::SO_SNDBUF, value),
        OPT_SO_RCVBUF => socket.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, value),
        OPT_SO_KEEPALIVE => socket.set_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE, value),
        OPT_SO_LINGER => socket.set_linger(if value < 0 { None } else { Some(value) }),
        OPT_SO_REUSEADDR => socket.set_int(libc::SOL_SOCKET, libc::SO_REUSEADDR, value),
        OPT_SO_REUSEPORT => socket.set_int(libc::SOL_SOCKET, libc::SO_REUSEPORT, value),
        OPT_IP_TOS => {
            if socket.is_ipv6() {
                let _ = socket.set_int(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, value);
            }
            socket.set_int(libc::IPPROTO_IP, libc::IP_TOS, value)
        }
        _ => return Err(Error::invalid(format!("unknown socket option {option}"))),
    };
    result.map_err(|e| Error::io("setsockopt", &e))
}

pub fn get_socket_option(socket: &Socket, option: i32) -> Result<i32> {
    let result = match option {
        OPT_TCP_NODELAY => socket.get_int(libc::IPPROTO_TCP, libc::TCP_NODELAY),
        OPT_SO_SNDBUF => socket.get_int(libc::SOL_SOCKET, libc::SO_SNDBUF),
        OPT_SO_RCVBUF => socket.get_int(libc::SOL_SOCKET, libc::SO_RCVBUF),
        OPT_SO_KEEPALIVE => socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE),
        OPT_SO_LINGER => socket.linger().map(|l| l.unwrap_or(-1)),
        OPT_SO_REUSEADDR => socket.get_int(libc::SOL_SOCKET, libc::SO_REUSEADDR),
        OPT_SO_REUSEPORT => socket.get_int(libc::SOL_SOCKET, libc::SO_REUSEPORT),
        OPT_IP_TOS => socket.get_int(libc::IPPROTO_IP, libc::IP_TOS),
        _ => return Err(Error::invalid(format!("unknown socket option {option}"))),
    };
    result.map_err(|e| Error::io("getsockopt", &e))
}
