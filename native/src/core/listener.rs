//! A listening TCP socket (`ServerSocketChannel`).

use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::debug;
use parking_lot::Mutex;

use super::conn::{get_socket_option, set_socket_option, Conn};
use super::error::{Error, Result, Status};
use super::hub::{Events, Hub};
use super::readiness::{Key, Keys, Ready, OP_ACCEPT};
use crate::config::Settings;
use crate::net::poller::{self, EventFd};
use crate::net::socket::Socket;

pub struct Listener {
    /// The library's settings, given when the listener was created (its connections get them).
    settings: &'static Settings,
    /// Shared with a blocking `accept` that waits in the kernel, so that `close` can shut it
    /// down (which wakes that wait) without the lock; the descriptor closes when both let go.
    socket: Mutex<Option<Arc<Socket>>>,
    /// Whether the socket is blocking (changed under the `socket` lock): while blocking accepts
    /// without a timeout come, it is, and they wait in the kernel's `accept` as the JDK's do.
    blocking: AtomicBool,
    /// The address it is bound to (the kernel's choice of port filled in), once bound.
    local: OnceLock<SocketAddr>,
    acceptable: AtomicBool,
    closed: AtomicBool,
    wake: EventFd,
    keys: Mutex<Keys>,
    hubs: Mutex<Vec<(Arc<Hub>, u32)>>,
    weak: Weak<Listener>,
}

impl Listener {
    /// A new unbound listening socket (`SO_REUSEADDR` on, as the JDK does), working with
    /// `settings`.
    pub fn open(settings: &'static Settings) -> Result<Arc<Listener>> {
        let socket = Socket::new(settings.ipv6).map_err(|e| Error::io("socket", &e))?;
        socket.set_int(libc::SOL_SOCKET, libc::SO_REUSEADDR, 1).map_err(|e| Error::io("setsockopt", &e))?;
        let wake = EventFd::new().map_err(|e| Error::io("eventfd", &e))?;
        Ok(Arc::new_cyclic(|weak| Listener {
            settings,
            socket: Mutex::new(Some(Arc::new(socket))),
            blocking: AtomicBool::new(false),
            local: OnceLock::new(),
            acceptable: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            wake,
            keys: Mutex::default(),
            hubs: Mutex::default(),
            weak: weak.clone(),
        }))
    }

    pub fn bind(&self, addr: &SocketAddr, backlog: i32) -> Result<()> {
        let guard = self.socket.lock();
        let socket = guard.as_ref().ok_or_else(Error::closed)?;
        if !socket.accepts(addr) {
            return Err(Error::new(Status::Invalid, "IPv6 address on an IPv4 socket"));
        }
        socket.bind(addr).map_err(|e| Error::io("bind", &e))?;
        socket.listen(if backlog < 1 { 50 } else { backlog }).map_err(|e| Error::io("listen", &e))?;
        let local = socket.local_addr().map_err(|e| Error::io("getsockname", &e))?;
        let _ = self.local.set(local);
        Ok(())
    }

