//! The process's UCX contexts, and whether a new worker may be made.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use log::warn;

use crate::ucx::{Context, ContextOptions, Worker};
use super::{Kind, Tuning};

static CONTEXTS: [OnceLock<Result<Arc<Context>, String>>; 2] = [OnceLock::new(), OnceLock::new()];

/// The process-wide UCX context of `kind`, created on first use (or the reason there is none).
/// The first call creates it, as `tuning` says.
pub fn context(kind: Kind, tuning: Tuning) -> Result<&'static Arc<Context>, String> {
    CONTEXTS[kind as usize]
        .get_or_init(|| {
            let options = ContextOptions {
                longest: tuning.slot_len as usize,
                shared_memory: kind == Kind::Full,
                retransmit_for: (tuning.liveness_ms > 0).then(|| Duration::from_millis(tuning.liveness_ms)),
            };
            Context::new(&options).inspect_err(|e| match kind {
                Kind::Full => warn!("UCX is unavailable, connections stay on TCP: {e}"),
                Kind::Isolated => warn!("UCX without shared memory is unavailable; peers on this host that shared memory does not reach stay on TCP: {e}"),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Why there is no UCX context of `kind`, if creating it failed. None while it may work: it
/// exists, or it was not made yet (the library makes it ahead of need on the `hadronio-lanes`
/// thread, see [`warm`], and a connection does not wait for that: its bytes flow over TCP until
/// its lane opens, and a lane that finds no context falls back).
pub fn failure(kind: Kind) -> Option<&'static str> {
    CONTEXTS[kind as usize].get().and_then(|made| made.as_ref().err()).map(String::as_str)
}

/// Workers being created now (see [`settle`]).
static MAKING: AtomicUsize = AtomicUsize::new(0);

/// File descriptors a process must have left for a new UCX worker (with the context, if it is
/// the first): a worker opens about ten (its shared-memory segments, an event fd, sockets of
/// its transports) and its endpoints more. UCX gives up on the whole process (an abort) when
/// some of these fail within its worker set-up, so below this a lane is not opened and its
/// connections stay on TCP.
const WORKER_DESCRIPTORS: u64 = 64;

/// Why no worker may be made now, if the process is too near its descriptor limit.
fn descriptors_short() -> Option<String> {
    let limit = crate::net::host::descriptor_limit()?;
    // Counted only here: a worker is made rarely, and takes milliseconds anyway.
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    short_of(limit, open)
}

/// Why no worker may be made with `open` of `limit` descriptors in use, if too few are left.
fn short_of(limit: u64, open: u64) -> Option<String> {
    let left = limit.saturating_sub(open);
    (left < WORKER_DESCRIPTORS).then(|| format!("{left} of {limit} file descriptors left, a UCX worker needs {WORKER_DESCRIPTORS}"))
}

/// A new worker of `kind` (creating the context first if need be).
pub(super) fn make_worker(kind: Kind, tuning: Tuning) -> Result<Arc<Worker>, String> {
    if let Some(short) = descriptors_short() {
        return Err(short);
    }
    struct Making;
    impl Drop for Making {
        fn drop(&mut self) {
            MAKING.fetch_sub(1, Ordering::AcqRel);
        }
    }
    MAKING.fetch_add(1, Ordering::AcqRel);
    let _making = Making;
    context(kind, tuning).and_then(|context| Worker::new(context).map_err(|e| e.to_string()))
}

/// Waits, at most `wait`, until no thread is creating a UCX context or worker: the process's exit
/// must not unload UCX under one.
pub fn settle(wait: Duration) {
    let deadline = Instant::now() + wait;
    while MAKING.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_worker_is_made_near_the_descriptor_limit() {
        assert_eq!(short_of(1024, 100), None);
        assert_eq!(short_of(256, 256 - WORKER_DESCRIPTORS), None);
        let short = short_of(256, 250).unwrap();
        assert!(short.contains("6 of 256 file descriptors left"), "{short}");
        assert!(short_of(256, 300).unwrap().contains("0 of 256"));
        assert_eq!(descriptors_short(), None, "this test process is far from its limit");
    }
}
