//! Completion records: what a UCX operation's callback tells its owner. The owner keeps a
//! [`Completion`] per operation in flight and reads it with atomics; UCX's callbacks (here, and
//! only here) fill it in and wake the owner's [`Wake`].

use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI8, AtomicU64, AtomicUsize, Ordering};

use ucx1_sys as sys;

use super::Status;

/// Who hears of completions. It is called inside [`super::WorkerLock::progress`], with the
/// worker's lock held, and must only note that something happened.
pub trait Wake: Send + Sync {
    fn wake(&self);

    /// An operation started with a [`Completion::on_demand`] record completed: wakes only if the
    /// owner asked to hear of it (by default, always).
    fn wake_on_demand(&self) {
        self.wake();
    }
}

/// The outcome of one operation: whether it ended, its status and, for a tagged receive, the
/// message's tag and length.
pub struct Completion {
    waker: Option<NonNull<dyn Wake>>,
    /// Whether completing calls [`Wake::wake_on_demand`] rather than [`Wake::wake`].
    on_demand: bool,
    done: AtomicBool,
    status: AtomicI8,
    tag: AtomicU64,
    len: AtomicUsize,
}

// SAFETY: `waker` is only dereferenced by the completion callbacks, whose callers (the unsafe
// functions that start operations) guarantee that it is alive and `Send + Sync` (as `Wake` is);
// all other fields are atomics.
unsafe impl Send for Completion {}
// SAFETY: see `Send`.
unsafe impl Sync for Completion {}

impl Completion {
    /// A record that wakes `waker` when an operation started with it completes; `done` until
    /// the first operation starts if `done` is given.
    pub fn new(waker: *const dyn Wake, done: bool) -> Completion {
        Completion {
            waker: NonNull::new(waker as *mut dyn Wake),
            on_demand: false,
            done: AtomicBool::new(done),
            status: AtomicI8::new(0),
            tag: AtomicU64::new(0),
            len: AtomicUsize::new(0),
        }
    }

    /// A record, not done, whose completion tells `waker` through [`Wake::wake_on_demand`]: for
    /// operations whose end the owner usually learns of when it next looks.
    pub fn on_demand(waker: *const dyn Wake) -> Completion {
        Completion { on_demand: true, ..Completion::new(waker, false) }
    }

    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Marks the record pending, before an operation starts with it.
    pub fn start(&self) {
        self.done.store(false, Ordering::Relaxed);
    }

    /// Marks the record done without a callback: the operation completed at once or never started.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// The operation's status (read after [`Completion::is_done`]).
    pub fn status(&self) -> Status {
        Status(self.status.load(Ordering::Relaxed))
    }

    /// The received message's tag (read after [`Completion::is_done`]).
    pub fn tag(&self) -> u64 {
        self.tag.load(Ordering::Relaxed)
    }

    /// The received message's length (read after [`Completion::is_done`]).
    pub fn length(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// # Safety
    /// The waker given to [`Completion::new`] is alive (see the functions starting operations).
    unsafe fn complete(&self, status: i8, tag: u64, len: usize) {
        self.status.store(status, Ordering::Relaxed);
        self.tag.store(tag, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        self.done.store(true, Ordering::Release);
        if let Some(waker) = self.waker {
            // SAFETY: as the caller guarantees.
            let waker = unsafe { waker.as_ref() };
            if self.on_demand {
                waker.wake_on_demand();
            } else {
                waker.wake();
            }
        }
    }

    pub(super) fn as_user_data(&self) -> *mut c_void {
        self as *const Completion as *mut c_void
    }
}

/// Completion callback of a tagged receive started with a [`Completion`] as user data.
pub(super) unsafe extern "C" fn received(
    _request: *mut c_void,
    status: i8,
    info: *const sys::ucp_tag_recv_info_t,
    user_data: *mut c_void,
) {
    // SAFETY: `user_data` is the `Completion` the receive was posted with; `tag_recv`'s caller
    // keeps it (and its waker) alive until this callback ran.
    let completion = unsafe { &*(user_data as *const Completion) };
    // SAFETY: UCX passes a valid info pointer for completed receives (null-checked anyway).
    let (tag, len) = match unsafe { info.as_ref() } {
        Some(info) => (info.sender_tag, info.length as usize),
        None => (0, 0),
    };
    // SAFETY: see above.
    unsafe { completion.complete(status, tag, len) };
}

/// Completion callback of a send started with a [`Completion`] (or none: null user data).
pub(super) unsafe extern "C" fn sent(_request: *mut c_void, status: i8, user_data: *mut c_void) {
    if user_data.is_null() {
        return;
    }
    // SAFETY: `user_data` is the `Completion` the send was started with; the caller of the send
    // keeps it (and its waker) alive until this callback ran.
    let completion = unsafe { &*(user_data as *const Completion) };
    // SAFETY: see above.
    unsafe { completion.complete(status, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(&self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_callback_fills_the_record_and_wakes_its_owner() {
        let owner = Counter(AtomicUsize::new(0));
        let completion = Completion::new(&owner as &dyn Wake, false);
        assert!(!completion.is_done());
        let info = sys::ucp_tag_recv_info_t { sender_tag: 42, length: 7 };
        // SAFETY: the record and its owner outlive the call, as UCX's would.
        unsafe { received(std::ptr::null_mut(), -3, &info, completion.as_user_data()) };
        assert!(completion.is_done());
        assert_eq!((completion.status().0, completion.tag(), completion.length()), (-3, 42, 7));
        assert_eq!(owner.0.load(Ordering::Relaxed), 1);
        completion.start();
        // SAFETY: as above; a send without a record is ignored.
        unsafe {
            sent(std::ptr::null_mut(), 0, completion.as_user_data());
            sent(std::ptr::null_mut(), 0, std::ptr::null_mut());
        }
        assert!(completion.is_done() && completion.status().0 == 0);
        assert_eq!(owner.0.load(Ordering::Relaxed), 2);
    }

    /// Counts only the wakes it asked for.
    struct Asking {
        wanted: AtomicBool,
        woken: AtomicUsize,
    }

    impl Wake for Asking {
        fn wake(&self) {
            self.woken.fetch_add(1, Ordering::Relaxed);
        }

        fn wake_on_demand(&self) {
            if self.wanted.load(Ordering::Relaxed) {
                self.wake();
            }
        }
    }

    #[test]
    fn an_on_demand_record_wakes_only_an_owner_that_asked() {
        let owner = Asking { wanted: AtomicBool::new(false), woken: AtomicUsize::new(0) };
        let completion = Completion::on_demand(&owner as &dyn Wake);
        assert!(!completion.is_done());
        // SAFETY: the record and its owner outlive the calls.
        unsafe { sent(std::ptr::null_mut(), 0, completion.as_user_data()) };
        assert!(completion.is_done());
        assert_eq!(owner.woken.load(Ordering::Relaxed), 0);
        owner.wanted.store(true, Ordering::Relaxed);
        completion.start();
        // SAFETY: as above.
        unsafe { sent(std::ptr::null_mut(), 0, completion.as_user_data()) };
        assert_eq!(owner.woken.load(Ordering::Relaxed), 1);
    }
}
