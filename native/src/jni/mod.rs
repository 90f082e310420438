//! The JNI exports of `dev.hadronio.internal.Native` — the only `Java_*` symbols of the library.
//!
//! Every export is one guarded call: panics are caught here and never unwind into the JVM.
//! Hot-path exports (`connRead`, `connWrite`, their vectored forms, `selectorSelect`,
//! `selectorWakeup`, `keyInterest`) return `>= 0` for a count and a negated
//! [`Status`](crate::core::error::Status) otherwise and touch no `JNIEnv`; the message of their
//! last failure on the calling thread is available through `lastError`. Slow-path exports throw
//! the JDK exception of the error through the table in [`errors`].
//!
//! Thread rule for every handle argument: see [`handle`]. Blocking calls may run concurrently
//! with any other call on the same handle; a `destroy` during a call frees the handle after it.

pub mod errors;
pub mod handle;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use jni::objects::{JByteArray, JByteBuffer, JLongArray, JObject};
use jni::sys::{jboolean, jbyteArray, jclass, jint, jlong, jlongArray, jobject, jobjectArray, jstring, JNIEnv};
use jni::JNIEnv as Env;

use crate::config::{settings, Settings};
use crate::core::conn::Conn;
use crate::core::error::{Error, Status};
use crate::core::iov::Region;
use crate::core::listener::Listener;
use crate::core::readiness::Key;
use crate::core::selector::{Selector, Target};
use crate::net::socket::{encode_addr, socket_addr};
use crate::stats::{self, Counter};

thread_local! {
    static LAST_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("unknown panic")
    }
}

/// Runs a hot-path body: no `JNIEnv`, errors become negative status codes.
fn hot(body: impl FnOnce() -> Result<i64, Error>) -> i64 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            let code = error.status.code() as i64;
            LAST_ERROR.with(|e| *e.borrow_mut() = Some(error));
            code
        }
        Err(payload) => {
            let error = Error::new(Status::Internal, format!("hadroNIO internal error: {}", panic_message(&payload)));
            LAST_ERROR.with(|e| *e.borrow_mut() = Some(error));
            Status::Internal.code() as i64
        }
    }
}

/// Runs a slow-path body: errors are thrown as Java exceptions and `default` is returned.
fn slow<R>(raw: *mut JNIEnv, default: R, body: impl FnOnce(&mut Env<'_>) -> Result<R, Error>) -> R {
    // SAFETY: the JVM passes a valid `JNIEnv` pointer for the current thread.
    let Ok(mut env) = (unsafe { Env::from_raw(raw) }) else { return default };
    match catch_unwind(AssertUnwindSafe(|| body(&mut env))) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            errors::throw(&mut env, &error);
            default
        }
        Err(payload) => {
            let error = Error::new(Status::Internal, format!("hadroNIO internal error: {}", panic_message(&payload)));
            errors::throw(&mut env, &error);
            default
        }
    }
}

fn jni_error(error: jni::errors::Error) -> Error {
    Error::new(Status::Internal, format!("JNI call failed: {error}"))
}

fn address(env: &mut Env<'_>, ip: jbyteArray, scope: jint, port: jint) -> Result<SocketAddr, Error> {
    // SAFETY: `ip` is a live local reference passed by the JVM for this call.
    let ip = unsafe { JByteArray::from_raw(ip) };
    let length = env.get_array_length(&ip).map_err(jni_error)?;
    if length != 4 && length != 16 {
        return Err(Error::invalid(format!("bad IP address length {length}")));
    }
    if !(0..=65535).contains(&port) {
        return Err(Error::invalid(format!("port out of range: {port}")));
    }
    let length = length as usize;
    let mut signed = [0i8; 16];
    env.get_byte_array_region(&ip, 0, &mut signed[..length]).map_err(jni_error)?;
    let octets = signed.map(|b| b as u8);
    socket_addr(&octets[..length], scope as u32, port as u16).ok_or_else(|| Error::invalid(format!("bad IP address length {length}")))
}

fn address_bytes(env: &mut Env<'_>, addr: Option<SocketAddr>) -> Result<jbyteArray, Error> {
    match addr {
        None => Ok(std::ptr::null_mut()),
        Some(addr) => Ok(env.byte_array_from_slice(&encode_addr(&addr)).map_err(jni_error)?.into_raw()),
    }
}

