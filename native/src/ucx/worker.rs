//! The UCX worker: its lock, progress, event fd, tagged receives and active-message handlers.

use std::collections::{HashSet, VecDeque};
use std::os::raw::{c_int, c_void};
use std::ptr;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use log::{debug, warn};
use parking_lot::{Mutex, ReentrantMutex, ReentrantMutexGuard};
use ucx1_sys as sys;

use super::am::{am_received, AmHandler};
use super::completion::{self, Completion};
use super::request::{recv_cb, request_param};
use super::{check, decode_ptr, Context, PtrStatus, Request, Result, Status, UcxError};
use crate::stats::{self, Counter};

/// The addresses of this process's workers: the live ones, and the last ones destroyed.
///
/// UCX's shared-memory transport names a worker's receive ring by process id and descriptor
/// number, and an endpoint maps the ring when it is created. A ring created after a worker's end
/// may take the same descriptor number, so an endpoint created later from the dead worker's
/// address would write into a stranger's ring (a worker whose ring is written while UCX sets it
/// up is never done being created). Endpoints to workers of this process are therefore created
/// only while the worker lives, checked under this lock, which a worker leaves before it is
/// destroyed.
pub(super) struct Registry {
    live: HashSet<Vec<u8>>,
    gone: VecDeque<Vec<u8>>,
}

/// How many addresses of destroyed workers [`Registry`] remembers.
const GONE_KEPT: usize = 1024;

/// How long [`Worker::lock`] waits on its core for a busy lock before it queues.
const LOCK_SPIN: Duration = Duration::from_micros(5);

pub(super) static REGISTRY: LazyLock<Mutex<Registry>> =
    LazyLock::new(|| Mutex::new(Registry { live: HashSet::new(), gone: VecDeque::new() }));

impl Registry {
    /// Whether `address` is that of a worker of this process that was destroyed.
    pub(super) fn is_gone(&self, address: &[u8]) -> bool {
        !self.live.contains(address) && self.gone.iter().any(|a| a.as_slice() == address)
    }

    /// Whether `address` is that of a live worker of this process.
    pub(super) fn is_live(&self, address: &[u8]) -> bool {
        self.live.contains(address)
    }
}

/// Owner of a `ucp_worker_h` and its event fd.
pub struct Worker {
    context: Arc<Context>,
    pub(super) handle: sys::ucp_worker_h,
    lock: ReentrantMutex<()>,
    event_fd: c_int,
    address: Vec<u8>,
    /// Memory that requests of this worker may still write (see [`Worker::keep_until_destroyed`]);
    /// dropped after the worker is destroyed.
    kept: Mutex<Vec<Box<dyn Send>>>,
    /// Pending sends nobody waits for (see [`WorkerLock::detach`]).
    detached: Mutex<Vec<Request>>,
    /// Active-message handlers UCX may call (see [`WorkerLock::on_active_message`]); dropped
    /// after the worker is destroyed. Boxed: UCX holds the address of each `Arc`.
    #[allow(clippy::vec_box)]
    handlers: Mutex<Vec<Box<Arc<AmHandler>>>>,
}

// SAFETY: the worker runs in single-thread mode and every use goes through `lock`, which serialises
// all calls; the handle is never used without holding it.
unsafe impl Send for Worker {}
// SAFETY: see `Send`.
unsafe impl Sync for Worker {}

/// Proof that the calling thread holds the worker's lock.
pub struct WorkerLock<'a> {
    pub(super) worker: &'a Worker,
    _guard: ReentrantMutexGuard<'a, ()>,
}

impl Worker {
    pub fn new(context: &Arc<Context>) -> Result<Arc<Worker>> {
        // SAFETY: an all-zero parameter struct is valid; only the fields in `field_mask` are read.
        let mut params: sys::ucp_worker_params_t = unsafe { std::mem::zeroed() };
        params.field_mask = sys::ucp_worker_params_field::UCP_WORKER_PARAM_FIELD_THREAD_MODE.0 as u64;
        params.thread_mode = sys::ucs_thread_mode_t::UCS_THREAD_MODE_SINGLE;
        let mut handle: sys::ucp_worker_h = ptr::null_mut();
        // SAFETY: the context is alive (held by `context`); `handle` receives the worker.
        check("ucp_worker_create", unsafe {
            sys::ucp_worker_create(context.handle, &params, &mut handle)
        })?;
        stats::count(Counter::WorkersCreated);
        let mut worker = Worker {
            context: context.clone(),
            handle,
            lock: ReentrantMutex::new(()),
            event_fd: -1,
            address: Vec::new(),
            kept: Mutex::new(Vec::new()),
            detached: Mutex::new(Vec::new()),
            handlers: Mutex::new(Vec::new()),
        };
        let mut fd: c_int = -1;
        // SAFETY: `handle` is the worker just created; `fd` receives its event fd.
        check("ucp_worker_get_efd", unsafe { sys::ucp_worker_get_efd(handle, &mut fd) })?;
        worker.event_fd = fd;
        let mut address: *mut sys::ucp_address_t = ptr::null_mut();
        let mut length: sys::size_t = 0;
        // SAFETY: `handle` is valid; UCX allocates the address and reports its length.
        check("ucp_worker_get_address", unsafe {
            sys::ucp_worker_get_address(handle, &mut address, &mut length)
        })?;
        let length = length as usize;
        // SAFETY: UCX guarantees `length` readable bytes at `address`; it is released right after.
        worker.address = unsafe { std::slice::from_raw_parts(address as *const u8, length) }.to_vec();
        // SAFETY: releases the address obtained above exactly once.
        unsafe { sys::ucp_worker_release_address(handle, address) };
        REGISTRY.lock().live.insert(worker.address.clone());
        Ok(Arc::new(worker))
    }

