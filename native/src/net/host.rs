//! The few facts about the host and the process that the core asks the kernel for directly, and
//! the process's exit hook.

use std::time::Duration;

/// Online CPUs of the host (`sysconf`), if the kernel says.
pub fn online_cpus() -> Option<usize> {
    // SAFETY: sysconf has no memory effects.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (online > 0).then_some(online as usize)
}

/// The time on the kernel's coarse monotonic clock (ticks of 1-10 ms, read without a system
/// call's cost).
pub fn coarse_now() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC_COARSE exists since Linux 2.6.32.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Has `f` called when the process exits (`atexit`); false if it cannot be registered. An
/// `extern "C"` function cannot unwind into the C library: a panic in it aborts.
pub fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: `f` is a function without arguments that lives as long as the process.
    unsafe { libc::atexit(f) == 0 }
}

/// The process's soft limit of open file descriptors; `None` if unlimited or unknown.
pub fn descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` to the live local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(limit.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_has_cpus_and_a_clock_that_moves_on() {
        assert!(online_cpus().is_some_and(|n| n >= 1));
        let before = coarse_now();
        std::thread::sleep(Duration::from_millis(30));
        assert!(coarse_now() > before);
    }
}
