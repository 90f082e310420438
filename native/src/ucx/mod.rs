//! Safe owners of UCX handles: [`Context`] → [`Worker`] → [`Endpoint`].
//!
//! This is the only module that calls `ucx1_sys`. Every handle has exactly one owner whose `Drop`
//! completes or cancels what is still pending before releasing it, and every child keeps its parent
//! alive through an `Arc`.
//!
//! Thread rule: a UCX worker is created in `UCS_THREAD_MODE_SINGLE`; every call that touches a
//! worker or one of its endpoints takes the worker's re-entrant lock (see [`Worker::lock`]), so the
//! wrappers can be used from any thread. Completion callbacks run inside [`Worker::progress`], with
//! that lock held; they fill in a [`Completion`] and wake its owner, nothing else.

mod completion;
pub mod logging;

pub use completion::{Completion, Wake};

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, warn};
use parking_lot::{Mutex, ReentrantMutex, ReentrantMutexGuard};
use ucx1_sys as sys;

use crate::stats::{self, Counter};

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

/// Switches the calling thread to the C numeric locale while alive, so that UCX parses numbers in
/// its configuration the same way whatever locale the JVM runs with.
struct CNumericLocale {
    locale: libc::locale_t,
    previous: libc::locale_t,
}

impl CNumericLocale {
    fn enter() -> Option<Self> {
        let name = b"C\0";
        // SAFETY: `name` is NUL-terminated; a null base locale asks for a fresh object.
        let locale = unsafe {
            libc::newlocale(libc::LC_NUMERIC_MASK, name.as_ptr() as *const c_char, ptr::null_mut())
        };
        if locale.is_null() {
            return None;
        }
        // SAFETY: `locale` is a valid locale object created above.
        let previous = unsafe { libc::uselocale(locale) };
        Some(CNumericLocale { locale, previous })
    }
}

impl Drop for CNumericLocale {
    fn drop(&mut self) {
        // SAFETY: restores the thread's previous locale, then frees ours, which is no longer used.
        unsafe {
            libc::uselocale(self.previous);
            libc::freelocale(self.locale);
        }
    }
}

/// Room for UCX's own headers in a shared-memory segment beyond the message (tag, protocol and
/// transport headers take well under this).
const MM_SEG_HEADROOM: usize = 256;

/// Elements of a worker's shared-memory receive FIFO. Our endpoints get no RMA lane on one host
/// (their description lists none), so rendezvous messages travel through this FIFO too, one
/// segment per element: UCX's 64 fill up behind one large message, and the sender then polls
/// until the receiver drains them (nothing wakes it). With more busy threads than cores that
/// polling cost blocking connections over half their throughput. Each element costs a segment of
/// shared memory per worker.
const MM_FIFO_SIZE: usize = 128;

/// Sets a UCX option unless the environment sets it (`UCX_<name>`).
fn default_setting(config: *mut sys::ucp_config_t, name: &str, value: &str) {
    if std::env::var_os(format!("UCX_{name}")).is_some() {
        return;
    }
    set(config, name, value);
}

/// The transports of a context without shared memory: UCX's own list (`UCX_TLS`, all by
/// default) less posix, sysv and xpmem.
fn tls_without_shared_memory(user: Option<&str>) -> String {
    const SHARED: [&str; 6] = ["posix", "sysv", "xpmem", "mm", "sm", "shm"];
    match user.map(str::trim) {
        None | Some("") | Some("all") => String::from("^mm"),
        Some(list) if list.starts_with('^') => format!("{list},mm"),
        Some(list) => {
            let mut kept: Vec<&str> = list.split(',').map(str::trim).filter(|t| !SHARED.contains(t)).collect();
            if list.split(',').any(|t| matches!(t.trim(), "sm" | "shm")) {
                kept.extend(["cma", "knem"]);
            }
            if kept.is_empty() {
                // Nothing is left: UCX then finds no transport and the connection stays on TCP.
                kept.push("self");
            }
            kept.join(",")
        }
    }
}

/// Whether a transport list (`UCX_TLS`, `None`: all) may include the shared-memory transports
/// whose settings hadroNIO tunes (UCX warns about settings of transports it does not use).
fn uses_shared_memory(tls: Option<&str>) -> bool {
    match tls.map(str::trim) {
        None | Some("") => true,
        Some(list) if list.starts_with('^') => true,
        Some(list) => list.split(',').any(|t| matches!(t.trim(), "all" | "posix" | "sysv" | "mm" | "sm" | "shm")),
    }
}