fn timeout(millis: jlong) -> Option<Duration> {
    if millis > 0 {
        Some(Duration::from_millis(millis as u64))
    } else {
        None
    }
}

/// # Safety
/// `iov` must point to `count` pairs of 64-bit `(address, length)` written by the Java side,
/// valid for the duration of the call.
unsafe fn regions<'a>(iov: jlong, count: jint) -> Result<&'a [Region<'a>], Error> {
    if iov == 0 || count < 0 {
        return Err(Error::invalid("bad I/O vector"));
    }
    // SAFETY: `Region` is two `usize`s (`repr(C)`), the layout of the Java pairs on 64-bit Linux;
    // the caller vouches for the memory they describe as for the pairs.
    Ok(unsafe { std::slice::from_raw_parts(iov as *const Region<'a>, count as usize) })
}

// --- library -----------------------------------------------------------------------------------

/// `static native void init(long[] settings, byte[] secret, String rules)`: installs the settings
/// (order: [`crate::config::SETTING_NAMES`]), the shared secret (null or empty: none) and the
/// rules (`hadronio.rules`, see [`crate::rules`]; null: none), and checks that the loaded UCX can
/// be used. Throws `IllegalStateException` on a UCX version mismatch, `IllegalArgumentException`
/// on bad settings or rules.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_init(
    env: *mut JNIEnv,
    _class: jclass,
    values: jlongArray,
    secret: jbyteArray,
    rules: jstring,
) {
    slow(env, (), |env| {
        // SAFETY: `values` is a live local reference passed by the JVM for this call.
        let array = unsafe { JLongArray::from_raw(values) };
        let length = env.get_array_length(&array).map_err(jni_error)?;
        let mut buffer = vec![0i64; length.max(0) as usize];
        env.get_long_array_region(&array, 0, &mut buffer).map_err(jni_error)?;
        let secret = if secret.is_null() {
            None
        } else {
            // SAFETY: `secret` is a live local reference passed by the JVM for this call.
            let secret = unsafe { JByteArray::from_raw(secret) };
            Some(env.convert_byte_array(&secret).map_err(jni_error)?)
        };
        let rules: String = if rules.is_null() {
            String::new()
        } else {
            // SAFETY: `rules` is a live local reference passed by the JVM for this call.
            let rules = unsafe { jni::objects::JString::from_raw(rules) };
            let text: String = env.get_string(&rules).map_err(jni_error)?.into();
            text
        };
        let wanted = Settings::from_values(&buffer, secret.as_deref(), &rules).map_err(Error::invalid)?;
        if Settings::install(wanted.clone()) {
            let mut changes = wanted.changes();
            if !rules.is_empty() {
                changes.push(format!("hadronio.rules={rules}"));
            }
            let changes = if changes.is_empty() { String::from("defaults") } else { changes.join(", ") };
            log::info!("hadroNIO {} with UCX {}; settings: {changes}", env!("CARGO_PKG_VERSION"), crate::ucx::version_text());
        } else if *settings() != wanted {
            log::debug!("hadroNIO settings were already installed; keeping the first ones");
        }
        if let Some(problem) = crate::load_problem() {
            return Err(Error::new(Status::BadHandle, problem));
        }
        crate::core::background::start_background().map_err(|e| Error::io("starting the hadronio-background thread", &e))?;
        // The UCX context depends on the settings (segment size): create it now that they are in,
        // with a worker, on a thread of its own (the application's thread goes on).
        if settings().upgrade.ucx {
            crate::core::lanes::warm(crate::core::lanes::Kind::Full, crate::core::lanes::Tuning::of(settings()));
        }
        Ok(())
    })
}

/// `static native String version()`: the library and UCX versions, and whether UCX works.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_version(env: *mut JNIEnv, _class: jclass) -> jstring {
    slow(env, std::ptr::null_mut(), |env| {
        let (major, minor, release) = crate::ucx::runtime_version();
        let ucx = match crate::core::lanes::context(crate::core::lanes::Kind::Full, crate::core::lanes::Tuning::of(settings())) {
            Ok(_) => String::from("available"),
            Err(e) => format!("unavailable: {e}"),
        };
        let text = format!(
            "hadroNIO {} (UCX {major}.{minor}.{release}, built against {}.{}; {ucx})",
            env!("CARGO_PKG_VERSION"),
            crate::ucx::BUILT_MAJOR,
            crate::ucx::BUILT_MINOR
        );
        Ok(env.new_string(text).map_err(jni_error)?.into_raw())
    })
}

/// A new `String[]` holding `names` in order.
fn string_array<'a>(env: &mut Env<'_>, names: impl ExactSizeIterator<Item = &'a str>) -> Result<jobjectArray, Error> {
    let array = env.new_object_array(names.len() as i32, "java/lang/String", JObject::null()).map_err(jni_error)?;
    for (index, name) in names.enumerate() {
        let name = env.new_string(name).map_err(jni_error)?;
        env.set_object_array_element(&array, index as i32, name).map_err(jni_error)?;
    }
    Ok(array.into_raw())
}

