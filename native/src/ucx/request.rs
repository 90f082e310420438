//! Requests: a pending operation's handle, the outcome of starting one, and the callback types
//! UCX calls when one completes.

use std::os::raw::c_void;
use std::ptr::NonNull;

use ucx1_sys as sys;

use super::WorkerLock;

/// A pending UCX request (send, receive or close). Freed with [`Request::free`]; completion is
/// reported through the callback it was started with.
#[derive(Debug)]
pub struct Request(pub(super) NonNull<c_void>);

// SAFETY: a request pointer is only used under its worker's lock.
unsafe impl Send for Request {}

impl Request {
    pub(super) fn as_ptr(&self) -> *mut c_void {
        self.0.as_ptr()
    }

    /// Returns the request to UCX. If it is still pending, UCX finishes it in the background
    /// without calling back: what it reads or writes must stay valid until then, and what its
    /// callback would release is not released.
    pub fn free(self, _worker: &WorkerLock<'_>) {
        // SAFETY: the request came from UCX and is released exactly once (consumes `self`).
        unsafe { sys::ucp_request_free(self.as_ptr()) };
    }
}

/// Outcome of starting a non-blocking operation.
pub enum Start<T> {
    /// Completed before the call returned; the callback will not run.
    Done(T),
    /// Completes later; the callback runs inside [`Worker::progress`].
    Pending(Request),
}

/// Parameters of an operation whose completion calls back with `user_data` (the caller sets the
/// callback, `cb.send` or `cb.recv`), with the further `UCP_OP_ATTR_*` bits of `more` (and the
/// fields they name, set by the caller).
pub(super) fn request_param(user_data: *mut c_void, more: u32) -> sys::ucp_request_param_t {
    // SAFETY: an all-zero parameter struct is valid; only the fields in `op_attr_mask` are read.
    let mut param: sys::ucp_request_param_t = unsafe { std::mem::zeroed() };
    param.op_attr_mask =
        sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_CALLBACK as u32 | sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_USER_DATA as u32 | more;
    param.user_data = user_data;
    param
}

/// Completion callback of a tagged receive: `(request, status, info, user_data)`.
pub(super) type RecvCallback = unsafe extern "C" fn(*mut c_void, i8, *const sys::ucp_tag_recv_info_t, *mut c_void);
/// Completion callback of a send: `(request, status, user_data)`.
pub(super) type SendCallback = unsafe extern "C" fn(*mut c_void, i8, *mut c_void);
pub(super) fn send_cb(cb: SendCallback) -> sys::ucp_send_nbx_callback_t {
    // SAFETY: `ucs_status_t` is a one-byte C enum, passed exactly like `i8`; the function types are
    // otherwise identical, so the ABI matches.
    Some(unsafe { std::mem::transmute::<SendCallback, _>(cb) })
}

pub(super) fn recv_cb(cb: RecvCallback) -> sys::ucp_tag_recv_nbx_callback_t {
    // SAFETY: as in `send_cb`.
    Some(unsafe { std::mem::transmute::<RecvCallback, _>(cb) })
}
