//! Endpoints to peer workers: connection with peer error handling, tagged and active-message
//! sends, and the close that completes what is still pending.

use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, warn};
use ucx1_sys as sys;

use crate::stats::{self, Counter};
use super::completion::{self, Completion};
use super::request::{request_param, send_cb, SendCallback};
use super::{check, decode_ptr, PtrStatus, Result, Source, Start, Status, UcxError, Worker, WorkerLock};

/// What an endpoint's error handler gets: the UCX status the endpoint failed with. It runs
/// inside [`WorkerLock::progress`] and must only note the failure.
pub type ErrorHandler = dyn Fn(Status) + Send + Sync;

/// UCX's side of every endpoint error handler.
unsafe extern "C" fn endpoint_failed(arg: *mut c_void, _ep: sys::ucp_ep_h, status: i8) {
    // SAFETY: `arg` is the `Arc<ErrorHandler>` boxed by `Endpoint::connect`, kept until the
    // endpoint is closed (or, if the close does not finish, until the worker is destroyed).
    let handler = unsafe { &*(arg as *const Arc<ErrorHandler>) };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(Status(status)))).is_err() {
        warn!("an endpoint error handler panicked");
    }
}

type RawErrorCallback = unsafe extern "C" fn(*mut c_void, sys::ucp_ep_h, i8);

/// Owner of a `ucp_ep_h`, created from a peer worker's address with peer error handling.
pub struct Endpoint {
    worker: Arc<Worker>,
    handle: sys::ucp_ep_h,
    /// The error handler UCX may call until the endpoint is closed.
    on_error: Option<Box<Arc<ErrorHandler>>>,
}

// SAFETY: every use of the handle goes through the worker's lock.
unsafe impl Send for Endpoint {}
// SAFETY: see `Send`.
unsafe impl Sync for Endpoint {}

/// Zero bytes appended to a peer's worker address before UCX parses it. UCX reads an address
/// without knowing its length, so a truncated or forged one would make it read past the end of
/// the buffer; a zero device or interface entry ends every parse with an error well within this
/// margin (entries and skips are at most a few hundred bytes each, and entries are bounded).
const ADDRESS_PADDING: usize = 4096;

/// Refuses worker addresses that would make UCX abort the process instead of failing: UCX
/// asserts (also in release builds) that the version in the low 4 bits of the first byte is 1
/// or 2 (encoded 0 or 1).
pub fn check_worker_address(remote: &[u8]) -> Result<()> {
    const INVALID_ADDR: Status = Status(-7);
    match remote.first() {
        Some(header) if header & 0x0f <= 1 && remote.len() >= 2 => Ok(()),
        _ => Err(UcxError { call: "checking the peer's UCX worker address", status: INVALID_ADDR }),
    }
}