/// `static native String[] statusNames()`: the name of status `-(i + 1)` at index `i`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_statusNames(env: *mut JNIEnv, _class: jclass) -> jobjectArray {
    slow(env, std::ptr::null_mut(), |env| string_array(env, Status::ALL.iter().map(|s| s.name())))
}

/// `static native String[] counterNames()`: the names of the counters, in `counters()` order.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_counterNames(env: *mut JNIEnv, _class: jclass) -> jobjectArray {
    slow(env, std::ptr::null_mut(), |env| string_array(env, Counter::ALL.iter().map(|c| c.name())))
}

/// `static native String[] counterDescriptions()`: what each counter counts, in `counters()` order.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_counterDescriptions(env: *mut JNIEnv, _class: jclass) -> jobjectArray {
    slow(env, std::ptr::null_mut(), |env| string_array(env, Counter::ALL.iter().map(|c| c.description())))
}

/// `static native void yieldToApplication()`: the calling thread runs at a lower priority
/// (see [`yield_to_application`]).
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_yieldToApplication(_env: *mut JNIEnv, _class: jclass) {
    yield_to_application();
}

/// Lowers the calling thread's scheduling priority to nice 10: for the Java side's start-up work
/// that the application does not wait for (the way to buffer addresses, the MBean). On an idle
/// core it runs as before; where the application's threads want the cores (a JVM that just
/// started has its compilers busy too) those go first. Nothing happens where the kernel refuses.
fn yield_to_application() {
    // SAFETY: plain system calls on this thread's own id.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) } != 0 {
        log::debug!("thread priority not lowered: {}", std::io::Error::last_os_error());
    }
}

/// `static native long[] counters()`: every counter's total (see [`crate::stats`]).
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_counters(env: *mut JNIEnv, _class: jclass) -> jlongArray {
    slow(env, std::ptr::null_mut(), |env| {
        let totals: Vec<i64> = stats::read().iter().map(|&v| v.min(i64::MAX as u64) as i64).collect();
        let array = env.new_long_array(totals.len() as i32).map_err(jni_error)?;
        env.set_long_array_region(&array, 0, &totals).map_err(jni_error)?;
        Ok(array.into_raw())
    })
}

/// `static native String lastError()`: the message of the last hot-path failure on this thread
/// (and forgets it), or null.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_lastError(env: *mut JNIEnv, _class: jclass) -> jstring {
    slow(env, std::ptr::null_mut(), |env| match LAST_ERROR.with(|e| e.borrow_mut().take()) {
        Some(error) => Ok(env.new_string(error.message).map_err(jni_error)?.into_raw()),
        None => Ok(std::ptr::null_mut()),
    })
}

/// `static native long bufferAddress(ByteBuffer direct)`: the native address of a direct buffer
/// (JDK 21 and older, once per buffer and thread; newer JDKs ask `MemorySegment`).
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_bufferAddress(env: *mut JNIEnv, _class: jclass, buffer: jobject) -> jlong {
    slow(env, 0, |env| {
        // SAFETY: `buffer` is a live local reference passed by the JVM for this call.
        let buffer = unsafe { JByteBuffer::from_raw(buffer) };
        let address = env.get_direct_buffer_address(&buffer).map_err(|_| Error::invalid("not a direct buffer"))?;
        Ok(address as jlong)
    })
}

