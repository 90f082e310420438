//! hadroNIO native core: java.nio channels over UCX.
//!
//! Layers: [`jni`] (the exports), [`core`] (connections, protocol, credits, waiting), [`ucx`]
//! (safe owners of UCX handles) and [`net`] (TCP sockets and epoll).

#![deny(unsafe_op_in_unsafe_fn)]

pub mod config;
pub mod core;
pub mod jni;
pub mod net;
pub mod rules;
pub mod stats;
pub mod ucx;

use std::os::raw::c_void;
use std::sync::OnceLock;

/// Why the library cannot be used, found while loading (reported by `Native.init`).
static LOAD_PROBLEM: OnceLock<Option<String>> = OnceLock::new();

pub fn load_problem() -> Option<String> {
    LOAD_PROBLEM.get().cloned().flatten()
}

/// Starts logging (`HADRONIO_LOG`, env_logger syntax), keeps UCX out of the JVM's signal handling
/// and checks the UCX version that was loaded.
pub fn initialize() {
    LOAD_PROBLEM.get_or_init(|| {
        let _ = env_logger::Builder::from_env(env_logger::Env::new().filter("HADRONIO_LOG").write_style("HADRONIO_LOG_STYLE"))
            .format_timestamp_micros()
            .try_init();
        ucx::disable_signal_handlers();
        ucx::logging::route_to_logger();
        if !net::host::at_exit(end_connections_at_exit) {
            log::warn!("cannot register the end of connections at exit: a peer of a JVM that exits without closing its connections reads a reset");
        }
        match ucx::check_runtime_version() {
            Ok((major, minor, release)) => {
                log::debug!("hadroNIO {} loaded UCX {major}.{minor}.{release}", env!("CARGO_PKG_VERSION"));
                None
            }
            Err(problem) => {
                log::error!("{problem}");
                Some(problem)
            }
        }
    });
}

/// Run by the C library as the process exits (after the JVM's shutdown hooks): ends open
/// connections as the kernel ends the process's sockets (see `core::conn::end_all`).
extern "C" fn end_connections_at_exit() {
    let _ = std::panic::catch_unwind(core::conn::end_all);
}

/// Called by the JVM when the library is loaded: returns the JNI version the library needs.
#[no_mangle]
pub extern "C" fn JNI_OnLoad(_vm: *mut ::jni::sys::JavaVM, _reserved: *mut c_void) -> ::jni::sys::jint {
    if std::panic::catch_unwind(initialize).is_err() {
        return ::jni::sys::JNI_ERR;
    }
    ::jni::sys::JNI_VERSION_1_8
}
