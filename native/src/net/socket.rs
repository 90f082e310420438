//! Non-blocking kernel TCP sockets: the connection's first leg, its control and liveness channel,
//! and the whole data path when a connection is not upgraded.

use std::io;
use std::io::{IoSlice, IoSliceMut};
use std::mem::{size_of, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::raw::{c_int, c_void};
use std::time::Duration;

use socket2::{Domain, SockAddr, TcpKeepalive, Type};

/// `SIOCATMARK` (linux/sockios.h), which the libc crate does not declare.
const SIOCATMARK: libc::Ioctl = 0x8905;

/// The most buffers one gathering send takes: a write of more sends the first ones and returns
/// short, as a partial write.
pub const MAX_PARTS: usize = 16;

fn cvt(result: c_int) -> io::Result<c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// `addr` for a socket of the given family: IPv4 addresses become IPv4-mapped IPv6 addresses on
/// dual-stack sockets.
fn to_sockaddr(addr: &SocketAddr, ipv6: bool) -> SockAddr {
    match (addr, ipv6) {
        (SocketAddr::V4(v4), true) => SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0)).into(),
        _ => (*addr).into(),
    }
}

/// A kernel socket address; IPv4-mapped IPv6 addresses are reported as IPv4, as the JDK does.
fn from_sockaddr(addr: &SockAddr) -> io::Result<SocketAddr> {
    match addr.as_socket() {
        Some(SocketAddr::V6(v6)) => Ok(match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, v6.port())),
            None => SocketAddr::V6(v6),
        }),
        Some(v4) => Ok(v4),
        None => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected address family {}", addr.family()))),
    }
}

/// `buf` as the possibly uninitialised memory a receive writes into.
fn uninit(buf: &mut [u8]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: `MaybeUninit<u8>` has the layout of `u8`, and receives only write initialised bytes
    // into it, so `buf` stays initialised.
    unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) }
}

