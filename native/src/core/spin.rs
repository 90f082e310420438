//! When a waiting thread may busy-poll.
//!
//! Spinning pays only while a core is free for it: a spinner on a busy host takes the core from
//! the threads that would produce what it waits for (the application's worker pool, its client
//! threads, the peer JVM), and then pays for the sleep as well. So a thread may spin only
//!
//! - while the host has a core for it: the kernel's count of runnable threads (the fourth field of
//!   `/proc/loadavg`, host-wide, every process and this spinner included) is at most the number of
//!   online CPUs, and no thread of the host was kept waiting for a CPU for more than 2 % of the
//!   last millisecond (the kernel's pressure stall information, `/proc/pressure/cpu`, where the
//!   kernel has it: the count is a snapshot, and a thread handed work wakes up right after a
//!   spinner looked). Both are looked at again every [`RECHECK`] while spinning (the pressure at
//!   most once a millisecond), so a spinner gives way within microseconds when another thread (of
//!   any process) becomes runnable, and the spin loop yields the core every few microseconds to
//!   a thread that waits for it; and
//! - while fewer than one thread per core of this process spins already.
//!
//! - where it has been paying off: each hub keeps a score of its spins ([`Governor`]); a spin
//!   that caught the event counts +1, one that ran out of time and ended in a sleep −2 (it cost
//!   the core for the whole window, a catch saves a wake-up, which is cheaper), and so does one
//!   cut short because another thread wanted the core (under load, spinning takes turns from the
//!   threads doing the work). While the score is
//!   negative the hub does not spin, but one wait in [`PROBE_EVERY`] still does, so that it learns
//!   when traffic became quick again.
//!
//! - on sockets alone, while its thread is idle for a good part of the time: a hub whose thread
//!   has been busy for more than [`BUSY_LIMIT`] of the time between its waits (an I/O thread
//!   that keeps up with a stream of requests) sleeps at once when it waits only for sockets. Its
//!   waits are short anyway, and a spin that ends them sooner leaves it less to read and write
//!   per call, so that it pays more system calls per request; the kernel wakes a thread
//!   sleeping on sockets at no extra cost to the sender. Waits for UCX are left to the score: a
//!   sleep there arms the worker, and a sender then signals it.
//!
//! On a big idle host every waiting thread spins; on a host whose cores are all busy none does;
//! an application whose answers take longer than the window (an HTTP server's worker threads,
//! say) stops spinning after a few misses.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::stats::{self, Counter};

/// How often a spinning thread asks the kernel again whether a core is still free.
pub const RECHECK: Duration = Duration::from_micros(20);

/// Bounds of a hub's score: how much history counts.
const SCORE_LIMIT: i32 = 16;

/// A hub that stopped spinning still spins on one wait in this many.
pub const PROBE_EVERY: u32 = 32;

/// Share of the time (in 1024ths) a hub's thread may be busy between its waits for it still to
/// spin when it waits for sockets alone.
pub const BUSY_LIMIT: u32 = 768;

/// Whether spinning pays off on one hub, learned from how its spins ended and how busy its
/// thread is between waits.
pub struct Governor {
    window: Duration,
    score: AtomicI32,
    waits: AtomicU32,
    /// When the last wait ended, in nanoseconds since [`epoch`] (0: none yet).
    ended_ns: AtomicU64,
    /// The busy share between waits, in 1024ths, averaged over the last few waits.
    busy: AtomicU32,
}

impl Governor {
    /// A governor for spins of at most `window_ns` (0: never spin).
    pub fn new(window_ns: u64) -> Governor {
        Governor {
            window: Duration::from_nanos(window_ns),
            score: AtomicI32::new(0),
            waits: AtomicU32::new(0),
            ended_ns: AtomicU64::new(0),
            busy: AtomicU32::new(0),
        }
    }

    /// A wait begins (one that found nothing ready); the value goes to [`Governor::wait_ended`].
    pub fn wait_began(&self) -> u64 {
        if self.window.is_zero() {
            return 0;
        }
        now_ns()
    }

    /// The wait that began at `began` ended: the time since the previous one ended counts as
    /// busy, its own as idle.
    pub fn wait_ended(&self, began: u64) {
        if began == 0 {
            return;
        }
        let now = now_ns();
        let previous = self.ended_ns.swap(now, Ordering::Relaxed);
        if let Some(share) = busy_share(previous, began, now) {
            self.note_busy(share);
        }
    }

