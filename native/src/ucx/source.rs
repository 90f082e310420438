//! Sources: where a send's bytes are when UCX packs them.
//!
//! UCX completes a send before returning only if it fits into a shared-memory FIFO element
//! (about 100 bytes); anything longer gets a request, even when UCX copies it out at once. A
//! send whose bytes come through a [`Source`] starts from the caller's memory, and if UCX queues
//! it instead (the peer's ring is full) the caller copies the bytes elsewhere and points the
//! source there ([`Source::point_at`]) before it returns: UCX reads the bytes only when it packs
//! them, under the worker's lock, so a queued send then reads the copy. Longer messages thus go
//! from the caller's memory into the peer's ring in one copy whenever there is room.

use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use ucx1_sys as sys;

use super::{check, Result};

/// Where a send's bytes are: an address and a length, read by UCX (through the datatype of
/// [`datatype`]) whenever it packs part of the message.
#[derive(Default)]
pub struct Source {
    addr: AtomicUsize,
    len: AtomicUsize,
}

impl Source {
    /// Points at `len` bytes at `addr`. Changed only under the lock of the worker a send from
    /// this source went to, and only to the same bytes elsewhere while it is pending.
    pub fn point_at(&self, addr: *const u8, len: usize) {
        self.addr.store(addr as usize, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
    }

    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

/// `start_pack`: the state is the source itself.
unsafe extern "C" fn start_pack(_context: *mut c_void, buffer: *const c_void, _count: sys::size_t) -> *mut c_void {
    buffer as *mut c_void
}

/// `start_unpack`: never used (receives go into contiguous memory); a null state.
unsafe extern "C" fn start_unpack(_context: *mut c_void, _buffer: *mut c_void, _count: sys::size_t) -> *mut c_void {
    std::ptr::null_mut()
}

unsafe extern "C" fn packed_size(state: *mut c_void) -> sys::size_t {
    // SAFETY: the state is the `Source` the send was started with, alive until it completed.
    let source = unsafe { &*(state as *const Source) };
    source.len() as sys::size_t
}

unsafe extern "C" fn pack(state: *mut c_void, offset: sys::size_t, dest: *mut c_void, max_length: sys::size_t) -> sys::size_t {
    // SAFETY: as in `packed_size`.
    let source = unsafe { &*(state as *const Source) };
    let len = source.len();
    let offset = (offset as usize).min(len);
    let n = (len - offset).min(max_length as usize);
    let addr = source.addr.load(Ordering::Relaxed);
    // SAFETY: the source points at `len` valid bytes (the caller's memory during the send call,
    // the copy afterwards); UCX's destination holds `max_length` bytes.
    unsafe { std::ptr::copy_nonoverlapping((addr + offset) as *const u8, dest as *mut u8, n) };
    n as sys::size_t
}

/// `unpack`: never used (see `start_unpack`).
unsafe extern "C" fn unpack(_state: *mut c_void, _offset: sys::size_t, _src: *const c_void, _length: sys::size_t) -> sys::ucs_status_t {
    sys::ucs_status_t::UCS_ERR_UNSUPPORTED
}

unsafe extern "C" fn finish(_state: *mut c_void) {}

/// The process's UCX datatype for sends from a [`Source`] (made on first use, never released).
pub(super) fn datatype() -> Result<sys::ucp_datatype_t> {
    static DATATYPE: OnceLock<Result<sys::ucp_datatype_t>> = OnceLock::new();
    DATATYPE.get_or_init(|| {
        let ops = sys::ucp_generic_dt_ops_t {
            start_pack: Some(start_pack),
            start_unpack: Some(start_unpack),
            packed_size: Some(packed_size),
            pack: Some(pack),
            unpack: Some(unpack),
            finish: Some(finish),
        };
        let mut datatype: sys::ucp_datatype_t = 0;
        // SAFETY: UCX copies the operations; the context is unused.
        check("ucp_dt_create_generic", unsafe { sys::ucp_dt_create_generic(&ops, std::ptr::null_mut(), &mut datatype) })?;
        Ok(datatype)
    })
    .clone()
}