/// Retries `call` while it is interrupted by a signal.
fn retry<T>(mut call: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match call() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Whether this host can create IPv6 sockets (then every socket is a dual-stack IPv6 socket, as
/// with the JDK).
pub fn ipv6_available() -> bool {
    socket2::Socket::new(Domain::IPV6, Type::STREAM.cloexec(), None).is_ok()
}

/// A non-blocking TCP socket.
#[derive(Debug)]
pub struct Socket {
    inner: socket2::Socket,
    ipv6: bool,
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

impl Socket {
    /// A new stream socket, dual-stack IPv6 if `ipv6`, else IPv4.
    pub fn new(ipv6: bool) -> io::Result<Socket> {
        let domain = if ipv6 { Domain::IPV6 } else { Domain::IPV4 };
        let inner = socket2::Socket::new(domain, Type::STREAM.nonblocking().cloexec(), None)?;
        if ipv6 {
            inner.set_only_v6(false)?;
        }
        Ok(Socket { inner, ipv6 })
    }

    pub fn is_ipv6(&self) -> bool {
        self.ipv6
    }

    /// Whether `addr` can be used with this socket (an IPv4 socket cannot reach IPv6 addresses).
    pub fn accepts(&self, addr: &SocketAddr) -> bool {
        self.ipv6 || addr.is_ipv4()
    }

    pub fn bind(&self, addr: &SocketAddr) -> io::Result<()> {
        self.inner.bind(&to_sockaddr(addr, self.ipv6))
    }

    pub fn listen(&self, backlog: i32) -> io::Result<()> {
        self.inner.listen(backlog)
    }

    /// Starts connecting: `Ok(true)` if connected at once, `Ok(false)` if in progress.
    pub fn connect(&self, addr: &SocketAddr) -> io::Result<bool> {
        match self.inner.connect(&to_sockaddr(addr, self.ipv6)) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINPROGRESS) | Some(libc::EINTR)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The pending error of the socket (`SO_ERROR`), e.g. the outcome of a connect.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.take_error()
    }

    /// Accepts one pending connection as a non-blocking socket (whatever the listener is),
    /// `Ok(None)` if there is none; a blocking listener waits for one.
    pub fn accept(&self) -> io::Result<Option<(Socket, SocketAddr)>> {
        match self.inner.accept4(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) {
            Ok((inner, addr)) => Ok(Some((Socket { inner, ipv6: self.ipv6 }, from_sockaddr(&addr)?))),
            // Nothing pending, or the peer gave up before we accepted: try the next one later.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ECONNABORTED)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        from_sockaddr(&self.inner.local_addr()?)
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        from_sockaddr(&self.inner.peer_addr()?)
    }

    /// Receives into `buf`. `Ok(0)` means end of stream (for a non-empty `buf`); `WouldBlock` if
    /// nothing is available.
    ///
    /// This and every other receive and send here pass `MSG_DONTWAIT`: they never wait, even
    /// once [`Socket::set_blocking`] made the socket blocking for [`recv_parts`] and
    /// [`send_parts_waiting`].
    pub fn recv(&self, buf: &mut [u8], peek: bool) -> io::Result<usize> {
        let flags = if peek { libc::MSG_PEEK } else { 0 };
        retry(|| self.inner.recv_with_flags(uninit(buf), flags | libc::MSG_DONTWAIT))
    }

    /// Makes the socket blocking or not, so that [`recv_parts`], [`send_parts_waiting`] and
    /// [`Socket::accept`] can wait in the kernel. The other receives and sends here never wait
    /// either way.
    pub fn set_blocking(&self, blocking: bool) -> io::Result<()> {
        // One `ioctl` (`FIONBIO`) where `fcntl` takes two (read the flags, write them back).
        let non_blocking: c_int = c_int::from(!blocking);
        // SAFETY: FIONBIO reads one `int` from the live local.
        cvt(unsafe { libc::ioctl(self.as_raw_fd(), libc::FIONBIO, &non_blocking as *const c_int) }).map(|_| ())
    }

    /// The unread urgent byte (`recv` with `MSG_OOB`): `Ok(None)` if there is none (never
    /// sent, already read, passed by ordinary reads, or the stream ended), `WouldBlock` if its
    /// mark is known but the byte has not arrived yet, `NotConnected` once the connection was
    /// reset (ordinary reads still get the bytes that came before).
    pub fn recv_urgent(&self) -> io::Result<Option<u8>> {
        let mut byte = [0u8; 1];
        match retry(|| self.inner.recv_with_flags(uninit(&mut byte), libc::MSG_OOB | libc::MSG_DONTWAIT)) {
            Ok(1) => Ok(Some(byte[0])),
            Ok(_) => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(None),
            Err(e) => Err(e),
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
        match retry(|| self.inner.send_with_flags(&[byte], libc::MSG_OOB | libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)) {
            Ok(n) => Ok(n == 1),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends the given buffers in order (one `sendmsg`, at most [`MAX_PARTS`] of them; one
    /// buffer alone with [`Socket::send`]); returns how many bytes the kernel took.
    pub fn send_vectored(&self, parts: &[&[u8]]) -> io::Result<usize> {
        if let [part] = parts {
            return self.send(part);
        }
        let (slices, count) = io_slices(parts);
        retry(|| self.inner.send_vectored_with_flags(&slices[..count], libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT))
    }

    /// Sends one buffer: `send`, which the kernel takes without the copy of a message header and
    /// an iovec that `sendmsg` costs.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        retry(|| self.inner.send_with_flags(buf, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT))
    }

    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.inner.shutdown(how)
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
        self.inner.set_linger(seconds.map(|s| Duration::from_secs(s.max(0) as u64)))
    }

    pub fn linger(&self) -> io::Result<Option<i32>> {
        Ok(self.inner.linger()?.map(|d| d.as_secs().min(i32::MAX as u64) as i32))
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
        let keepalive = TcpKeepalive::new()
            .with_time(Duration::from_secs(timers.idle_s as u64))
            .with_interval(Duration::from_secs(timers.interval_s as u64))
            .with_retries(timers.count as u32);
        self.inner.set_tcp_keepalive(&keepalive)?;
        self.inner.set_tcp_user_timeout(Some(Duration::from_millis(timers.user_timeout_ms as u64)))?;
        self.inner.set_keepalive(true)
    }

    /// Bytes received and not yet read: the `FIONREAD` count [`Socket::before_mark`] asks for (0 if
    /// the socket cannot be asked).
    pub fn pending_bytes(&self) -> usize {
        self.before_mark().unwrap_or(0)
    }

    /// The socket's `poll` events among `events` (error and hang-up always count), asked without
    /// waiting.
    fn poll_now(&self, events: libc::c_short) -> io::Result<libc::c_short> {
        super::poller::poll([(self.as_raw_fd(), events)], Some(Duration::ZERO)).map(|[revents]| revents)
    }

    /// The receive side's `poll` events (`POLLIN`, `POLLPRI`, `POLLRDHUP`) and any error or
    /// hang-up, asked without waiting or reading.
    pub fn receive_events(&self) -> io::Result<libc::c_short> {
        self.poll_now(libc::POLLIN | libc::POLLPRI | libc::POLLRDHUP)
    }

    /// Whether a read would find something: bytes, the peer's FIN, a reset or another failure
    /// (true as well if the socket cannot be asked). One `poll`, without reading.
    pub fn has_news(&self) -> bool {
        self.receive_events().map_or(true, |r| r != 0)
    }

    /// Whether the connection is over in both directions or failed (the peer reset it, or it
    /// timed out), whatever may still wait in the receive queue.
    pub fn hung_up(&self) -> bool {
        self.poll_now(0).is_ok_and(|r| r & (libc::POLLHUP | libc::POLLERR) != 0)
    }

    /// Closes abortively: the kernel sends RST instead of FIN.
    pub fn close_with_reset(self) {
        let _ = self.set_linger(Some(0));
        drop(self);
    }
}

/// Receives into `bufs` (one `recvmsg`, at most [`MAX_PARTS`] of them) from a socket made blocking
/// ([`Socket::set_blocking`]). With `wait` it waits in the kernel until something arrives, the
/// stream ends or the input is shut down (`Ok(0)` for both), or the socket fails: one system call,
/// as a blocking read of the kernel's channels. Without, `WouldBlock` if nothing is there. The
/// caller keeps the socket open until this returns.
pub fn recv_parts(fd: BorrowedFd<'_>, bufs: &mut [IoSliceMut<'_>], wait: bool) -> io::Result<usize> {
    // SAFETY: an all-zero `msghdr` is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSliceMut` has the layout of `iovec`.
    msg.msg_iov = bufs.as_mut_ptr() as *mut libc::iovec;
    msg.msg_iovlen = bufs.len().min(MAX_PARTS) as _;
    let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
    retry(|| {
        // SAFETY: `msg` points to the `iovec`s of `bufs`, each writable memory of its length,
        // borrowed for this call.
        let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    })
}

/// Sends `bufs` in order (one `sendmsg`, at most [`MAX_PARTS`] of them) on a socket made blocking
/// ([`Socket::set_blocking`]), waiting in the kernel until it took them all, as a blocking write of
/// the kernel's channels does; it returns less when the output is shut down or the socket fails
/// after part of them went (an error if none did). The caller keeps the socket open until this
/// returns.
pub fn send_parts_waiting(fd: BorrowedFd<'_>, bufs: &[&[u8]]) -> io::Result<usize> {
    let (slices, count) = io_slices(bufs);
    // SAFETY: an all-zero `msghdr` is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` has the layout of `iovec`; `sendmsg` only reads them.
    msg.msg_iov = slices.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = count as _;
    retry(|| {
        // SAFETY: `msg` points to the `iovec`s of `slices`, each readable memory of its length,
        // borrowed for this call.
        let n = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    })
}

/// The first [`MAX_PARTS`] of `parts` as the `iovec`s of one `sendmsg`, and how many there are.
fn io_slices<'a>(parts: &[&'a [u8]]) -> ([IoSlice<'a>; MAX_PARTS], usize) {
    let mut slices = [IoSlice::new(&[]); MAX_PARTS];
    let count = parts.len().min(MAX_PARTS);
    for (slot, part) in slices.iter_mut().zip(parts.iter()) {
        *slot = IoSlice::new(part);
    }
    (slices, count)
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
    /// Probes every sixth of the timeout (at least every second, the kernel's granularity). The
    /// kernel looks at the user timeout only when its keepalive timer fires, once per interval
    /// after the last packet from the peer, and ends the connection at the first firing at
    /// least that long after it: the user timeout is the last whole number of intervals within
    /// the timeout, where the connection then ends. An outage survives when a probe sent after
    /// it ends is answered before then, so every outage shorter than the timeout less two
    /// intervals (20 s at 30 s) is survived, whatever the phase of the timer.
    pub fn for_timeout(millis: u64) -> LivenessTimers {
        // Kernel limits: MAX_TCP_KEEPIDLE / MAX_TCP_KEEPINTVL 32767 s, MAX_TCP_KEEPCNT 127.
        let millis = millis.clamp(1, i32::MAX as u64);
        let step = (millis / 6000).clamp(1, 32767);
        let count = (millis / 1000).saturating_sub(step) / step;
        let step_ms = step * 1000;
        let user_timeout_ms = if millis >= step_ms { millis / step_ms * step_ms } else { millis };
        LivenessTimers {
            idle_s: step as c_int,
            interval_s: step as c_int,
            count: count.clamp(1, 127) as c_int,
            user_timeout_ms: user_timeout_ms as c_int,
        }
    }

    /// Whether a connection whose peer was last heard at 0 survives an outage of the link from
    /// `cut_ms` for `outage_ms`, as the kernel's keepalive timer decides (tcp_keepalive_timer):
    /// at each firing it ends the connection when the peer has been silent for the user
    /// timeout, and otherwise sends a probe, which the peer answers at once unless the link is
    /// down.
    #[cfg(test)]
    fn survives(&self, cut_ms: u64, outage_ms: u64) -> bool {
        let interval = self.interval_s as u64 * 1000;
        let mut heard = 0;
        let mut firing = self.idle_s as u64 * 1000;
        while firing < cut_ms + outage_ms + 2 * interval {
            if firing - heard >= self.user_timeout_ms as u64 && firing > heard {
                return false;
            }
            if !(cut_ms..cut_ms + outage_ms).contains(&firing) {
                heard = firing;
                firing += self.idle_s as u64 * 1000;
            } else {
                firing += interval;
            }
        }
        true
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

/// An address encoded for Java (see [`encode_addr`]): at most 23 bytes, kept inline.
pub struct EncodedAddr {
    bytes: [u8; 23],
    len: usize,
}

impl EncodedAddr {
    fn push(&mut self, part: &[u8]) {
        self.bytes[self.len..self.len + part.len()].copy_from_slice(part);
        self.len += part.len();
    }
}

impl std::ops::Deref for EncodedAddr {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Encodes an address for Java: `[ip length][ip bytes][port: u16 BE][scope id: u32 BE]`.
pub fn encode_addr(addr: &SocketAddr) -> EncodedAddr {
    let mut out = EncodedAddr { bytes: [0; 23], len: 0 };
    match addr {
        SocketAddr::V4(v4) => {
            out.push(&[4]);
            out.push(&v4.ip().octets());
            out.push(&v4.port().to_be_bytes());
            out.push(&0u32.to_be_bytes());
        }
        SocketAddr::V6(v6) => {
            out.push(&[16]);
            out.push(&v6.ip().octets());
            out.push(&v6.port().to_be_bytes());
            out.push(&v6.scope_id().to_be_bytes());
        }
    }
    out
}

/// A connected pair over loopback, for tests: (client, accepted).
#[cfg(test)]
pub(crate) fn connected_pair() -> (Socket, Socket) {
    let ipv6 = ipv6_available();
    let listener = Socket::new(ipv6).unwrap();
    listener.bind(&"127.0.0.1:0".parse().unwrap()).unwrap();
    listener.listen(8).unwrap();
    let client = Socket::new(ipv6).unwrap();
    let _ = client.connect(&listener.local_addr().unwrap()).unwrap();
    for _ in 0..1000 {
        if let Some((server, _)) = listener.accept().unwrap() {
            return (client, server);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("no connection accepted");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_round_trip_as_ipv4() {
        let addr: SocketAddr = "127.0.0.1:4242".parse().unwrap();
        let mapped = to_sockaddr(&addr, true);
        assert_eq!(mapped.family() as c_int, libc::AF_INET6);
        assert_eq!(from_sockaddr(&mapped).unwrap(), addr);
        let plain = to_sockaddr(&addr, false);
        assert_eq!(plain.family() as c_int, libc::AF_INET);
        assert_eq!(from_sockaddr(&plain).unwrap(), addr);
    }

    #[test]
    fn loopback_connect_send_receive() {
        let (client, server) = connected_pair();
        assert_ne!(client.peer_addr().unwrap().port(), 0);
        assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
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

    extern "C" fn on_signal(_: c_int) {}

    /// A profiler's signals (async-profiler sends SIGPROF to every thread, its handler installed
    /// with `SA_RESTART`) make a `poll` that finds nothing ready fail with EINTR even with a zero
    /// timeout: the looks at a socket ask again rather than report an error (a failed connection)
    /// or nothing ready (a pending connection the selector would not see again).
    #[test]
    fn looks_at_a_socket_survive_signals() {
        // SAFETY: a handler that does nothing, installed for a signal nothing else here uses.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()), 0);
        }
        let (client, server) = connected_pair();
        assert_eq!(client.send(b"x").unwrap(), 1);
        let arrived = crate::net::poller::poll([(server.as_raw_fd(), libc::POLLIN)], Some(std::time::Duration::from_secs(5)));
        assert!(arrived.is_ok_and(|[r]| r & libc::POLLIN != 0), "the byte did not arrive");
        let (tx, rx) = std::sync::mpsc::channel();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = done.clone();
        let signaller = std::thread::spawn(move || {
            let target: libc::pthread_t = rx.recv().unwrap();
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: the target thread is alive until `done` is set, and it is set before
                // this thread is joined.
                unsafe { libc::pthread_kill(target, libc::SIGPROF) };
                sent += 1;
            }
            sent
        });
        // SAFETY: pthread_self has no preconditions.
        tx.send(unsafe { libc::pthread_self() }).unwrap();
        let started = std::time::Instant::now();
        let mut looks = 0u64;
        let mut failures = Vec::new();
        while started.elapsed() < std::time::Duration::from_millis(1500) {
            looks += 1;
            match client.receive_events() {
                Ok(0) => {}
                other => failures.push(format!("nothing to read: {other:?}")),
            }
            match server.receive_events() {
                Ok(r) if r & libc::POLLIN != 0 => {}
                other => failures.push(format!("a byte to read: {other:?}")),
            }
            match crate::net::poller::poll([(server.as_raw_fd(), libc::POLLIN)], Some(std::time::Duration::ZERO)) {
                Ok([r]) if r & libc::POLLIN != 0 => {}
                other => failures.push(format!("a byte to read, one poll: {other:?}")),
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let sent = signaller.join().unwrap();
        assert!(sent > 1000, "only {sent} signals sent");
        assert!(failures.is_empty(), "{} of {looks} looks failed under {sent} signals, first: {}", failures.len(), failures[0]);
    }

    #[test]
    fn liveness_timers_fit_the_timeout() {
        let t = LivenessTimers::for_timeout(4000);
        assert_eq!(t, LivenessTimers { idle_s: 1, interval_s: 1, count: 3, user_timeout_ms: 4000 });
        let t = LivenessTimers::for_timeout(30_000);
        assert_eq!((t.idle_s, t.interval_s, t.count, t.user_timeout_ms), (5, 5, 5, 30_000));
        let t = LivenessTimers::for_timeout(300);
        assert_eq!((t.idle_s, t.interval_s, t.count, t.user_timeout_ms), (1, 1, 1, 300));
        let t = LivenessTimers::for_timeout(86_400_000);
        assert_eq!((t.idle_s, t.interval_s, t.count), (14_400, 14_400, 5));
        let t = LivenessTimers::for_timeout(20_000);
        assert_eq!((t.idle_s, t.interval_s, t.user_timeout_ms), (3, 3, 18_000), "ends at the sixth firing, not the seventh at 21 s");
        for millis in [1, 999, 1000, 2500, 4000, 10_000, 20_000, 30_000, 123_456, 86_400_000] {
            let t = LivenessTimers::for_timeout(millis);
            assert!(t.idle_s >= 1 && t.interval_s >= 1 && (1..=127).contains(&t.count), "{millis}: {t:?}");
            assert!(t.user_timeout_ms as u64 <= millis, "{millis}: {t:?}");
            assert!(millis < 1000 || t.user_timeout_ms % (t.interval_s * 1000) == 0, "{millis}: {t:?}");
            // The probes fit in the timeout (or are as few and as early as the kernel allows).
            assert!(
                (t.idle_s + t.count * t.interval_s) as u64 * 1000 <= millis.max(2000),
                "{millis}: {t:?}"
            );
        }
    }

    #[test]
    fn an_outage_of_half_the_liveness_timeout_is_survived_whatever_the_timers_phase() {
        for millis in [6000, 10_000, 20_000, 30_000, 123_456] {
            let t = LivenessTimers::for_timeout(millis);
            let interval = t.interval_s as u64 * 1000;
            // The last probe answered before the cut went out up to one interval before it.
            for cut in (0..=interval).step_by(100) {
                assert!(t.survives(cut, millis / 2), "{millis}: {t:?}, an outage of {} ms from {cut} ms", millis / 2);
            }
            assert!(!t.survives(0, millis), "{millis}: {t:?} must notice an outage as long as the timeout");
        }
        let t = LivenessTimers::for_timeout(30_000);
        assert!((0..=5000).step_by(100).all(|cut| t.survives(cut, 20_000)), "the default survives 20 s");
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
        assert_eq!(&*encode_addr(&addr), &[4, 10, 1, 2, 3, 1, 2, 0, 0, 0, 0]);
        let v6: SocketAddr = "[fe80::1%7]:1".parse().unwrap();
        let encoded = encode_addr(&v6);
        assert_eq!((encoded.len(), encoded[0], &encoded[17..]), (23, 16, &[0, 1, 0, 0, 0, 7][..]));
        assert_eq!(socket_addr(&[10, 1, 2, 3], 0, 258), Some(addr));
        assert_eq!(socket_addr(&[1, 2, 3], 0, 1), None);
    }
}