impl Endpoint {
    /// Connects to the worker whose address is `remote` (untrusted bytes from the peer: checked
    /// with [`check_worker_address`] and padded with zeros before UCX reads them). `on_error`
    /// runs inside progress if the endpoint fails.
    pub fn connect(worker: &Arc<Worker>, remote: &[u8], on_error: Arc<ErrorHandler>) -> Result<Endpoint> {
        check_worker_address(remote)?;
        let mut padded = Vec::with_capacity(remote.len() + ADDRESS_PADDING);
        padded.extend_from_slice(remote);
        padded.resize(remote.len() + ADDRESS_PADDING, 0);
        let on_error: Box<Arc<ErrorHandler>> = Box::new(on_error);
        let lock = worker.lock();
        // A worker of this process stays alive while an endpoint to it is created (see
        // `Registry`); one that is gone is not reached at all.
        let registry = super::worker::REGISTRY.lock();
        if registry.is_gone(remote) {
            const UNREACHABLE: Status = Status(-6);
            debug!("not connecting to a UCX worker of this process that is gone");
            return Err(UcxError { call: "connecting to a UCX worker of this process that is gone", status: UNREACHABLE });
        }
        let _alive = registry.is_live(remote).then_some(registry);
        // SAFETY: an all-zero parameter struct is valid; only the fields in `field_mask` are read.
        let mut params: sys::ucp_ep_params_t = unsafe { std::mem::zeroed() };
        params.field_mask = (sys::ucp_ep_params_field::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
            | sys::ucp_ep_params_field::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
            | sys::ucp_ep_params_field::UCP_EP_PARAM_FIELD_ERR_HANDLER)
            .0 as u64;
        params.address = padded.as_ptr() as *const sys::ucp_address_t;
        params.err_mode = sys::ucp_err_handling_mode_t::UCP_ERR_HANDLING_MODE_PEER;
        // SAFETY: `ucs_status_t` is passed as one byte, exactly like `i8` (read as a raw code:
        // UCX reports statuses its enum does not list).
        params.err_handler.cb = Some(unsafe {
            std::mem::transmute::<RawErrorCallback, unsafe extern "C" fn(*mut c_void, sys::ucp_ep_h, sys::ucs_status_t)>(
                endpoint_failed,
            )
        });
        params.err_handler.arg = &*on_error as *const Arc<ErrorHandler> as *mut c_void;
        let mut handle: sys::ucp_ep_h = ptr::null_mut();
        // SAFETY: the worker is valid and locked; `padded` outlives the call (UCX copies what it
        // keeps); the handler box lives as long as the endpoint.
        check("ucp_ep_create", unsafe { sys::ucp_ep_create(lock.worker.handle, &params, &mut handle) })?;
        drop(lock);
        stats::count(Counter::EndpointsCreated);
        Ok(Endpoint { worker: worker.clone(), handle, on_error: Some(on_error) })
    }

    pub fn worker(&self) -> &Arc<Worker> {
        &self.worker
    }

    /// Sends `length` bytes with `tag`; a send that does not complete at once fills in `done`
    /// when it does (if given). With `immediate_only`, succeeds only if UCX can complete the send
    /// before returning (`Ok(None)` otherwise, nothing sent).
    ///
    /// # Safety
    /// Unless `Done` is returned, `buffer..buffer+length` must stay valid and unchanged, and
    /// `done` and its waker valid, until the send completed.
    pub unsafe fn tag_send(
        &self,
        lock: &WorkerLock<'_>,
        buffer: *const u8,
        length: usize,
        tag: u64,
        immediate_only: bool,
        done: Option<&Completion>,
    ) -> Result<Option<Start<()>>> {
        debug_assert!(ptr::eq(lock.worker, &*self.worker));
        let immediate = if immediate_only { sys::ucp_op_attr_t::UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL as u32 } else { 0 };
        let mut param = request_param(done.map_or(ptr::null_mut(), Completion::as_user_data), immediate);
        param.cb.send = send_cb(completion::sent);
        // SAFETY: the endpoint is valid and its worker is locked; the caller guarantees the buffer.
        let ptr = unsafe { sys::ucp_tag_send_nbx(self.handle, buffer as *const c_void, length as sys::size_t, tag, &param) };
        match decode_ptr(ptr) {
            PtrStatus::Done => Ok(Some(Start::Done(()))),
            PtrStatus::Pending(request) => Ok(Some(Start::Pending(request))),
            PtrStatus::Failed(Status::NO_RESOURCE) if immediate_only => Ok(None),
            PtrStatus::Failed(status) => Err(UcxError { call: "ucp_tag_send_nbx", status }),
        }
    }