    /// Takes the worker's re-entrant lock. A holder keeps it for a few microseconds (a progress
    /// round, a send, a receive posted again) and mostly runs on another core meanwhile, so a
    /// thread that finds it taken waits without giving its core away for up to [`LOCK_SPIN`];
    /// only then does it queue on the lock (whose own slow path soon yields the core, which on a
    /// host with more runnable threads than cores hands it to another thread for a time slice).
    pub fn lock(&self) -> WorkerLock<'_> {
        if let Some(lock) = self.try_lock() {
            return lock;
        }
        let start = Instant::now();
        loop {
            for _ in 0..32 {
                std::hint::spin_loop();
                if !self.lock.is_locked() {
                    break;
                }
            }
            if let Some(lock) = self.try_lock() {
                return lock;
            }
            if start.elapsed() >= LOCK_SPIN {
                return WorkerLock { worker: self, _guard: self.lock.lock() };
            }
        }
    }

    /// Like [`Worker::lock`] but gives up at once if another thread holds it.
    pub fn try_lock(&self) -> Option<WorkerLock<'_>> {
        self.lock.try_lock().map(|guard| WorkerLock { worker: self, _guard: guard })
    }

    /// The worker's address, to be sent to peers so they can create endpoints.
    pub fn address(&self) -> &[u8] {
        &self.address
    }

    /// The file descriptor that becomes readable when the armed worker has events.
    pub fn event_fd(&self) -> c_int {
        self.event_fd
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// Keeps `memory` (buffers and completion flags of requests that never ended, with what
    /// their callbacks touch) until this worker is destroyed: after `ucp_worker_destroy` UCX no
    /// longer writes to it, whatever became of the peer.
    pub fn keep_until_destroyed(&self, memory: Box<dyn Send>) {
        self.kept.lock().push(memory);
    }

    /// Whether the worker keeps memory of unfinished requests.
    pub fn keeps_memory(&self) -> bool {
        !self.kept.lock().is_empty()
    }
}