/// `static native SelectorProvider jdkSelectorProvider()`: the JDK's own provider
/// (`sun.nio.ch.DefaultSelectorProvider`), for the channel kinds hadroNIO leaves to it. JNI calls
/// are not subject to the module system's access checks, so no `--add-exports` is needed.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_jdkSelectorProvider(env: *mut JNIEnv, _class: jclass) -> jobject {
    slow(env, std::ptr::null_mut(), |env| {
        const HOLDER: &str = "sun/nio/ch/DefaultSelectorProvider";
        // `SelectorProviderImpl get()` since JDK 15, `SelectorProvider create()` before.
        const METHODS: [(&str, &str); 3] = [
            ("get", "()Lsun/nio/ch/SelectorProviderImpl;"),
            ("get", "()Ljava/nio/channels/spi/SelectorProvider;"),
            ("create", "()Ljava/nio/channels/spi/SelectorProvider;"),
        ];
        for (method, signature) in METHODS {
            match env.call_static_method(HOLDER, method, signature, &[]) {
                Ok(value) => {
                    let provider = value.l().map_err(jni_error)?;
                    if !provider.is_null() {
                        return Ok(provider.into_raw());
                    }
                }
                Err(_) => {
                    // A NoSuchMethodError is pending: clear it and try the other name.
                    let _ = env.exception_clear();
                }
            }
        }
        Err(Error::new(Status::Io, "the JDK's SelectorProvider (sun.nio.ch.DefaultSelectorProvider) is not there"))
    })
}

// --- socket channels ---------------------------------------------------------------------------

/// `static native long connOpen()`: a new unconnected TCP socket; the handle is owned by the
/// caller until `connDestroy`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connOpen(env: *mut JNIEnv, _class: jclass) -> jlong {
    slow(env, 0, |_| Ok(handle::into_handle(Conn::open(settings())?)))
}

/// `static native void connBind(long handle, byte[] ip, int scopeId, int port)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connBind(
    env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    ip: jbyteArray,
    scope: jint,
    port: jint,
) {
    slow(env, (), |env| {
        let addr = address(env, ip, scope, port)?;
        handle::get::<Conn>(conn)?.bind(&addr)
    })
}

/// `static native int connConnect(long handle, byte[] ip, int scopeId, int port, boolean blocking,
/// long timeoutMillis)`: 1 if connected, 0 if pending (non-blocking). Throws `ConnectException`
/// on refusal, `SocketTimeoutException` when `timeoutMillis > 0` expires.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connConnect(
    env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    ip: jbyteArray,
    scope: jint,
    port: jint,
    blocking: jboolean,
    timeout_millis: jlong,
) -> jint {
    slow(env, 0, |env| {
        let addr = address(env, ip, scope, port)?;
        let connected = handle::get::<Conn>(conn)?.connect(&addr, blocking != 0, timeout(timeout_millis))?;
        Ok(connected as jint)
    })
}

/// `static native int connFinishConnect(long handle, boolean blocking)`: 1 connected, 0 pending.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connFinishConnect(
    env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    blocking: jboolean,
) -> jint {
    slow(env, 0, |_| Ok(handle::get::<Conn>(conn)?.finish_connect(blocking != 0)? as jint))
}

/// `static native int connRead(long handle, long address, int length, boolean blocking,
/// long timeoutMillis)`: bytes read into native memory `address`, or a negative status
/// (`EOF` at end of stream). Hot path.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connRead(
    _env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    address: jlong,
    length: jint,
    blocking: jboolean,
    timeout_millis: jlong,
) -> jint {
    hot(|| {
        let conn = handle::lent::<Conn>(conn)?;
        // SAFETY: the Java caller holds the buffer at `address` and keeps it for the call.
        let regions = [unsafe { Region::raw(address as usize, length.max(0) as usize) }];
        Ok(conn.read(&regions, blocking != 0, timeout(timeout_millis))? as i64)
    }) as jint
}