    /// Sends `bytes` with `tag` if UCX can complete the send before returning; `Ok(false)` if not
    /// (nothing sent). The bytes are only borrowed for the call.
    pub fn tag_send_now(&self, lock: &WorkerLock<'_>, bytes: &[u8], tag: u64) -> Result<bool> {
        // SAFETY: with `immediate_only`, UCX completes the send or does nothing; a request it
        // returns all the same is completed below, before the borrow ends.
        let started = unsafe { self.tag_send(lock, bytes.as_ptr(), bytes.len(), tag, true, None) }?;
        match started {
            Some(Start::Done(())) => Ok(true),
            Some(Start::Pending(request)) => {
                debug!("UCX returned a pending request for an immediate send");
                lock.complete(&request);
                request.free(lock);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Sends the bytes `source` points at with `tag` (one slot message); `done` is filled in when
    /// a send that did not complete at once does. UCX packs the bytes when it sends them: at once
    /// if there is room for them, else later from wherever `source` points then (see
    /// [`super::Source`]).
    ///
    /// # Safety
    /// `source` must point at valid bytes for this call and, unless `Done` is returned, `source`
    /// and the bytes it points at (pointed elsewhere only under this worker's lock) must stay
    /// valid and unchanged, and `done` and its waker valid, until the send completed.
    pub unsafe fn tag_send_source(&self, lock: &WorkerLock<'_>, source: &Source, tag: u64, done: &Completion) -> Result<Start<()>> {
        debug_assert!(ptr::eq(lock.worker, &*self.worker));
        let datatype = super::source::datatype()?;
        let mut param = request_param(done.as_user_data(), sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_DATATYPE as u32);
        param.cb.send = send_cb(completion::sent);
        param.datatype = datatype;
        let buffer = source as *const Source as *const c_void;
        // SAFETY: the endpoint is valid and its worker is locked; the caller guarantees the source.
        let ptr = unsafe { sys::ucp_tag_send_nbx(self.handle, buffer, source.len() as sys::size_t, tag, &param) };
        match decode_ptr(ptr) {
            PtrStatus::Done => Ok(Start::Done(())),
            PtrStatus::Pending(request) => Ok(Start::Pending(request)),
            PtrStatus::Failed(status) => Err(UcxError { call: "ucp_tag_send_nbx", status }),
        }
    }

    /// Sends an active message with identifier `id`; a send that does not complete at once fills
    /// in `done` when it does.
    ///
    /// # Safety
    /// Unless `Done` is returned, `header` and `data` must stay valid and unchanged, and `done`
    /// and its waker valid, until the send completed (UCX reads the header from the caller's
    /// memory until then).
    pub unsafe fn am_send(
        &self,
        lock: &WorkerLock<'_>,
        id: u32,
        header: &[u8],
        data: &[u8],
        done: &Completion,
    ) -> Result<Start<()>> {
        // SAFETY: as the caller guarantees.
        unsafe { self.am_send_raw(lock, id, header, data, completion::sent, done.as_user_data()) }
    }

    /// [`Endpoint::am_send`] with any callback.
    ///
    /// # Safety
    /// As for `am_send`, with `user_data` valid for `cb` until it ran.
    unsafe fn am_send_raw(
        &self,
        lock: &WorkerLock<'_>,
        id: u32,
        header: &[u8],
        data: &[u8],
        cb: SendCallback,
        user_data: *mut c_void,
    ) -> Result<Start<()>> {
        debug_assert!(ptr::eq(lock.worker, &*self.worker));
        let mut param = request_param(user_data, sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_FLAGS as u32);
        param.flags = sys::ucp_send_am_flags::UCP_AM_SEND_FLAG_EAGER.0;
        param.cb.send = send_cb(cb);
        // SAFETY: the endpoint is valid and locked; the caller keeps the header and user data
        // valid until completion.
        let ptr = unsafe {
            sys::ucp_am_send_nbx(
                self.handle,
                id,
                header.as_ptr() as *const c_void,
                header.len() as sys::size_t,
                data.as_ptr() as *const c_void,
                data.len() as sys::size_t,
                &param,
            )
        };
        match decode_ptr(ptr) {
            PtrStatus::Done => Ok(Start::Done(())),
            PtrStatus::Pending(request) => Ok(Start::Pending(request)),
            PtrStatus::Failed(status) => Err(UcxError { call: "ucp_am_send_nbx", status }),
        }
    }

    /// Sends an active message (`header`, then the constant `data`) whose completion nobody
    /// waits for. UCX reads the header until the send completes, so it travels in a heap copy
    /// that the completion frees; a pending send stays with the worker until then
    /// ([`WorkerLock::detached_done_by`] waits for such sends).
    pub fn am_send_owned(&self, lock: &WorkerLock<'_>, id: u32, header: &[u8], data: &'static [u8]) -> Result<()> {
        let copy: *mut Vec<u8> = Box::into_raw(Box::new(header.to_vec()));
        // SAFETY: the copy stays allocated until `free_header` runs at completion (or below when
        // UCX completed at once or refused: then the callback does not run); `data` is static.
        let started = unsafe { self.am_send_raw(lock, id, &*copy, data, free_header, copy as *mut c_void) };
        match started {
            Ok(Start::Pending(request)) => {
                lock.detach(request);
                Ok(())
            }
            other => {
                // SAFETY: no callback will run; the copy is ours again.
                drop(unsafe { Box::from_raw(copy) });
                other.map(drop)
            }
        }
    }

    /// What `ucp_ep_print_info` says about this endpoint: its transports per lane.
    pub fn describe(&self) -> String {
        let _lock = self.worker.lock();
        let mut buffer: *mut c_char = ptr::null_mut();
        let mut size: libc::size_t = 0;
        // SAFETY: `open_memstream` allocates a growing buffer that we free below.
        let stream = unsafe { libc::open_memstream(&mut buffer, &mut size) };
        if stream.is_null() {
            return String::from("(endpoint information unavailable)");
        }
        // SAFETY: the endpoint is valid and locked; `stream` is an open FILE.
        unsafe { sys::ucp_ep_print_info(self.handle, stream as *mut sys::FILE) };
        // SAFETY: closing flushes the stream and finalises `buffer`/`size`.
        unsafe { libc::fclose(stream) };
        if buffer.is_null() {
            return String::new();
        }
        // SAFETY: `buffer` is NUL-terminated by `open_memstream`.
        let text = unsafe { CStr::from_ptr(buffer) }.to_string_lossy().into_owned();
        // SAFETY: `buffer` was allocated by `open_memstream` with malloc.
        unsafe { libc::free(buffer as *mut c_void) };
        text
    }
}

/// How long dropping an endpoint waits for UCX to close it.
const CLOSE_WAIT: Duration = Duration::from_millis(100);

unsafe extern "C" fn close_done(_request: *mut c_void, _status: i8, _user_data: *mut c_void) {}

unsafe extern "C" fn free_header(_request: *mut c_void, _status: i8, user_data: *mut c_void) {
    // SAFETY: `user_data` is the header copy boxed by `am_send_owned`; the callback runs once.
    drop(unsafe { Box::from_raw(user_data as *mut Vec<u8>) });
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        stats::count(Counter::EndpointsDestroyed);
        let lock = self.worker.lock();
        // SAFETY: an all-zero parameter struct is valid; only the fields in `op_attr_mask` are read.
        let mut param: sys::ucp_request_param_t = unsafe { std::mem::zeroed() };
        param.op_attr_mask = sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_FLAGS as u32
            | sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_CALLBACK as u32;
        param.flags = sys::ucp_ep_close_flags_t::UCP_EP_CLOSE_FLAG_FORCE.0;
        param.cb.send = send_cb(close_done);
        // SAFETY: the endpoint is valid, locked, and closed exactly once; outstanding requests
        // complete with CANCELED.
        let ptr = unsafe { sys::ucp_ep_close_nbx(self.handle, &param) };
        match decode_ptr(ptr) {
            PtrStatus::Done => {}
            PtrStatus::Pending(request) => {
                // Closing an endpoint to a dead peer can take UCX long; it finishes on its own
                // after the request is freed (nothing of ours is referenced).
                if !lock.complete_by(std::slice::from_ref(&request), Instant::now() + CLOSE_WAIT) {
                    debug!("a UCX endpoint is still closing; left to UCX");
                    // Its error handler may still run: keep it with the worker.
                    if let Some(handler) = self.on_error.take() {
                        self.worker.keep_until_destroyed(handler);
                    }
                }
                request.free(&lock);
            }
            PtrStatus::Failed(status) => debug!("closing UCX endpoint: {status}"),
        }
    }
}
