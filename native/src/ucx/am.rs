//! Active messages: the handler type and UCX's side of every handler.

use std::os::raw::c_void;
use std::sync::Arc;

use log::warn;
use ucx1_sys as sys;

/// What an active-message handler gets: the message's header bytes. It runs inside
/// [`WorkerLock::progress`], with the worker's lock held, and must only note what arrived.
pub type AmHandler = dyn Fn(&[u8]) + Send + Sync;

/// UCX's side of every active-message handler: calls the handler boxed in `arg` with the header.
pub(super) unsafe extern "C" fn am_received(
    arg: *mut c_void,
    header: *const c_void,
    header_length: sys::size_t,
    _data: *mut c_void,
    _length: sys::size_t,
    _param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: `arg` is the `Arc<AmHandler>` boxed by `WorkerLock::on_active_message`, which the
    // worker keeps until it is destroyed.
    let handler = unsafe { &*(arg as *const Arc<AmHandler>) };
    let bytes: &[u8] = if header.is_null() {
        &[]
    } else {
        // SAFETY: UCX passes `header_length` readable bytes of the message's header.
        unsafe { std::slice::from_raw_parts(header as *const u8, header_length as usize) }
    };
    // A panic must not unwind into UCX.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(bytes))).is_err() {
        warn!("an active-message handler panicked; the message was dropped");
    }
    sys::ucs_status_t::UCS_OK
}