    fn note_busy(&self, share: u32) {
        let _ = self.busy.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |busy| Some(moved(busy, share)));
    }

    /// Whether the hub's thread has been busy for more than [`BUSY_LIMIT`] of the time between
    /// its waits lately.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed) > BUSY_LIMIT
    }

    /// How long the next wait may spin, if at all.
    pub fn window(&self) -> Option<Duration> {
        if self.window.is_zero() {
            return None;
        }
        if self.score.load(Ordering::Relaxed) >= 0 {
            return Some(self.window);
        }
        let waits = self.waits.fetch_add(1, Ordering::Relaxed);
        (waits % PROBE_EVERY == 0).then_some(self.window)
    }

    /// The spin caught the event.
    pub fn caught(&self) {
        stats::count(Counter::SpinsCaught);
        // At the limit already (a hub whose spins keep catching): no write to a shared line.
        if self.score.load(Ordering::Relaxed) < SCORE_LIMIT {
            let _ = self.score.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| Some((s + 1).min(SCORE_LIMIT)));
        }
    }

    /// The spin ran out of time: the wait goes on sleeping.
    pub fn missed(&self) {
        stats::count(Counter::SpinsMissed);
        let _ = self.score.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| Some((s - 2).max(-SCORE_LIMIT)));
    }
}

/// Threads busy-polling at once in this process.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);

/// A permit to busy-poll; dropping it ends the spin.
pub struct Permit;