fn set(config: *mut sys::ucp_config_t, name: &str, value: &str) {
    let (Ok(c_name), Ok(c_value)) = (CString::new(name), CString::new(value)) else {
        return;
    };
    // SAFETY: `config` is a valid configuration from `ucp_config_read`; both strings are
    // NUL-terminated.
    let status = unsafe { sys::ucp_config_modify(config, c_name.as_ptr(), c_value.as_ptr()) };
    if Status(status as i8) != Status::OK {
        warn!("could not set UCX {name}={value}: {}", Status(status as i8));
    }
}

/// Owner of a `ucp_context_h`.
pub struct Context {
    handle: sys::ucp_context_h,
}

// SAFETY: the context is created with `mt_workers_shared`, so UCX allows workers of one context to
// be created and used from different threads; the handle itself is only read after creation.
unsafe impl Send for Context {}
// SAFETY: see `Send`.
unsafe impl Sync for Context {}

impl Context {
    /// Reads the UCX configuration (environment `UCX_*`) under the C numeric locale and creates a
    /// context for tagged messages, active messages and event-fd wake-up. `eager_message` is the
    /// longest message that should go in one copy through shared memory rather than by
    /// rendezvous (which needs the sender to make progress before the receiver has it); 0 keeps
    /// UCX's segment size.
    ///
    /// Without `shared_memory` the context leaves out UCX's shared-memory transports (for peers
    /// on this host that shared memory cannot reach: other namespaces).
    pub fn new(eager_message: usize, shared_memory: bool) -> Result<Arc<Context>> {
        let _locale = CNumericLocale::enter();
        let mut config: *mut sys::ucp_config_t = ptr::null_mut();
        // SAFETY: null prefix and file name select the defaults; `config` receives the handle.
        check("ucp_config_read", unsafe {
            sys::ucp_config_read(ptr::null(), ptr::null(), &mut config)
        })?;
        if shared_memory && uses_shared_memory(std::env::var("UCX_TLS").ok().as_deref()) {
            // Shared memory must stay usable on endpoints with peer error handling.
            default_setting(config, "MM_ERROR_HANDLING", "y");
            if eager_message > 0 {
                default_setting(config, "MM_SEG_SIZE", &(eager_message + MM_SEG_HEADROOM).to_string());
            }
            default_setting(config, "MM_FIFO_SIZE", &MM_FIFO_SIZE.to_string());
        } else if !shared_memory {
            let user = std::env::var("UCX_TLS").ok();
            set(config, "TLS", &tls_without_shared_memory(user.as_deref()));
        }
        // SAFETY: an all-zero parameter struct is valid; only the fields in `field_mask` are read.
        let mut params: sys::ucp_params_t = unsafe { std::mem::zeroed() };
        params.field_mask = (sys::ucp_params_field::UCP_PARAM_FIELD_FEATURES
            | sys::ucp_params_field::UCP_PARAM_FIELD_MT_WORKERS_SHARED
            | sys::ucp_params_field::UCP_PARAM_FIELD_NAME)
            .0 as u64;
        params.features = (sys::ucp_feature::UCP_FEATURE_TAG
            | sys::ucp_feature::UCP_FEATURE_AM
            | sys::ucp_feature::UCP_FEATURE_WAKEUP)
            .0 as u64;
        params.mt_workers_shared = 1;
        let name = b"hadronio\0";
        params.name = name.as_ptr() as *const c_char;
        let mut handle: sys::ucp_context_h = ptr::null_mut();
        // SAFETY: `params` and `config` are valid for the call; `handle` receives the context.
        let status = unsafe {
            sys::ucp_init_version(BUILT_MAJOR, BUILT_MINOR, &params, config, &mut handle)
        };
        // SAFETY: the configuration is no longer needed after `ucp_init_version`.
        unsafe { sys::ucp_config_release(config) };
        check("ucp_init", status)?;
        Ok(Arc::new(Context { handle }))
    }
}

#[cfg(test)]
mod tests {
    use super::{tls_without_shared_memory, uses_shared_memory};