/// `static native long connReadv(long handle, long iov, int count, boolean blocking,
/// long timeoutMillis)`: scattering read into `count` `(address, length)` pairs at `iov`. Hot path.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connReadv(
    _env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    iov: jlong,
    count: jint,
    blocking: jboolean,
    timeout_millis: jlong,
) -> jlong {
    hot(|| {
        let conn = handle::lent::<Conn>(conn)?;
        // SAFETY: the Java caller wrote `count` pairs at `iov` and keeps them alive for the call.
        let regions = unsafe { regions(iov, count)? };
        Ok(conn.read(regions, blocking != 0, timeout(timeout_millis))? as i64)
    })
}

/// `static native int connWrite(long handle, long address, int length, boolean blocking)`: bytes
/// written from native memory `address`, or a negative status. Hot path.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connWrite(
    _env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    address: jlong,
    length: jint,
    blocking: jboolean,
) -> jint {
    hot(|| {
        let conn = handle::lent::<Conn>(conn)?;
        // SAFETY: the Java caller holds the buffer at `address` and keeps it for the call.
        let regions = [unsafe { Region::raw(address as usize, length.max(0) as usize) }];
        Ok(conn.write(&regions, blocking != 0)? as i64)
    }) as jint
}

/// `static native long connWritev(long handle, long iov, int count, boolean blocking)`: gathering
/// write. Hot path.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connWritev(
    _env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    iov: jlong,
    count: jint,
    blocking: jboolean,
) -> jlong {
    hot(|| {
        let conn = handle::lent::<Conn>(conn)?;
        // SAFETY: the Java caller wrote `count` pairs at `iov` and keeps them alive for the call.
        let regions = unsafe { regions(iov, count)? };
        Ok(conn.write(regions, blocking != 0)? as i64)
    })
}

/// `static native void connShutdown(long handle, boolean input, boolean output)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connShutdown(
    env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    input: jboolean,
    output: jboolean,
) {
    slow(env, (), |_| {
        let conn = handle::get::<Conn>(conn)?;
        if input != 0 {
            conn.shutdown_input()?;
        }
        if output != 0 {
            conn.shutdown_output()?;
        }
        Ok(())
    })
}

/// `static native void connClose(long handle)`: closes the channel (graceful unless SO_LINGER is
/// 0 or unread data is left) and wakes threads blocked on it. The handle stays valid until
/// `connDestroy`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connClose(env: *mut JNIEnv, _class: jclass, conn: jlong) {
    slow(env, (), |_| {
        handle::get::<Conn>(conn)?.close();
        Ok(())
    })
}

/// `static native void connDestroy(long handle)`: releases the caller's handle (freed after the
/// calls still running on it). No call on this handle may follow.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connDestroy(env: *mut JNIEnv, _class: jclass, conn: jlong) {
    slow(env, (), |_| {
        if let Ok(c) = handle::get::<Conn>(conn) {
            c.close();
        }
        handle::destroy::<Conn>(conn)
    })
}

/// `static native byte[] connLocalAddress(long handle)`: `[ip length][ip][port u16][scope u32]`,
/// or null if unbound.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connLocalAddress(env: *mut JNIEnv, _class: jclass, conn: jlong) -> jbyteArray {
    slow(env, std::ptr::null_mut(), |env| {
        let addr = handle::get::<Conn>(conn)?.local_addr()?;
        address_bytes(env, addr)
    })
}

/// `static native byte[] connRemoteAddress(long handle)`: as `connLocalAddress`, null if not
/// connected.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connRemoteAddress(env: *mut JNIEnv, _class: jclass, conn: jlong) -> jbyteArray {
    slow(env, std::ptr::null_mut(), |env| {
        let addr = handle::get::<Conn>(conn)?.remote_addr();
        address_bytes(env, addr)
    })
}

/// `static native void connSetOption(long handle, int option, int value)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connSetOption(
    env: *mut JNIEnv,
    _class: jclass,
    conn: jlong,
    option: jint,
    value: jint,
) {
    slow(env, (), |_| handle::get::<Conn>(conn)?.set_option(option, value))
}