impl Drop for Permit {
    fn drop(&mut self) {
        SPINNERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Online CPUs of the host (the count `/proc/loadavg`'s runnable threads compete for).
fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| {
        crate::net::host::online_cpus().unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// How many threads of this process may spin at once: the CPUs it may run on (asked once; the
/// standard library reads the cgroup's files on every call).
fn spinner_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A permit to spin now, if a core is free for it.
pub fn permit() -> Option<Permit> {
    let limit = spinner_limit();
    SPINNERS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limit).then_some(n + 1)).ok()?;
    let permit = Permit;
    core_free().then_some(permit)
}

/// `/proc/loadavg`, opened once (`None` where it cannot be read: then spinning is left to the
/// per-process limit alone).
fn loadavg() -> Option<&'static File> {
    static FILE: OnceLock<Option<File>> = OnceLock::new();
    FILE.get_or_init(|| File::open("/proc/loadavg").ok()).as_ref()
}

/// When [`core_free`] last asked the kernel (nanoseconds since [`epoch`]) and what it found; shared
/// by the threads of the process so that the kernel is asked at most once per [`RECHECK`].
static CHECKED_NS: AtomicU64 = AtomicU64::new(0);
static FREE: AtomicBool = AtomicBool::new(true);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`], never 0.
fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64 + 1
}

/// The share (in 1024ths) of the time from the end of the previous wait (`previous`, 0: none) to
/// the end of this one (`now`) that passed before this one `began`; `None` without a previous
/// wait or when the times do not follow each other (another thread's wait ended meanwhile).
fn busy_share(previous: u64, began: u64, now: u64) -> Option<u32> {
    if previous == 0 || previous > began || now <= previous {
        return None;
    }
    Some(((began - previous).saturating_mul(1024) / (now - previous)) as u32)
}

/// An average that moves an eighth of the way from `average` to `sample`.
fn moved(average: u32, sample: u32) -> u32 {
    (average as i64 + (sample as i64 - average as i64) / 8) as u32
}

/// Whether the host's runnable threads (this one included) fit on its CPUs, and threads have not
/// been kept waiting for a CPU lately.
pub fn core_free() -> bool {
    let now = now_ns();
    let checked = CHECKED_NS.load(Ordering::Relaxed);
    if now.saturating_sub(checked) < RECHECK.as_nanos() as u64
        || CHECKED_NS.compare_exchange(checked, now, Ordering::AcqRel, Ordering::Relaxed).is_err()
    {
        return FREE.load(Ordering::Relaxed);
    }
    let free = !pressured(now)
        && match loadavg().and_then(read_runnable) {
            Some(runnable) => runnable <= cpus(),
            None => true,
        };
    FREE.store(free, Ordering::Relaxed);
    free
}

/// How often the CPU pressure is looked at.
const PRESSURE_INTERVAL_NS: u64 = 1_000_000;

/// Share of an interval (in thousandths) during which some thread of the host waited for a CPU
/// above which spinning stops.
const PRESSURE_LIMIT: u64 = 20;

/// After an interval above the limit, no spinning for this many intervals.
const PRESSURE_HOLD: u64 = 8;

/// When the pressure was last read (ns since [`epoch`]), the kernel's total stall time then (µs),
/// and until when spinning is off (ns since [`epoch`]).
static PRESSURE_NS: AtomicU64 = AtomicU64::new(0);
static STALL_US: AtomicU64 = AtomicU64::new(0);
static HOLD_UNTIL_NS: AtomicU64 = AtomicU64::new(0);

/// `/proc/pressure/cpu` (the kernel's pressure stall information), opened once; `None` where the
/// kernel has none.
fn pressure_file() -> Option<&'static File> {
    static FILE: OnceLock<Option<File>> = OnceLock::new();
    FILE.get_or_init(|| File::open("/proc/pressure/cpu").ok()).as_ref()
}

/// Whether threads of the host were kept waiting for a CPU lately: then a spinner takes turns from
/// threads that have work, even where the count of runnable threads, a snapshot, looks fine (a
/// thread handed work wakes up right after the spinner looked). Read at most once per interval.
fn pressured(now: u64) -> bool {
    let last = PRESSURE_NS.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= PRESSURE_INTERVAL_NS
        && PRESSURE_NS.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    {
        if let Some(total) = pressure_file().and_then(read_stall) {
            let before = STALL_US.swap(total, Ordering::Relaxed);
            let elapsed_us = (now - last) / 1000;
            let stalled = total.saturating_sub(before);
            if last != 0 && before != 0 && elapsed_us > 0 && stalled * 1000 > elapsed_us * PRESSURE_LIMIT {
                HOLD_UNTIL_NS.store(now + PRESSURE_HOLD * PRESSURE_INTERVAL_NS, Ordering::Relaxed);
            }
        }
    }
    now < HOLD_UNTIL_NS.load(Ordering::Relaxed)
}

fn read_stall(file: &File) -> Option<u64> {
    let mut buffer = [0u8; 256];
    let n = file.read_at(&mut buffer, 0).ok()?;
    stall(std::str::from_utf8(&buffer[..n]).ok()?)
}

/// The `some` line's `total` (µs during which some runnable thread waited for a CPU) of
/// `/proc/pressure/cpu`.
fn stall(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace().find_map(|field| field.strip_prefix("total="))?.parse().ok()
}

fn read_runnable(file: &File) -> Option<usize> {
    let mut buffer = [0u8; 128];
    let n = file.read_at(&mut buffer, 0).ok()?;
    runnable(std::str::from_utf8(&buffer[..n]).ok()?)
}

/// The runnable count of a `/proc/loadavg` line ("0.52 0.58 0.59 3/467 12345" gives 3).
fn runnable(line: &str) -> Option<usize> {
    line.split_whitespace().nth(3)?.split('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runnable_threads_from_loadavg() {
        assert_eq!(runnable("0.52 0.58 0.59 3/467 12345\n"), Some(3));
        assert_eq!(runnable("0.00 0.00 0.00 1/78 1800"), Some(1));
        assert_eq!(runnable("garbage"), None);
        assert_eq!(runnable("1 2 3 x/4 5"), None);
    }

    #[test]
    fn stall_time_from_pressure() {
        let text = "some avg10=10.76 avg60=22.68 avg300=22.12 total=1402997840\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(stall(text), Some(1402997840));
        assert_eq!(stall("full avg10=0.00 total=5\n"), None);
        assert_eq!(stall("some avg10=1.0 total=x\n"), None);
    }

    #[test]
    fn this_host_reports_a_count() {
        let file = loadavg().expect("/proc/loadavg");
        let runnable = read_runnable(file).expect("a runnable count");
        // This thread runs while it reads.
        assert!(runnable >= 1);
    }

    #[test]
    fn a_governor_stops_spinning_where_spins_miss_and_probes_now_and_then() {
        let governor = Governor::new(50_000);
        assert_eq!(governor.window(), Some(Duration::from_micros(50)));
        governor.missed();
        // Below zero: one wait in PROBE_EVERY still spins.
        let spins = (0..PROBE_EVERY * 4).filter(|_| governor.window().is_some()).count();
        assert_eq!(spins, 4);
        // Catches bring it back.
        governor.caught();
        governor.caught();
        assert!(governor.window().is_some());
        // A miss costs two catches.
        for _ in 0..3 {
            governor.caught();
        }
        governor.missed();
        assert!(governor.window().is_some());
        assert_eq!(Governor::new(0).window(), None);
    }

    #[test]
    fn the_busy_share_follows_the_time_between_waits() {
        // Ended at 100, began again at 150, ended at 200: half busy.
        assert_eq!(busy_share(100, 150, 200), Some(512));
        assert_eq!(busy_share(100, 190, 200), Some(921));
        assert_eq!(busy_share(0, 150, 200), None);
        assert_eq!(busy_share(160, 150, 200), None);
        assert_eq!(busy_share(200, 200, 200), None);
        assert_eq!(moved(0, 1024), 128);
        assert_eq!(moved(1024, 0), 896);

        let governor = Governor::new(50_000);
        assert!(!governor.busy());
        for _ in 0..40 {
            governor.note_busy(512);
        }
        assert!(!governor.busy(), "half busy counts as idle enough: {}", governor.busy.load(Ordering::Relaxed));
        for _ in 0..40 {
            governor.note_busy(1000);
        }
        assert!(governor.busy(), "busy: {}", governor.busy.load(Ordering::Relaxed));
        // A real wait counts: its share comes from the clock.
        let began = governor.wait_began();
        governor.wait_ended(began);
        assert_ne!(governor.ended_ns.load(Ordering::Relaxed), 0);
        // Without spinning, no clock is read.
        assert_eq!(Governor::new(0).wait_began(), 0);
    }

    #[test]
    fn permits_are_limited_per_process() {
        let limit = spinner_limit();
        let permits: Vec<Permit> = (0..limit + 2).filter_map(|_| permit()).collect();
        assert!(permits.len() <= limit);
    }
}
