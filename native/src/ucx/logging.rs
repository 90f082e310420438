//! UCX's own log lines go through hadroNIO's logger (`log`, standard error, `HADRONIO_LOG`)
//! instead of UCX's default handler, which writes to standard output, into the application's
//! output. Left alone when the user configures UCX's logging (`UCX_LOG_LEVEL`, `UCX_LOG_FILE`, ...).

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uint, c_void};

use log::Level;
use parking_lot::Mutex;

/// `ucs_log_level_t`: FATAL, ERROR, WARN, DIAG, INFO, DEBUG, TRACE...
const LEVEL_FATAL: c_int = 0;
const LEVEL_ERROR: c_int = 1;
const LEVEL_WARN: c_int = 2;
const LEVEL_DIAG: c_int = 3;
const LEVEL_INFO: c_int = 4;
const LEVEL_DEBUG: c_int = 5;

/// `ucs_log_func_rc_t`: the next handler is not called.
const LOG_FUNC_RC_STOP: c_int = 0;

type Handler =
    unsafe extern "C" fn(*const c_char, c_uint, *const c_char, c_int, *const c_void, *const c_char, *mut c_void) -> c_int;

extern "C" {
    // libucs (ucs/debug/log_def.h); not in the bindings. On x86-64 a `va_list` parameter is a
    // pointer to the caller's argument area, which `vsnprintf` takes the same way.
    fn ucs_log_push_handler(handler: Handler);
    fn vsnprintf(buffer: *mut c_char, size: usize, format: *const c_char, arguments: *mut c_void) -> c_int;
}

/// Lines from one place of UCX's source that are all shown; after them, one in [`EVERY`]. An
/// operation that fails for every connection (at the file descriptor limit, say) would otherwise
/// bury everything else.
const SHOWN: u64 = 10;
const EVERY: u64 = 1000;

/// Lines logged so far per place (`(file name pointer, line)`; UCX passes static strings).
static PLACES: Mutex<Option<HashMap<(usize, c_uint), u64>>> = Mutex::new(None);

/// Whether the `n`-th line (from 1) of one place is shown, and with which note.
fn thinned(n: u64) -> Option<&'static str> {
    if n < SHOWN {
        Some("")
    } else if n == SHOWN {
        Some(" (further lines from this place: one in 1000)")
    } else if n % EVERY == 0 {
        Some(" (one in 1000 shown)")
    } else {
        None
    }
}

fn level(ucs: c_int) -> Level {
    match ucs {
        LEVEL_FATAL | LEVEL_ERROR => Level::Error,
        LEVEL_WARN => Level::Warn,
        LEVEL_INFO => Level::Info,
        LEVEL_DIAG | LEVEL_DEBUG => Level::Debug,
        _ => Level::Trace,
    }
}

/// The level of a UCX message as hadroNIO logs it: a software RDMA device hangs off no bus, so
/// it has no vendor or device id in sysfs, and UCX's warning about that says nothing to act on.
fn softened(level: Level, message: &str) -> Level {
    match message.split_once(": could not read device/vendor id") {
        Some((device, _)) if level == Level::Warn && super::devices::is_software(device) => Level::Debug,
        _ => level,
    }
}

/// UCX's side of the handler: formats the message and logs it under target `hadronio::ucx`.
unsafe extern "C" fn log_line(
    file: *const c_char,
    line: c_uint,
    _function: *const c_char,
    ucs_level: c_int,
    _component: *const c_void,
    format: *const c_char,
    arguments: *mut c_void,
) -> c_int {
    let level = level(ucs_level);
    if !log::log_enabled!(target: "hadronio::ucx", level) {
        return LOG_FUNC_RC_STOP;
    }
    let n = {
        let mut places = PLACES.lock();
        let count = places.get_or_insert_with(HashMap::new).entry((file as usize, line)).or_insert(0);
        *count += 1;
        *count
    };
    let Some(note) = thinned(n) else {
        return LOG_FUNC_RC_STOP;
    };
    let mut buffer = [0 as c_char; 1024];
    // SAFETY: UCX passes its format string and the matching argument list; the buffer's size
    // bounds what is written, and it ends with a NUL.
    unsafe { vsnprintf(buffer.as_mut_ptr(), buffer.len(), format, arguments) };
    // SAFETY: `vsnprintf` NUL-terminated the buffer.
    let message = unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy();
    let file = if file.is_null() {
        String::new()
    } else {
        // SAFETY: UCX passes a NUL-terminated file name.
        let path = unsafe { CStr::from_ptr(file) }.to_string_lossy();
        path.rsplit('/').next().unwrap_or_default().to_string()
    };
    let level = softened(level, &message);
    if log::log_enabled!(target: "hadronio::ucx", level) {
        log::log!(target: "hadronio::ucx", level, "UCX {file}:{line}: {}{note}", message.trim_end());
    }
    LOG_FUNC_RC_STOP
}

/// Whether the user configured UCX's logging through its environment.
fn user_configured() -> bool {
    std::env::vars_os().any(|(name, _)| name.to_str().is_some_and(|n| n.starts_with("UCX_LOG_")))
}

/// Routes UCX's log lines through hadroNIO's logger, unless the user configured UCX's logging.
pub fn route_to_logger() {
    if user_configured() {
        return;
    }
    // SAFETY: the handler is a plain function that lives as long as the library.
    unsafe { ucs_log_push_handler(log_line) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(level(LEVEL_FATAL), Level::Error);
        assert_eq!(level(LEVEL_WARN), Level::Warn);
        assert_eq!(level(LEVEL_DIAG), Level::Debug);
        assert_eq!(level(9), Level::Trace);
    }

    #[test]
    fn storms_are_thinned() {
        let shown: Vec<u64> = (1..=5000).filter(|&n| thinned(n).is_some()).collect();
        assert_eq!(shown, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1000, 2000, 3000, 4000, 5000]);
        assert_eq!(thinned(1), Some(""));
        assert!(thinned(SHOWN).unwrap().contains("one in 1000"));
    }
}