/// `static native int connGetOption(long handle, int option)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connGetOption(env: *mut JNIEnv, _class: jclass, conn: jlong, option: jint) -> jint {
    slow(env, 0, |_| handle::get::<Conn>(conn)?.get_option(option))
}

/// `static native String connDescribe(long handle)`: the connection's path (`ucx` or `tcp` and
/// why) followed by UCX's description of the endpoint's transports.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_connDescribe(env: *mut JNIEnv, _class: jclass, conn: jlong) -> jstring {
    slow(env, std::ptr::null_mut(), |env| {
        let text = handle::get::<Conn>(conn)?.describe();
        Ok(env.new_string(text).map_err(jni_error)?.into_raw())
    })
}

// --- server socket channels --------------------------------------------------------------------

/// `static native long listenerOpen()`: a new unbound listening socket (owned until
/// `listenerDestroy`).
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerOpen(env: *mut JNIEnv, _class: jclass) -> jlong {
    slow(env, 0, |_| Ok(handle::into_handle(Listener::open(settings())?)))
}

/// `static native void listenerBind(long handle, byte[] ip, int scopeId, int port, int backlog)`:
/// binds and listens.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerBind(
    env: *mut JNIEnv,
    _class: jclass,
    listener: jlong,
    ip: jbyteArray,
    scope: jint,
    port: jint,
    backlog: jint,
) {
    slow(env, (), |env| {
        let addr = address(env, ip, scope, port)?;
        handle::get::<Listener>(listener)?.bind(&addr, backlog)
    })
}

/// `static native long listenerAccept(long handle, boolean blocking, long timeoutMillis)`: the
/// handle of the accepted connection (owned by the caller), or 0 if none is pending.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerAccept(
    env: *mut JNIEnv,
    _class: jclass,
    listener: jlong,
    blocking: jboolean,
    timeout_millis: jlong,
) -> jlong {
    slow(env, 0, |_| {
        let accepted = handle::get::<Listener>(listener)?.accept(blocking != 0, timeout(timeout_millis))?;
        Ok(accepted.map(handle::into_handle).unwrap_or(0))
    })
}

/// `static native byte[] listenerLocalAddress(long handle)`: as `connLocalAddress`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerLocalAddress(env: *mut JNIEnv, _class: jclass, listener: jlong) -> jbyteArray {
    slow(env, std::ptr::null_mut(), |env| {
        let addr = handle::get::<Listener>(listener)?.local_addr()?;
        address_bytes(env, addr)
    })
}

/// `static native void listenerSetOption(long handle, int option, int value)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerSetOption(
    env: *mut JNIEnv,
    _class: jclass,
    listener: jlong,
    option: jint,
    value: jint,
) {
    slow(env, (), |_| handle::get::<Listener>(listener)?.set_option(option, value))
}

/// `static native int listenerGetOption(long handle, int option)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerGetOption(
    env: *mut JNIEnv,
    _class: jclass,
    listener: jlong,
    option: jint,
) -> jint {
    slow(env, 0, |_| handle::get::<Listener>(listener)?.get_option(option))
}

/// `static native void listenerClose(long handle)`: closes the socket; a blocked accept returns.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerClose(env: *mut JNIEnv, _class: jclass, listener: jlong) {
    slow(env, (), |_| {
        handle::get::<Listener>(listener)?.close();
        Ok(())
    })
}

/// `static native void listenerDestroy(long handle)`: releases the caller's handle.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_listenerDestroy(env: *mut JNIEnv, _class: jclass, listener: jlong) {
    slow(env, (), |_| {
        if let Ok(l) = handle::get::<Listener>(listener) {
            l.close();
        }
        handle::destroy::<Listener>(listener)
    })
}

// --- selectors ---------------------------------------------------------------------------------

/// `static native long selectorOpen()`: a selector with its own hub (UCX worker, epoll set);
/// owned until `selectorDestroy`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_selectorOpen(env: *mut JNIEnv, _class: jclass) -> jlong {
    slow(env, 0, |_| {
        let selector = Selector::open(settings()).map_err(|e| Error::io("opening a selector", &e))?;
        Ok(handle::into_handle(selector))
    })
}

