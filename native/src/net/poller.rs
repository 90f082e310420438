//! The epoll set a hub waits on, and the eventfd used to wake it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const READABLE: u32 = libc::EPOLLIN as u32;
pub const WRITABLE: u32 = libc::EPOLLOUT as u32;
pub const HANGUP: u32 = (libc::EPOLLHUP | libc::EPOLLRDHUP) as u32;
pub const ERROR: u32 = libc::EPOLLERR as u32;
pub const EDGE: u32 = libc::EPOLLET as u32;
/// Urgent (out-of-band) data arrived.
pub const URGENT: u32 = libc::EPOLLPRI as u32;

/// An epoll instance. Tokens are opaque `u64`s chosen by the caller.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

/// One ready descriptor: its token and event bits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Event {
    pub token: u64,
    pub events: u32,
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        Ok(Epoll { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn ctl(&self, op: i32, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: `event` is valid for the call; the kernel copies it.
        if unsafe { libc::epoll_ctl(self.as_raw_fd(), op, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    pub fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits for events; `None` waits forever. Returns the number of events written to `out`
    /// (0 on timeout or signal interruption). A timeout that is not a whole number of
    /// milliseconds is kept to the microsecond where the kernel has `epoll_pwait2` (Linux 5.11),
    /// and rounded up to the next millisecond elsewhere.
    pub fn wait(&self, out: &mut [Event], timeout: Option<Duration>) -> io::Result<usize> {
        const MAX: usize = 64;
        let mut raw = [libc::epoll_event { events: 0, u64: 0 }; MAX];
        let capacity = out.len().min(MAX) as i32;
        let n = match timeout {
            Some(t) if t.subsec_nanos() % 1_000_000 != 0 && PRECISE.load(Ordering::Relaxed) => {
                let spec = libc::timespec { tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t, tv_nsec: t.subsec_nanos() as libc::c_long };
                // SAFETY: `raw` has room for `capacity` events, `spec` lives through the call and
                // a null signal mask leaves the thread's mask as it is. Called through `syscall`:
                // glibc has a wrapper only from 2.35 on, newer than the jar's floor (2.34).
                let n = unsafe {
                    libc::syscall(libc::SYS_epoll_pwait2, self.as_raw_fd(), raw.as_mut_ptr(), capacity, &spec as *const libc::timespec, std::ptr::null::<libc::sigset_t>(), 0usize)
                } as i32;
                // ENOSYS before Linux 5.11; EPERM from a container's seccomp filter that does not
                // know the call yet.
                if n < 0 && matches!(io::Error::last_os_error().raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) {
                    PRECISE.store(false, Ordering::Relaxed);
                    return self.wait(out, timeout);
                }
                n
            }
            _ => {
                let millis = timeout.map_or(-1, round_up_millis);
                // SAFETY: `raw` has room for `capacity` events.
                unsafe { libc::epoll_wait(self.as_raw_fd(), raw.as_mut_ptr(), capacity, millis) }
            }
        };
        if n < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(error);
        }
        let n = n as usize;
        for (slot, event) in out.iter_mut().zip(raw.iter()).take(n) {
            *slot = Event { token: event.u64, events: event.events };
        }
        Ok(n)
    }
}

/// Whether the kernel takes timeouts in nanoseconds (`epoll_pwait2`); cleared when the call is
/// refused.
static PRECISE: AtomicBool = AtomicBool::new(true);

/// A non-blocking eventfd used as a wake-up signal.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Makes the fd readable.
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live local; a full counter (EAGAIN) still leaves it readable.
        unsafe { libc::write(self.as_raw_fd(), &one as *const u64 as *const c_void, 8) };
    }

    /// Resets the fd to not readable.
    pub fn drain(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads 8 bytes into a live local; EAGAIN means it was already drained.
        unsafe { libc::read(self.as_raw_fd(), &mut value as *mut u64 as *mut c_void, 8) };
    }
}

/// Waits until one of `fds` is ready for `events` or the timeout passes (`None`: forever).
/// Returns the `revents` of each descriptor. A signal does not end the wait: `poll` fails with
/// EINTR when one comes during it, even with a zero timeout (a profiler's SIGPROF, say), and is
/// asked again for the time that is left.
pub fn poll<const N: usize>(fds: [(RawFd, i16); N], timeout: Option<Duration>) -> io::Result<[i16; N]> {
    // A zero timeout is asked again as it is, without the clock.
    let deadline = timeout.filter(|t| !t.is_zero()).map(|t| Instant::now() + t);
    let mut millis = timeout.map_or(-1, round_up_millis);
    loop {
        let mut raw = fds.map(|(fd, events)| libc::pollfd { fd, events, revents: 0 });
        // SAFETY: `raw` holds `N` valid pollfd entries.
        let n = unsafe { libc::poll(raw.as_mut_ptr(), N as libc::nfds_t, millis) };
        if n >= 0 {
            return Ok(raw.map(|p| p.revents));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
        if let Some(deadline) = deadline {
            millis = round_up_millis(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

/// `t` in whole milliseconds, rounded up so that a short timeout never turns into a busy loop.
fn round_up_millis(t: Duration) -> i32 {
    t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventfd_wakes_epoll() {
        let epoll = Epoll::new().unwrap();
        let wake = EventFd::new().unwrap();
        epoll.add(wake.as_raw_fd(), READABLE, 7).unwrap();
        let mut events = [Event::default(); 4];
        assert_eq!(epoll.wait(&mut events, Some(Duration::from_millis(1))).unwrap(), 0);
        wake.notify();
        assert_eq!(epoll.wait(&mut events, Some(Duration::from_millis(100))).unwrap(), 1);
        assert_eq!(events[0].token, 7);
        wake.drain();
        assert_eq!(epoll.wait(&mut events, Some(Duration::ZERO)).unwrap(), 0);
    }

    #[test]
    fn a_timeout_below_a_millisecond_is_waited_out() {
        // Rounded down instead of up or kept, it would return at once: a busy loop for callers
        // that sleep in short steps.
        let epoll = Epoll::new().unwrap();
        let mut events = [Event::default(); 4];
        for micros in [1, 300, 1500] {
            let timeout = Duration::from_micros(micros);
            let start = std::time::Instant::now();
            assert_eq!(epoll.wait(&mut events, Some(timeout)).unwrap(), 0);
            assert!(start.elapsed() >= timeout, "a {timeout:?} wait returned after {:?}", start.elapsed());
        }
    }
}