impl WorkerLock<'_> {
    pub fn worker(&self) -> &Worker {
        self.worker
    }

    /// Progresses communication once; returns how many events were processed.
    pub fn progress(&self) -> u32 {
        // SAFETY: the worker is valid and the lock is held.
        unsafe { sys::ucp_worker_progress(self.worker.handle) }
    }

    /// Arms the event fd. `Ok(true)` if armed (safe to sleep on the fd), `Ok(false)` if events are
    /// pending and the caller must progress first.
    pub fn arm(&self) -> Result<bool> {
        // SAFETY: the worker is valid and the lock is held.
        let status = Status(unsafe { sys::ucp_worker_arm(self.worker.handle) } as i8);
        match status {
            Status::OK => Ok(true),
            Status::BUSY => Ok(false),
            status => Err(UcxError { call: "ucp_worker_arm", status }),
        }
    }

    /// Installs `handler` for active messages with identifier `id` (replacing an earlier one).
    /// The worker keeps every handler it was given until it is destroyed.
    pub fn on_active_message(&self, id: u32, handler: Arc<AmHandler>) -> Result<()> {
        let boxed: Box<Arc<AmHandler>> = Box::new(handler);
        // SAFETY: an all-zero parameter struct is valid; only the fields in `field_mask` are read.
        let mut param: sys::ucp_am_handler_param_t = unsafe { std::mem::zeroed() };
        param.field_mask = (sys::ucp_am_handler_param_field::UCP_AM_HANDLER_PARAM_FIELD_ID
            | sys::ucp_am_handler_param_field::UCP_AM_HANDLER_PARAM_FIELD_CB
            | sys::ucp_am_handler_param_field::UCP_AM_HANDLER_PARAM_FIELD_ARG
            | sys::ucp_am_handler_param_field::UCP_AM_HANDLER_PARAM_FIELD_FLAGS)
            .0 as u64;
        param.id = id;
        param.flags = sys::ucp_am_cb_flags::UCP_AM_FLAG_WHOLE_MSG.0;
        param.cb = Some(am_received);
        param.arg = &*boxed as *const Arc<AmHandler> as *mut c_void;
        // SAFETY: the worker is valid, the lock is held and `param` lives for the call; the box
        // it points to is kept below for as long as the worker lives.
        check("ucp_worker_set_am_recv_handler", unsafe {
            sys::ucp_worker_set_am_recv_handler(self.worker.handle, &param)
        })?;
        self.worker.handlers.lock().push(boxed);
        Ok(())
    }

    /// Posts a tagged receive of at most `length` bytes into `buffer`. `done` is always filled
    /// in with the message's tag and length, inside this call if the message was already there
    /// (UCX 1.12 reports neither for a receive that completes at once), else inside
    /// [`WorkerLock::progress`]; the returned request is freed by the caller either way.
    ///
    /// # Safety
    /// `buffer..buffer+length` must stay valid and unused by anyone else until the receive
    /// completes (`done` says so) or is cancelled and completes; `done` and its waker must stay
    /// valid until then as well.
    pub unsafe fn tag_recv(&self, buffer: *mut u8, length: usize, tag: u64, mask: u64, done: &Completion) -> Result<Request> {
        let mut param = request_param(done.as_user_data(), sys::ucp_op_attr_t::UCP_OP_ATTR_FLAG_NO_IMM_CMPL as u32);
        param.cb.recv = recv_cb(completion::received);
        // SAFETY: the caller guarantees the buffer and user data; the lock is held.
        let ptr = unsafe {
            sys::ucp_tag_recv_nbx(self.worker.handle, buffer as *mut c_void, length as sys::size_t, tag, mask, &param)
        };
        match decode_ptr(ptr) {
            PtrStatus::Pending(request) => Ok(request),
            // Not with NO_IMM_CMPL; the callback did not run, so the receive cannot be used.
            PtrStatus::Done => Err(UcxError { call: "ucp_tag_recv_nbx (completed without a request)", status: Status::OK }),
            PtrStatus::Failed(status) => Err(UcxError { call: "ucp_tag_recv_nbx", status }),
        }
    }

    /// Removes and receives every unexpected message matching `tag`/`mask` into `scratch`,
    /// discarding the contents. Returns how many messages were drained.
    /// The length of a message with exactly this tag that arrived but matched no receive yet (UCX
    /// knows it from the message's first bytes), without taking it.
    pub fn probe_length(&self, tag: u64) -> Option<usize> {
        let mut info = sys::ucp_tag_recv_info_t { sender_tag: 0, length: 0 };
        // SAFETY: the worker is valid and the lock is held; `remove = 0` leaves the message there.
        let message = unsafe { sys::ucp_tag_probe_nb(self.worker.handle, tag, u64::MAX, 0, &mut info) };
        (!message.is_null()).then_some(info.length as usize)
    }

    pub fn drain_unexpected(&self, tag: u64, mask: u64, scratch: &mut Vec<u8>) -> usize {
        let mut drained = 0;
        loop {
            let mut info = sys::ucp_tag_recv_info_t { sender_tag: 0, length: 0 };
            // SAFETY: the worker is valid, the lock is held; `remove = 1` hands the message to us.
            let message = unsafe { sys::ucp_tag_probe_nb(self.worker.handle, tag, mask, 1, &mut info) };
            if message.is_null() {
                return drained;
            }
            let length = info.length as usize;
            if scratch.len() < length {
                scratch.resize(length, 0);
            }
            // SAFETY: an all-zero parameter struct is valid (no callback: completion is polled).
            let param: sys::ucp_request_param_t = unsafe { std::mem::zeroed() };
            // SAFETY: `scratch` holds at least `info.length` bytes; it stays valid until the
            // receive completed or, if it does not in time, for good (leaked below).
            let ptr = unsafe {
                sys::ucp_tag_msg_recv_nbx(
                    self.worker.handle,
                    scratch.as_mut_ptr() as *mut c_void,
                    info.length,
                    message,
                    &param,
                )
            };
            if let PtrStatus::Pending(request) = decode_ptr(ptr) {
                let mut done = self.complete_by(std::slice::from_ref(&request), Instant::now() + DRAIN_WAIT);
                if !done {
                    self.cancel(&request);
                    done = self.complete_by(std::slice::from_ref(&request), Instant::now() + DRAIN_WAIT);
                }
                request.free(self);
                if !done {
                    // UCX may still write into the buffer: it must never be reused or freed.
                    warn!("an unread UCX message did not arrive in time; its buffer stays with the worker");
                    self.worker.keep_until_destroyed(Box::new(std::mem::take(scratch)));
                    return drained;
                }
            }
            drained += 1;
        }
    }

    /// Whether `request` is still in progress.
    fn in_progress(&self, request: &Request) -> bool {
        // SAFETY: the request belongs to this worker and was not freed (`free` consumes it); the
        // lock is held.
        Status(unsafe { sys::ucp_request_check_status(request.as_ptr()) } as i8) == Status::IN_PROGRESS
    }

    /// Progresses until `request` is no longer in progress.
    pub fn complete(&self, request: &Request) {
        while self.in_progress(request) {
            self.progress();
        }
    }

    /// Progresses until none of `requests` is in progress or `deadline` passed; true if all
    /// completed.
    pub fn complete_by(&self, requests: &[Request], deadline: Instant) -> bool {
        loop {
            if !requests.iter().any(|r| self.in_progress(r)) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.progress();
        }
    }

    /// Keeps a pending send whose completion nobody waits for until it completed: freeing it
    /// would stop its callback, which releases what the send reads. Frees the ones that
    /// completed meanwhile (a worker destroyed first runs the callbacks of those left).
    pub(super) fn detach(&self, request: Request) {
        let mut detached = self.worker.detached.lock();
        let mut left = Vec::with_capacity(detached.len() + 1);
        for earlier in detached.drain(..) {
            if self.in_progress(&earlier) {
                left.push(earlier);
            } else {
                earlier.free(self);
            }
        }
        left.push(request);
        *detached = left;
    }

    /// Progresses until every detached send completed or `deadline` passed; true if they did.
    pub fn detached_done_by(&self, deadline: Instant) -> bool {
        let requests = std::mem::take(&mut *self.worker.detached.lock());
        let done = self.complete_by(&requests, deadline);
        let mut detached = self.worker.detached.lock();
        for request in requests {
            if self.in_progress(&request) {
                detached.push(request);
            } else {
                request.free(self);
            }
        }
        done
    }

    /// Cancels a pending receive; its callback runs with `CANCELED` during a later progress call
    /// (or already ran if it had completed).
    pub fn cancel(&self, request: &Request) {
        // SAFETY: the request belongs to this worker and has not been freed; the lock is held.
        unsafe { sys::ucp_request_cancel(self.worker.handle, request.as_ptr()) };
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        debug!("destroying a UCX worker");
        stats::count(Counter::WorkersDestroyed);
        {
            // Before the worker goes: no endpoint of this process is created to it from now on.
            let mut registry = REGISTRY.lock();
            if registry.live.remove(&self.address) {
                if registry.gone.len() == GONE_KEPT {
                    registry.gone.pop_front();
                }
                registry.gone.push_back(std::mem::take(&mut self.address));
            }
        }
        // SAFETY: every endpoint holds an `Arc<Worker>`, so none is left; no other thread can hold
        // the lock of a worker that is being dropped.
        unsafe { sys::ucp_worker_destroy(self.handle) };
        // Only now: requests cancelled by the destruction ran their callbacks into it.
        self.kept.get_mut().clear();
        self.handlers.get_mut().clear();
    }
}

/// How long [`WorkerLock::drain_unexpected`] waits for one message (a rendezvous from a dead peer
/// may never complete).
const DRAIN_WAIT: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::{Context, Worker, LOCK_SPIN};

    #[test]
    fn the_lock_excludes_other_threads_and_waits_past_its_spin() {
        let context = Context::new(&super::super::ContextOptions { longest: 0, shared_memory: true, retransmit_for: None }).unwrap();
        let worker = Worker::new(&context).unwrap();
        // Far longer than the spin: the waiter must queue.
        let held = LOCK_SPIN * 2000;
        let released = Arc::new(AtomicBool::new(false));
        let guard = worker.lock();
        // Re-entrant: the holder takes it again without waiting.
        drop(worker.lock());
        let waiter = {
            let (worker, released) = (worker.clone(), released.clone());
            std::thread::spawn(move || {
                let _guard = worker.lock();
                released.load(Ordering::SeqCst)
            })
        };
        std::thread::sleep(held);
        released.store(true, Ordering::SeqCst);
        drop(guard);
        assert!(waiter.join().unwrap(), "the waiter got the lock while the holder kept it");
        // Free again: taken at once.
        assert!(worker.try_lock().is_some());
    }
}