    pub fn local_addr(&self) -> Result<Option<SocketAddr>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        Ok(self.local.get().copied())
    }

    /// Accepts a connection. Non-blocking: `Ok(None)` if none is pending. Blocking: waits (up to
    /// `timeout`); a concurrent `close` ends the wait with `Closed`. A blocking accept without a
    /// timeout waits in the kernel's `accept`, one system call per connection; the others poll.
    pub fn accept(&self, blocking: bool, timeout: Option<Duration>) -> Result<Option<Arc<Conn>>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let in_kernel = blocking && timeout.is_none();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(Error::closed());
            }
            let socket = {
                let guard = self.socket.lock();
                let socket = guard.as_ref().ok_or_else(Error::closed)?;
                if self.blocking.load(Ordering::Relaxed) != in_kernel {
                    socket.set_blocking(in_kernel).map_err(|e| Error::io("ioctl", &e))?;
                    self.blocking.store(in_kernel, Ordering::Relaxed);
                }
                socket.clone()
            };
            match socket.accept() {
                Ok(Some((accepted, peer))) => {
                    debug!("accepted a connection from {peer}");
                    let port = self.local.get().map_or(0, SocketAddr::port);
                    return Ok(Some(Conn::accepted(self.settings, accepted, peer, port)));
                }
                Ok(None) => self.acceptable.store(false, Ordering::Release),
                // `close` shut the socket down under the wait (`EINVAL`).
                Err(_) if self.closed.load(Ordering::Acquire) => return Err(Error::closed()),
                Err(e) => return Err(Error::io("accept", &e)),
            }
            if !blocking {
                return Ok(None);
            }
            if in_kernel {
                // Interrupted by a signal, or the peer gave up before it was accepted.
                continue;
            }
            let remaining = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(Error::new(Status::TimedOut, "Accept timed out"));
                    }
                    Some(d - now)
                }
                None => None,
            };
            poller::poll([(socket.as_raw_fd(), libc::POLLIN), (self.wake.as_raw_fd(), libc::POLLIN)], remaining)
                .map_err(|e| Error::io("poll", &e))?;
        }
    }

    fn on_readable(&self) {
        self.acceptable.store(true, Ordering::Release);
        self.keys.lock().notify();
    }

    /// `OP_ACCEPT` if a connection is pending. The edge-triggered flag says "maybe"; the socket
    /// itself is asked, so that a drained backlog is not reported again (level semantics).
    pub fn ready_ops(&self) -> u32 {
        if !self.acceptable.load(Ordering::Acquire) {
            return 0;
        }
        let guard = self.socket.lock();
        let Some(socket) = guard.as_ref() else { return 0 };
        match poller::poll([(socket.as_raw_fd(), libc::POLLIN)], Some(Duration::ZERO)) {
            Ok(revents) if revents[0] & libc::POLLIN != 0 => OP_ACCEPT,
            Ok(_) => {
                self.acceptable.store(false, Ordering::Release);
                0
            }
            Err(_) => OP_ACCEPT,
        }
    }

    /// Adds the socket to `hub`'s epoll set (registration with that hub's selector).
    pub fn register_in(&self, hub: &Arc<Hub>, key: &Arc<Key>) -> Result<()> {
        let me = self.weak.upgrade().ok_or_else(Error::closed)?;
        let fd = self.socket.lock().as_ref().ok_or_else(Error::closed)?.as_raw_fd();
        let id = hub.register_listener(Arc::<Listener>::downgrade(&me), fd).map_err(|e| Error::io("epoll", &e))?;
        self.hubs.lock().push((hub.clone(), id));
        self.keys.lock().add(key);
        Ok(())
    }

    pub fn unregister_from(&self, hub: &Arc<Hub>, key: &Arc<Key>) {
        self.keys.lock().remove(key);
        let fd = self.socket.lock().as_ref().map(|s| s.as_raw_fd());
        let mut hubs = self.hubs.lock();
        if let Some(index) = hubs.iter().position(|(h, _)| Arc::ptr_eq(h, hub)) {
            let (hub, id) = hubs.remove(index);
            if let Some(fd) = fd {
                hub.unregister_listener(id, fd);
            }
        }
    }

    /// Closes the socket and wakes a thread blocked in `accept`: one that polls through the
    /// wake-up descriptor, one in the kernel's `accept` by shutting the socket down (Linux ends
    /// that wait with `EINVAL`), and the descriptor closes once it has left.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.wake.notify();
        let socket = self.socket.lock().take();
        if let Some(socket) = &socket {
            for (hub, id) in self.hubs.lock().drain(..) {
                hub.unregister_listener(id, socket.as_raw_fd());
            }
            let _ = socket.shutdown(Shutdown::Both);
        }
        drop(socket);
    }

    pub fn set_option(&self, option: i32, value: i32) -> Result<()> {
        let guard = self.socket.lock();
        set_socket_option(guard.as_ref().ok_or_else(Error::closed)?, option, value)
    }

    pub fn get_option(&self, option: i32) -> Result<i32> {
        let guard = self.socket.lock();
        get_socket_option(guard.as_ref().ok_or_else(Error::closed)?, option)
    }
}

