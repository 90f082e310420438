//! Safe owners of UCX handles: [`Context`] → [`Worker`] → [`Endpoint`], one file each, with
//! requests (`request.rs`), completion records (`completion.rs`), the memory operations use
//! after their call returned, owned with their records (`buffers.rs`), active messages (`am.rs`), the
//! sources sends pack their bytes from (`source.rs`), the memory receive slots are posted in
//! (`slot_memory.rs`) and the host's RDMA devices (`devices.rs`).
//!
//! This is the only module that calls `ucx1_sys`. Every handle has exactly one owner whose `Drop`
//! completes or cancels what is still pending before releasing it, and every child keeps its parent
//! alive through an `Arc`.
//!
//! Thread rule: a UCX worker is created in `UCS_THREAD_MODE_SINGLE`; every call that touches a
//! worker or one of its endpoints takes the worker's re-entrant lock (see [`Worker::lock`]), so the
//! wrappers can be used from any thread. Completion callbacks run inside [`Worker::progress`], with
//! that lock held; they fill in a [`Completion`] and wake its owner, nothing else.

mod am;
mod buffers;
mod completion;
mod context;
mod devices;
mod endpoint;
pub mod logging;
mod request;
mod slot_memory;
mod source;
mod worker;

pub use am::AmHandler;
pub use buffers::{RecvBuffer, SendBuffer, SlotOwner, SlotRing};
pub use completion::{Completion, Wake};
pub use context::{shared_memory_layout, Context, ContextOptions};
pub use devices::{is_software as is_software_rdma, rdma_devices, software_rdma_devices};
pub use endpoint::{check_worker_address, Endpoint, ErrorHandler};
pub use request::{Request, Start};
use slot_memory::SlotMemory;
pub use source::Source;
pub use worker::{Worker, WorkerLock};

use std::fmt;
use std::os::raw::c_uint;
use std::ptr::NonNull;

use ucx1_sys as sys;

/// The UCX API version these bindings were generated from; the runtime must be at least this.
pub const BUILT_MAJOR: u32 = sys::UCP_API_MAJOR;
pub const BUILT_MINOR: u32 = sys::UCP_API_MINOR;

/// A raw UCX status code (`ucs_status_t`). Kept as an integer: UCX may return values that are not
/// listed in the bindings' enum (link and endpoint failure ranges).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Status(pub i8);

impl Status {
    pub const OK: Status = Status(0);
    pub const IN_PROGRESS: Status = Status(1);
    pub const NO_RESOURCE: Status = Status(-2);
    pub const MESSAGE_TRUNCATED: Status = Status(-9);
    pub const BUSY: Status = Status(-15);
    pub const CANCELED: Status = Status(-16);

    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    fn name(self) -> &'static str {
        match self.0 {
            0 => "Success",
            1 => "Operation in progress",
            -1 => "No pending message",
            -2 => "No resources are available to initiate the operation",
            -3 => "Input/output error",
            -4 => "Out of memory",
            -5 => "Invalid parameter",
            -6 => "Destination is unreachable",
            -7 => "Address not valid",
            -8 => "Function not implemented",
            -9 => "Message truncated",
            -10 => "No progress",
            -11 => "Provided buffer is too small",
            -12 => "No such element",
            -13 => "Failed to connect some of the requested endpoints",
            -14 => "No such device",
            -15 => "Device is busy",
            -16 => "Request canceled",
            -17 => "Shared memory error",
            -18 => "Element already exists",
            -19 => "Index out of range",
            -20 => "Operation timed out",
            -21 => "User-defined limit was reached",
            -22 => "Unsupported operation",
            -23 => "Operation rejected by remote peer",
            -24 => "Endpoint is not connected",
            -25 => "Connection reset by remote peer",
            -59..=-40 => "Link failure",
            -79..=-60 => "Endpoint failure",
            _ => "Unknown UCX status",
        }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A failed UCX call: which call and its status.
#[derive(Debug, Clone)]
pub struct UcxError {
    pub call: &'static str,
    pub status: Status,
}

impl fmt::Display for UcxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.status)
    }
}

impl std::error::Error for UcxError {}

pub type Result<T> = std::result::Result<T, UcxError>;

fn check(call: &'static str, status: sys::ucs_status_t) -> Result<()> {
    let status = Status(status as i8);
    if status.is_ok() {
        Ok(())
    } else {
        Err(UcxError { call, status })
    }
}

/// Decodes a `ucs_status_ptr_t`: null (done), a request, or an error.
enum PtrStatus {
    Done,
    Pending(Request),
    Failed(Status),
}

fn decode_ptr(ptr: sys::ucs_status_ptr_t) -> PtrStatus {
    let raw = ptr as isize;
    if raw == 0 {
        PtrStatus::Done
    } else if (-128..0).contains(&raw) {
        PtrStatus::Failed(Status(raw as i8))
    } else {
        match NonNull::new(ptr) {
            Some(p) => PtrStatus::Pending(Request(p)),
            None => PtrStatus::Done,
        }
    }
}

/// The version of the UCX library loaded at run time, `(major, minor, release)`.
pub fn runtime_version() -> (u32, u32, u32) {
    let (mut major, mut minor, mut release): (c_uint, c_uint, c_uint) = (0, 0, 0);
    // SAFETY: the three out-pointers point to live locals.
    unsafe { sys::ucp_get_version(&mut major, &mut minor, &mut release) };
    (major, minor, release)
}

/// Checks that the loaded UCX can serve the API this library was built against.
pub fn check_runtime_version() -> std::result::Result<(u32, u32, u32), String> {
    let (major, minor, release) = runtime_version();
    if major != BUILT_MAJOR || minor < BUILT_MINOR {
        return Err(format!(
            "the loaded UCX library is version {major}.{minor}.{release}, but hadroNIO needs \
             UCX {BUILT_MAJOR}.x with x >= {BUILT_MINOR}; use the UCX bundled in the hadroNIO jar \
             (-Dhadronio.ucx.library=bundled, or unset HADRONIO_UCX) or install a newer UCX"
        ));
    }
    Ok((major, minor, release))
}

/// The loaded UCX's version, `major.minor.release`.
pub fn version_text() -> String {
    let (major, minor, release) = runtime_version();
    format!("{major}.{minor}.{release}")
}

extern "C" {
    // Not declared by the bindings (it lives in an internal header) but exported by libucs.
    fn ucs_debug_disable_signals();
}

/// Stops UCX from installing signal handlers: the JVM relies on SIGSEGV and friends itself.
pub fn disable_signal_handlers() {
    // SAFETY: plain C function without arguments; it only restores default signal dispositions
    // that UCX itself installed.
    unsafe { ucs_debug_disable_signals() };
}
