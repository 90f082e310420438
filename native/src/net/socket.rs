//! Non-blocking kernel TCP sockets: the connection's first leg, its control and liveness channel,
//! and the whole data path when a connection is not upgraded.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::{c_int, c_void};

/// `SIOCATMARK` (linux/sockios.h), which the libc crate does not declare.
const SIOCATMARK: libc::Ioctl = 0x8905;

fn cvt(result: c_int) -> io::Result<c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn cvt_size(result: isize) -> io::Result<usize> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result as usize)
    }
}

/// Encodes `addr` for a socket of the given family; IPv4 addresses become IPv4-mapped IPv6
/// addresses on dual-stack sockets.
fn to_sockaddr(addr: &SocketAddr, ipv6: bool) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let addr = match (addr, ipv6) {
        (SocketAddr::V4(v4), true) => {
            SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0))
        }
        _ => *addr,
    };
    match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than and suitably aligned for `sockaddr_in`.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            (storage, size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: `sockaddr_storage` is larger than and suitably aligned for `sockaddr_in6`.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (storage, size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

/// Decodes a kernel socket address; IPv4-mapped IPv6 addresses are reported as IPv4, as the JDK
/// does.
fn from_sockaddr(storage: &libc::sockaddr_storage) -> io::Result<SocketAddr> {
    match storage.ss_family as c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`.
            let sin = unsafe { &*(storage as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Ok(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a `sockaddr_in6`.
            let sin6 = unsafe { &*(storage as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            match ip.to_ipv4_mapped() {
                Some(v4) => Ok(SocketAddr::V4(SocketAddrV4::new(v4, port))),
                None => Ok(SocketAddr::V6(SocketAddrV6::new(ip, port, sin6.sin6_flowinfo, sin6.sin6_scope_id))),
            }
        }
        family => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected address family {family}"))),
    }
}

/// Whether this host can create IPv6 sockets (then every socket is a dual-stack IPv6 socket, as
/// with the JDK).
pub fn ipv6_available() -> bool {
    // SAFETY: plain socket creation; the descriptor is closed right away.
    let fd = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` was just created and is owned here.
    unsafe { libc::close(fd) };
    true
}

/// A non-blocking TCP socket.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
    ipv6: bool,
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Socket {
    /// A new stream socket, dual-stack IPv6 if `ipv6`, else IPv4.
    pub fn new(ipv6: bool) -> io::Result<Socket> {
        let family = if ipv6 { libc::AF_INET6 } else { libc::AF_INET };
        // SAFETY: plain socket creation.
        let fd = cvt(unsafe {
            libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        })?;
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let socket = Socket { fd: unsafe { OwnedFd::from_raw_fd(fd) }, ipv6 };
        if ipv6 {
            socket.set_int(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0)?;
        }
        Ok(socket)
    }

    pub fn is_ipv6(&self) -> bool {
        self.ipv6
    }

    /// Whether `addr` can be used with this socket (an IPv4 socket cannot reach IPv6 addresses).
    pub fn accepts(&self, addr: &SocketAddr) -> bool {
        self.ipv6 || addr.is_ipv4()
    }

    pub fn bind(&self, addr: &SocketAddr) -> io::Result<()> {
        let (storage, len) = to_sockaddr(addr, self.ipv6);
        // SAFETY: `storage` holds a valid address of `len` bytes.
        cvt(unsafe { libc::bind(self.as_raw_fd(), &storage as *const _ as *const libc::sockaddr, len) })?;
        Ok(())
    }

    pub fn listen(&self, backlog: i32) -> io::Result<()> {
        // SAFETY: plain syscall on an owned descriptor.
        cvt(unsafe { libc::listen(self.as_raw_fd(), backlog) })?;
        Ok(())
    }

    /// Starts connecting: `Ok(true)` if connected at once, `Ok(false)` if in progress.
    pub fn connect(&self, addr: &SocketAddr) -> io::Result<bool> {
        let (storage, len) = to_sockaddr(addr, self.ipv6);
        // SAFETY: `storage` holds a valid address of `len` bytes.
        let result = unsafe { libc::connect(self.as_raw_fd(), &storage as *const _ as *const libc::sockaddr, len) };
        if result == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINPROGRESS) | Some(libc::EINTR) => Ok(false),
            _ => Err(error),
        }
    }

    /// The pending error of the socket (`SO_ERROR`), e.g. the outcome of a connect.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let code = self.get_int(libc::SOL_SOCKET, libc::SO_ERROR)?;
        Ok(if code == 0 { None } else { Some(io::Error::from_raw_os_error(code)) })
    }

    /// Accepts one pending connection, `Ok(None)` if there is none.
    pub fn accept(&self) -> io::Result<Option<(Socket, SocketAddr)>> {
        // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `storage` and `len` describe a writable buffer large enough for any address.
        let fd = unsafe {
            libc::accept4(
                self.as_raw_fd(),
                &mut storage as *mut _ as *mut libc::sockaddr,
                &mut len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            let error = io::Error::last_os_error();
            return match error.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                // The peer gave up before we accepted: try the next one later.
                Some(libc::ECONNABORTED) => Ok(None),
                _ => Err(error),
            };
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let socket = Socket { fd: unsafe { OwnedFd::from_raw_fd(fd) }, ipv6: self.ipv6 };
        Ok(Some((socket, from_sockaddr(&storage)?)))
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `storage` and `len` describe a writable buffer.
        cvt(unsafe { libc::getsockname(self.as_raw_fd(), &mut storage as *mut _ as *mut libc::sockaddr, &mut len) })?;
        from_sockaddr(&storage)
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `storage` and `len` describe a writable buffer.
        cvt(unsafe { libc::getpeername(self.as_raw_fd(), &mut storage as *mut _ as *mut libc::sockaddr, &mut len) })?;
        from_sockaddr(&storage)
    }

    /// Receives into `buf`. `Ok(0)` means end of stream (for a non-empty `buf`); `WouldBlock` if
    /// nothing is available.
    pub fn recv(&self, buf: &mut [u8], peek: bool) -> io::Result<usize> {
        let flags = if peek { libc::MSG_PEEK } else { 0 };
        loop {
            // SAFETY: `buf` is a valid writable region of `buf.len()` bytes.
            let result = unsafe { libc::recv(self.as_raw_fd(), buf.as_mut_ptr() as *mut c_void, buf.len(), flags) };
            match cvt_size(result) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    /// The unread urgent byte (`recv` with `MSG_OOB`): `Ok(None)` if there is none (never
    /// sent, already read, passed by ordinary reads, or the stream ended), `WouldBlock` if its
    /// mark is known but the byte has not arrived yet, `NotConnected` once the connection was
    /// reset (ordinary reads still get the bytes that came before).
    pub fn recv_urgent(&self) -> io::Result<Option<u8>> {
        let mut byte = 0u8;
        loop {
            // SAFETY: reads at most one byte into a local.
            let result = unsafe { libc::recv(self.as_raw_fd(), &mut byte as *mut u8 as *mut c_void, 1, libc::MSG_OOB) };
            match cvt_size(result) {
                Ok(1) => return Ok(Some(byte)),
                Ok(_) => return Ok(None),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the read position is at an urgent mark (`SIOCATMARK`).
    pub fn at_mark(&self) -> io::Result<bool> {
        let mut answer: c_int = 0;
        // SAFETY: the ioctl writes one `int`.
        cvt(unsafe { libc::ioctl(self.as_raw_fd(), SIOCATMARK, &mut answer as *mut c_int) })?;
        Ok(answer != 0)
    }

    /// Bytes readable before the next urgent mark (`SIOCINQ`: all readable bytes without one).
    pub fn before_mark(&self) -> io::Result<usize> {
        let mut answer: c_int = 0;
        // SAFETY: the ioctl writes one `int`.
        cvt(unsafe { libc::ioctl(self.as_raw_fd(), libc::FIONREAD, &mut answer as *mut c_int) })?;
        Ok(answer.max(0) as usize)
    }

    /// Sends one byte of urgent data; `Ok(false)` if the socket cannot take it now.
    pub fn send_urgent(&self, byte: u8) -> io::Result<bool> {
        loop {
            // SAFETY: sends one byte from a local.
            let result = unsafe {
                libc::send(self.as_raw_fd(), &byte as *const u8 as *const c_void, 1, libc::MSG_OOB | libc::MSG_NOSIGNAL)
            };
            match cvt_size(result) {
                Ok(n) => return Ok(n == 1),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends the given buffers in order (one `sendmsg`); returns how many bytes the kernel took.
    pub fn send_vectored(&self, parts: &[&[u8]]) -> io::Result<usize> {
        let mut iov: [libc::iovec; 4] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 4];
        let count = parts.len().min(iov.len());
        for (slot, part) in iov.iter_mut().zip(parts.iter()) {
            slot.iov_base = part.as_ptr() as *mut c_void;
            slot.iov_len = part.len();
        }
        // SAFETY: all-zero bytes are a valid `msghdr`.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = count as _;
        loop {
            // SAFETY: `msg` points to `count` valid iovecs describing readable memory.
            let result = unsafe { libc::sendmsg(self.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
            match cvt_size(result) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.send_vectored(&[buf])
    }

    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        let how = match how {
            std::net::Shutdown::Read => libc::SHUT_RD,
            std::net::Shutdown::Write => libc::SHUT_WR,
            std::net::Shutdown::Both => libc::SHUT_RDWR,
        };
        // SAFETY: plain syscall on an owned descriptor.
        cvt(unsafe { libc::shutdown(self.as_raw_fd(), how) })?;
        Ok(())
    }

    pub fn set_int(&self, level: c_int, name: c_int, value: c_int) -> io::Result<()> {
        // SAFETY: `value` is a valid `c_int` for the duration of the call.
        cvt(unsafe {
            libc::setsockopt(
                self.as_raw_fd(),
                level,
                name,
                &value as *const c_int as *const c_void,
                size_of::<c_int>() as libc::socklen_t,
            )
        })?;
        Ok(())
    }

    pub fn get_int(&self, level: c_int, name: c_int) -> io::Result<c_int> {
        let mut value: c_int = 0;
        let mut len = size_of::<c_int>() as libc::socklen_t;
        // SAFETY: `value`/`len` describe a writable `c_int`.
        cvt(unsafe {
            libc::getsockopt(self.as_raw_fd(), level, name, &mut value as *mut c_int as *mut c_void, &mut len)
        })?;
        Ok(value)
    }

    /// `SO_LINGER`: `None` disables lingering, `Some(seconds)` enables it.
    pub fn set_linger(&self, seconds: Option<i32>) -> io::Result<()> {
        let linger = libc::linger { l_onoff: seconds.is_some() as c_int, l_linger: seconds.unwrap_or(0) };
        // SAFETY: `linger` is valid for the duration of the call.
        cvt(unsafe {
            libc::setsockopt(
                self.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const c_void,
                size_of::<libc::linger>() as libc::socklen_t,
            )
        })?;
        Ok(())
    }

    pub fn linger(&self) -> io::Result<Option<i32>> {
        let mut linger = libc::linger { l_onoff: 0, l_linger: 0 };
        let mut len = size_of::<libc::linger>() as libc::socklen_t;
        // SAFETY: `linger`/`len` describe a writable `linger`.
        cvt(unsafe {
            libc::getsockopt(
                self.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &mut linger as *mut libc::linger as *mut c_void,
                &mut len,
            )
        })?;
        Ok(if linger.l_onoff != 0 { Some(linger.l_linger) } else { None })
    }

    /// Makes the kernel fail the connection with `ETIMEDOUT` once the peer's kernel has not been
    /// heard from for about `millis` (at most one keepalive interval more): keepalive probes
    /// start after a short idle time, and `TCP_USER_TIMEOUT` bounds both the unanswered probes
    /// and unacknowledged data. Meant for a socket that carries no user data (an upgraded
    /// connection's control socket); `millis` 0 changes nothing.
    pub fn set_liveness(&self, millis: u64) -> io::Result<()> {
        if millis == 0 {
            return Ok(());
        }
        let timers = LivenessTimers::for_timeout(millis);
        self.set_int(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, timers.idle_s)?;
        self.set_int(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, timers.interval_s)?;
        self.set_int(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, timers.count)?;
        self.set_int(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, timers.user_timeout_ms)?;
        self.set_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)
    }

    /// Bytes received and not yet read (`FIONREAD`).
    pub fn pending_bytes(&self) -> usize {
        let mut count: c_int = 0;
        // SAFETY: FIONREAD writes one `c_int` to the live local.
        let result = unsafe { libc::ioctl(self.as_raw_fd(), libc::FIONREAD, &mut count) };
        if result < 0 {
            0
        } else {
            count.max(0) as usize
        }
    }

    /// Whether the peer has shut down its sending side (its FIN arrived), without reading.
    pub fn peer_write_closed(&self) -> bool {
        let mut fd = libc::pollfd { fd: self.as_raw_fd(), events: libc::POLLRDHUP, revents: 0 };
        // SAFETY: one valid `pollfd` on the stack, no waiting.
        let result = unsafe { libc::poll(&mut fd, 1, 0) };
        result > 0 && fd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
    }

    /// Whether the connection is over in both directions or failed (the peer reset it, or it
    /// timed out), whatever may still wait in the receive queue.
    pub fn hung_up(&self) -> bool {
        let mut fd = libc::pollfd { fd: self.as_raw_fd(), events: 0, revents: 0 };
        // SAFETY: one valid `pollfd` on the stack, no waiting.
        let result = unsafe { libc::poll(&mut fd, 1, 0) };
        result > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR) != 0
    }

    /// Closes abortively: the kernel sends RST instead of FIN.
    pub fn close_with_reset(self) {
        let _ = self.set_linger(Some(0));
        drop(self);
    }
}

/// Kernel timers that detect a silent peer within a timeout (see [`Socket::set_liveness`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LivenessTimers {
    /// `TCP_KEEPIDLE`: seconds of silence before the first probe.
    pub idle_s: c_int,
    /// `TCP_KEEPINTVL`: seconds between probes.
    pub interval_s: c_int,
    /// `TCP_KEEPCNT`: unanswered probes before giving up (kernels without `TCP_USER_TIMEOUT`
    /// support in keepalive).
    pub count: c_int,
    /// `TCP_USER_TIMEOUT`: milliseconds of silence (with probes or data outstanding) before the
    /// kernel gives up.
    pub user_timeout_ms: c_int,
}

impl LivenessTimers {
    /// Probes every third of the timeout (at least every second, the kernel's granularity), so
    /// that several go unanswered before the timeout ends the connection.
    pub fn for_timeout(millis: u64) -> LivenessTimers {
        // Kernel limits: MAX_TCP_KEEPIDLE / MAX_TCP_KEEPINTVL 32767 s, MAX_TCP_KEEPCNT 127.
        let millis = millis.clamp(1, i32::MAX as u64);
        let step = (millis / 3000).clamp(1, 32767);
        let count = (millis / 1000).saturating_sub(step) / step;
        LivenessTimers {
            idle_s: step as c_int,
            interval_s: step as c_int,
            count: count.clamp(1, 127) as c_int,
            user_timeout_ms: millis as c_int,
        }
    }
}

/// Helper for addresses passed from Java: raw address bytes (4 or 16), scope id and port.
pub fn socket_addr(ip: &[u8], scope_id: u32, port: u16) -> Option<SocketAddr> {
    match ip.len() {
        4 => {
            let octets: [u8; 4] = ip.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(octets)), port))
        }
        16 => {
            let octets: [u8; 16] = ip.try_into().ok()?;
            Some(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(octets), port, 0, scope_id)))
        }
        _ => None,
    }
}

/// Encodes an address for Java: `[ip length][ip bytes][port: u16 BE][scope id: u32 BE]`.
pub fn encode_addr(addr: &SocketAddr) -> Vec<u8> {
    let mut out = Vec::with_capacity(23);
    match addr {
        SocketAddr::V4(v4) => {
            out.push(4);
            out.extend_from_slice(&v4.ip().octets());
            out.extend_from_slice(&v4.port().to_be_bytes());
            out.extend_from_slice(&0u32.to_be_bytes());
        }
        SocketAddr::V6(v6) => {
            out.push(16);
            out.extend_from_slice(&v6.ip().octets());
            out.extend_from_slice(&v6.port().to_be_bytes());
            out.extend_from_slice(&v6.scope_id().to_be_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_round_trip_as_ipv4() {
        let addr: SocketAddr = "127.0.0.1:4242".parse().unwrap();
        let (storage, _) = to_sockaddr(&addr, true);
        assert_eq!(storage.ss_family as c_int, libc::AF_INET6);
        assert_eq!(from_sockaddr(&storage).unwrap(), addr);
        let (storage, _) = to_sockaddr(&addr, false);
        assert_eq!(storage.ss_family as c_int, libc::AF_INET);
        assert_eq!(from_sockaddr(&storage).unwrap(), addr);
    }

    #[test]
    fn loopback_connect_send_receive() {
        let ipv6 = ipv6_available();
        let listener = Socket::new(ipv6).unwrap();
        listener.set_int(libc::SOL_SOCKET, libc::SO_REUSEADDR, 1).unwrap();
        listener.bind(&"127.0.0.1:0".parse().unwrap()).unwrap();
        listener.listen(8).unwrap();
        let server_addr = listener.local_addr().unwrap();
        assert_ne!(server_addr.port(), 0);
        let client = Socket::new(ipv6).unwrap();
        let _ = client.connect(&server_addr).unwrap();
        let mut accepted = None;
        for _ in 0..1000 {
            if let Some(pair) = listener.accept().unwrap() {
                accepted = Some(pair);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (server, peer) = accepted.expect("no connection accepted");
        assert_eq!(peer, client.local_addr().unwrap());
        assert!(client.take_error().unwrap().is_none());
        assert_eq!(client.send_vectored(&[b"he", b"llo"]).unwrap(), 5);
        let mut buf = [0u8; 16];
        let mut got = 0;
        for _ in 0..1000 {
            match server.recv(&mut buf[got..], false) {
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(std::time::Duration::from_millis(1)),
                Err(e) => panic!("{e}"),
            }
            if got == 5 {
                break;
            }
        }
        assert_eq!(&buf[..5], b"hello");
    }

    #[test]
    fn liveness_timers_fit_the_timeout() {
        let t = LivenessTimers::for_timeout(4000);
        assert_eq!(t, LivenessTimers { idle_s: 1, interval_s: 1, count: 3, user_timeout_ms: 4000 });
        let t = LivenessTimers::for_timeout(60_000);
        assert_eq!((t.idle_s, t.interval_s, t.count, t.user_timeout_ms), (20, 20, 2, 60_000));
        let t = LivenessTimers::for_timeout(300);
        assert_eq!((t.idle_s, t.interval_s, t.count, t.user_timeout_ms), (1, 1, 1, 300));
        let t = LivenessTimers::for_timeout(86_400_000);
        assert_eq!((t.idle_s, t.interval_s, t.count), (28_800, 28_800, 2));
        for millis in [1, 999, 1000, 2500, 4000, 10_000, 123_456, 86_400_000] {
            let t = LivenessTimers::for_timeout(millis);
            assert!(t.idle_s >= 1 && t.interval_s >= 1 && (1..=127).contains(&t.count), "{millis}: {t:?}");
            // The probes fit in the timeout (or are as few and as early as the kernel allows).
            assert!(
                (t.idle_s + t.count * t.interval_s) as u64 * 1000 <= millis.max(2000),
                "{millis}: {t:?}"
            );
        }
    }

    #[test]
    fn liveness_sets_keepalive_and_user_timeout() {
        let socket = Socket::new(ipv6_available()).unwrap();
        assert_eq!(socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE).unwrap(), 0);
        socket.set_liveness(0).unwrap();
        assert_eq!(socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE).unwrap(), 0);
        socket.set_liveness(4000).unwrap();
        assert_eq!(socket.get_int(libc::SOL_SOCKET, libc::SO_KEEPALIVE).unwrap(), 1);
        assert_eq!(socket.get_int(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE).unwrap(), 1);
        assert_eq!(socket.get_int(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL).unwrap(), 1);
        assert_eq!(socket.get_int(libc::IPPROTO_TCP, libc::TCP_KEEPCNT).unwrap(), 3);
        assert_eq!(socket.get_int(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT).unwrap(), 4000);
    }

    #[test]
    fn encodes_addresses_for_java() {
        let addr: SocketAddr = "10.1.2.3:258".parse().unwrap();
        assert_eq!(encode_addr(&addr), vec![4, 10, 1, 2, 3, 1, 2, 0, 0, 0, 0]);
        assert_eq!(socket_addr(&[10, 1, 2, 3], 0, 258), Some(addr));
        assert_eq!(socket_addr(&[1, 2, 3], 0, 1), None);
    }
}