    #[test]
    fn shared_memory_settings_only_where_it_may_be_used() {
        assert!(uses_shared_memory(None));
        assert!(uses_shared_memory(Some("sm,self")));
        assert!(uses_shared_memory(Some("^ib")));
        assert!(!uses_shared_memory(Some("tcp")));
        assert!(!uses_shared_memory(Some("self,tcp,cma")));
    }

    #[test]
    fn shared_memory_is_left_out_of_any_transport_list() {
        assert_eq!(tls_without_shared_memory(None), "^mm");
        assert_eq!(tls_without_shared_memory(Some("^ib")), "^ib,mm");
        assert_eq!(tls_without_shared_memory(Some("tcp,posix,cma")), "tcp,cma");
        assert_eq!(tls_without_shared_memory(Some("sm,tcp")), "tcp,cma,knem");
        assert_eq!(tls_without_shared_memory(Some("posix")), "self");
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every worker holds an `Arc<Context>`, so none is left when this runs.
        unsafe { sys::ucp_cleanup(self.handle) };
    }
}

/// A pending UCX request (send, receive or close). Freed with [`Request::free`]; completion is
/// reported through the callback it was started with.
#[derive(Debug)]
pub struct Request(NonNull<c_void>);

// SAFETY: a request pointer is only used under its worker's lock.
unsafe impl Send for Request {}

impl Request {
    fn as_ptr(&self) -> *mut c_void {
        self.0.as_ptr()
    }