impl Events for Listener {
    /// The listening socket became readable: a connection may be waiting.
    fn on_io_event(&self, _events: u32) {
        self.on_readable();
    }
}

impl Ready for Listener {
    fn ready_ops(&self) -> u32 {
        Listener::ready_ops(self)
    }

    fn forget(&self, key: &Arc<Key>, hub: &Arc<Hub>) {
        self.unregister_from(hub, key);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{SocketAddr, TcpStream};
    use std::os::fd::AsRawFd;
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::{Duration, Instant};

    use super::Listener;
    use crate::config::Settings;
    use crate::core::error::Status;

    fn bound() -> (Arc<Listener>, SocketAddr) {
        let listener = Listener::open(Box::leak(Box::new(Settings::default()))).unwrap();
        listener.bind(&"127.0.0.1:0".parse().unwrap(), 8).unwrap();
        let addr = listener.local_addr().unwrap().unwrap();
        (listener, addr)
    }

    /// Whether the listening socket itself (not the flag) is blocking.
    fn socket_blocks(listener: &Listener) -> bool {
        let fd = listener.socket.lock().as_ref().unwrap().as_raw_fd();
        // SAFETY: F_GETFL on a descriptor the listener keeps open.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        assert!(flags >= 0, "fcntl: {}", std::io::Error::last_os_error());
        flags & libc::O_NONBLOCK == 0
    }

    /// Runs `accept` on another thread; `None` if it has not returned within 5 s.
    fn accept_within_5s(listener: &Arc<Listener>, blocking: bool, timeout: Option<Duration>) -> Option<Result<bool, Status>> {
        let (tx, rx) = mpsc::channel();
        let listener = listener.clone();
        thread::spawn(move || {
            let _ = tx.send(listener.accept(blocking, timeout).map(|c| c.is_some()).map_err(|e| e.status));
        });
        rx.recv_timeout(Duration::from_secs(5)).ok()
    }

    /// A blocking accept without a timeout waits in the kernel's `accept`, on a blocking socket;
    /// an accept with a timeout or a non-blocking one after it finds the socket non-blocking
    /// again (else the first would not time out, the second would wait).
    #[test]
    fn only_blocking_accepts_without_a_timeout_make_the_socket_blocking() {
        let (listener, addr) = bound();
        assert!(!socket_blocks(&listener));
        let connect_soon = move || {
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                TcpStream::connect(addr).unwrap()
            })
        };

        let client = connect_soon();
        assert_eq!(accept_within_5s(&listener, true, None), Some(Ok(true)));
        assert!(socket_blocks(&listener), "the accept waited in the kernel");
        let _first = client.join().unwrap();
        assert_eq!(accept_within_5s(&listener, true, Some(Duration::from_millis(200))), Some(Err(Status::TimedOut)));
        assert!(!socket_blocks(&listener));

        let client = connect_soon();
        assert_eq!(accept_within_5s(&listener, true, None), Some(Ok(true)));
        let _second = client.join().unwrap();
        assert_eq!(accept_within_5s(&listener, false, None), Some(Ok(false)), "a non-blocking accept returns at once");
        assert!(!socket_blocks(&listener));
        listener.close();
    }

    /// `close` ends an accept that waits in the kernel (by shutting the socket down): with
    /// `Closed`, at once.
    #[test]
    fn close_ends_an_accept_that_waits_in_the_kernel() {
        let (listener, _) = bound();
        let (tx, rx) = mpsc::channel();
        let waiting = listener.clone();
        thread::spawn(move || {
            let _ = tx.send(waiting.accept(true, None).map(|c| c.is_some()).map_err(|e| e.status));
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while !socket_blocks(&listener) {
            assert!(Instant::now() < deadline, "the accept never made the socket blocking");
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(100));
        assert!(rx.try_recv().is_err(), "the accept waits");
        listener.close();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(Err(Status::Closed)));
    }
}