/// `static native int selectorSelect(long handle, long timeoutMillis, long out, int capacity)`:
/// waits (`timeoutMillis < 0`: until ready or woken, `0`: not at all) and writes up to `capacity`
/// `(key index, ready ops)` int pairs to native memory `out`; returns the number of pairs. Hot
/// path; one thread at a time per selector.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_selectorSelect(
    _env: *mut JNIEnv,
    _class: jclass,
    selector: jlong,
    timeout_millis: jlong,
    out: jlong,
    capacity: jint,
) -> jint {
    hot(|| {
        let selector = handle::get::<Selector>(selector)?;
        if out == 0 || capacity < 0 {
            return Err(Error::invalid("bad selection buffer"));
        }
        // SAFETY: the Java caller provides `capacity` int pairs of writable native memory.
        let out = unsafe { std::slice::from_raw_parts_mut(out as *mut i32, 2 * capacity as usize) };
        let timeout = match timeout_millis {
            t if t < 0 => None,
            t => Some(Duration::from_millis(t as u64)),
        };
        Ok(selector.select(timeout, out) as i64)
    }) as jint
}

/// `static native int selectorWakeup(long handle)`: makes the current or next select return.
/// Hot path: 0 or a negative status.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_selectorWakeup(_env: *mut JNIEnv, _class: jclass, selector: jlong) -> jint {
    hot(|| {
        handle::get::<Selector>(selector)?.wakeup();
        Ok(0)
    }) as jint
}

/// `static native void selectorClose(long handle)`.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_selectorClose(env: *mut JNIEnv, _class: jclass, selector: jlong) {
    slow(env, (), |_| {
        handle::get::<Selector>(selector)?.close();
        Ok(())
    })
}

/// `static native void selectorDestroy(long handle)`: releases the caller's handle.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_selectorDestroy(env: *mut JNIEnv, _class: jclass, selector: jlong) {
    slow(env, (), |_| handle::destroy::<Selector>(selector))
}

/// `static native long keyRegister(long selector, long channel, boolean listener, int index,
/// int interest)`: registers a socket channel (or, with `listener`, a server socket channel);
/// returns the key handle (owned until `keyDeregister`).
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_keyRegister(
    env: *mut JNIEnv,
    _class: jclass,
    selector: jlong,
    channel: jlong,
    listener: jboolean,
    index: jint,
    interest: jint,
) -> jlong {
    slow(env, 0, |_| {
        let selector = handle::get::<Selector>(selector)?;
        let target = if listener != 0 {
            Target::Listener(handle::get::<Listener>(channel)?.clone())
        } else {
            Target::Conn(handle::get::<Conn>(channel)?.clone())
        };
        let key = selector.register(target, index, interest as u32)?;
        Ok(handle::into_handle(key))
    })
}

/// `static native int keyInterest(long key, int ops)`: sets the interest set. Hot path: 0 or a
/// negative status.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_keyInterest(_env: *mut JNIEnv, _class: jclass, key: jlong, ops: jint) -> jint {
    hot(|| {
        handle::get::<Key>(key)?.set_interest(ops as u32);
        Ok(0)
    }) as jint
}

/// `static native void keyDeregister(long selector, long key)`: removes the registration and
/// releases the key handle.
#[no_mangle]
pub extern "C" fn Java_dev_hadronio_internal_Native_keyDeregister(env: *mut JNIEnv, _class: jclass, selector: jlong, key: jlong) {
    slow(env, (), |_| {
        let selector = handle::get::<Selector>(selector)?;
        selector.deregister(&*handle::get::<Key>(key)?);
        handle::destroy::<Key>(key)
    })
}

#[cfg(test)]
mod tests {
    /// The calling thread's nice value.
    fn nice() -> i32 {
        // SAFETY: plain system calls on this thread's own id.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::syscall(libc::SYS_gettid) as libc::id_t) }
    }

    #[test]
    fn start_up_work_yields_to_the_application() {
        let before = nice();
        let lowered = std::thread::spawn(|| {
            super::yield_to_application();
            nice()
        })
        .join()
        .unwrap();
        assert!(lowered >= 10, "the thread runs at nice {lowered}");
        assert_eq!(nice(), before, "only the calling thread is lowered");
    }
}