    /// Returns the request to UCX. If it is still pending it completes in the background and its
    /// callback still runs.
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

/// Completion callback of a tagged receive: `(request, status, info, user_data)`.
type RecvCallback = unsafe extern "C" fn(*mut c_void, i8, *const sys::ucp_tag_recv_info_t, *mut c_void);
/// Completion callback of a send: `(request, status, user_data)`.
type SendCallback = unsafe extern "C" fn(*mut c_void, i8, *mut c_void);
/// What an active-message handler gets: the message's header bytes. It runs inside
/// [`WorkerLock::progress`], with the worker's lock held, and must only note what arrived.
pub type AmHandler = dyn Fn(&[u8]) + Send + Sync;

/// UCX's side of every active-message handler: calls the handler boxed in `arg` with the header.
unsafe extern "C" fn am_received(
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

fn send_cb(cb: SendCallback) -> sys::ucp_send_nbx_callback_t {
    // SAFETY: `ucs_status_t` is a one-byte C enum, passed exactly like `i8`; the function types are
    // otherwise identical, so the ABI matches.
    Some(unsafe { std::mem::transmute::<SendCallback, _>(cb) })
}

fn recv_cb(cb: RecvCallback) -> sys::ucp_tag_recv_nbx_callback_t {
    // SAFETY: as in `send_cb`.
    Some(unsafe { std::mem::transmute::<RecvCallback, _>(cb) })
}

/// Owner of a `ucp_worker_h` and its event fd.
pub struct Worker {
    context: Arc<Context>,
    handle: sys::ucp_worker_h,
    lock: ReentrantMutex<()>,
    event_fd: c_int,
    address: Vec<u8>,
    /// Memory that requests of this worker may still write (see [`Worker::keep_until_destroyed`]);
    /// dropped after the worker is destroyed.
    kept: Mutex<Vec<Box<dyn Send>>>,
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
    worker: &'a Worker,
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
        Ok(Arc::new(worker))
    }

    /// Takes the worker's re-entrant lock.
    pub fn lock(&self) -> WorkerLock<'_> {
        WorkerLock { worker: self, _guard: self.lock.lock() }
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
        // SAFETY: an all-zero parameter struct is valid; only the fields in `op_attr_mask` are read.
        let mut param: sys::ucp_request_param_t = unsafe { std::mem::zeroed() };
        param.op_attr_mask = sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_CALLBACK as u32
            | sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_USER_DATA as u32
            | sys::ucp_op_attr_t::UCP_OP_ATTR_FLAG_NO_IMM_CMPL as u32;
        param.cb.recv = recv_cb(completion::received);
        param.user_data = done.as_user_data();
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

    /// Progresses until `request` is no longer in progress.
    pub fn complete(&self, request: &Request) {
        loop {
            // SAFETY: the request is pending and owned by the caller; the lock is held.
            let status = Status(unsafe { sys::ucp_request_check_status(request.as_ptr()) } as i8);
            if status != Status::IN_PROGRESS {
                return;
            }
            self.progress();
        }
    }

    /// Progresses until none of `requests` is in progress or `deadline` passed; true if all
    /// completed.
    pub fn complete_by(&self, requests: &[Request], deadline: Instant) -> bool {
        loop {
            // SAFETY: the requests are owned by the caller and not freed; the lock is held.
            let busy = requests.iter().any(|r| Status(unsafe { sys::ucp_request_check_status(r.as_ptr()) } as i8) == Status::IN_PROGRESS);
            if !busy {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.progress();
        }
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
        // SAFETY: every endpoint holds an `Arc<Worker>`, so none is left; no other thread can hold
        // the lock of a worker that is being dropped.
        unsafe { sys::ucp_worker_destroy(self.handle) };
        // Only now: requests cancelled by the destruction ran their callbacks into it.
        self.kept.get_mut().clear();
        self.handlers.get_mut().clear();
    }
}

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
        // SAFETY: an all-zero parameter struct is valid; only the fields in `op_attr_mask` are read.
        let mut param: sys::ucp_request_param_t = unsafe { std::mem::zeroed() };
        param.op_attr_mask = sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_CALLBACK as u32
            | sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_USER_DATA as u32;
        if immediate_only {
            param.op_attr_mask |= sys::ucp_op_attr_t::UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL as u32;
        }
        param.cb.send = send_cb(completion::sent);
        param.user_data = done.map_or(ptr::null_mut(), Completion::as_user_data);
        // SAFETY: the endpoint is valid and its worker is locked; the caller guarantees the buffer.
        let ptr = unsafe { sys::ucp_tag_send_nbx(self.handle, buffer as *const c_void, length as sys::size_t, tag, &param) };
        match decode_ptr(ptr) {
            PtrStatus::Done => Ok(Some(Start::Done(()))),
            PtrStatus::Pending(request) => Ok(Some(Start::Pending(request))),
            PtrStatus::Failed(Status::NO_RESOURCE) if immediate_only => Ok(None),
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
        // SAFETY: an all-zero parameter struct is valid; only the fields in `op_attr_mask` are read.
        let mut param: sys::ucp_request_param_t = unsafe { std::mem::zeroed() };
        param.op_attr_mask = sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_CALLBACK as u32
            | sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_USER_DATA as u32
            | sys::ucp_op_attr_t::UCP_OP_ATTR_FIELD_FLAGS as u32;
        param.flags = sys::ucp_send_am_flags::UCP_AM_SEND_FLAG_EAGER.0;
        param.cb.send = send_cb(cb);
        param.user_data = user_data;
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
    /// that the completion frees; a pending request is returned to be waited for or freed (it
    /// completes on its own).
    pub fn am_send_owned(&self, lock: &WorkerLock<'_>, id: u32, header: &[u8], data: &'static [u8]) -> Result<Start<()>> {
        let copy: *mut Vec<u8> = Box::into_raw(Box::new(header.to_vec()));
        // SAFETY: the copy stays allocated until `free_header` runs at completion (or below when
        // UCX completed at once or refused: then the callback does not run); `data` is static.
        let started = unsafe { self.am_send_raw(lock, id, &*copy, data, free_header, copy as *mut c_void) };
        match started {
            Ok(Start::Pending(request)) => Ok(Start::Pending(request)),
            other => {
                // SAFETY: no callback will run; the copy is ours again.
                drop(unsafe { Box::from_raw(copy) });
                other
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

/// How long [`WorkerLock::drain_unexpected`] waits for one message (a rendezvous from a dead peer
/// may never complete).
const DRAIN_WAIT: Duration = Duration::from_millis(100);

unsafe extern "C" fn close_done(_request: *mut c_void, _status: i8, _user_data: *mut c_void) {}

unsafe extern "C" fn free_header(_request: *mut c_void, _status: i8, user_data: *mut c_void) {
    // SAFETY: `user_data` is the header copy boxed by `am_send_owned`; the callback runs once.
    drop(unsafe { Box::from_raw(user_data as *mut Vec<u8>) });
}

impl Drop for Endpoint {
    fn drop(&mut self) {
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
