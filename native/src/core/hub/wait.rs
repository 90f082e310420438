//! Waiting on a hub: one thread leads (progress, a spin where it pays, a sleep in epoll), the
//! others follow (see `followers.rs`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{Hub, GRAVE_CHECK, STUCK_SLEEP_MAX, STUCK_SLEEP_MIN};
use crate::core::lanes::{arm_worker, Armed, Lane, STUCK_ROUNDS};
use crate::core::spin;
use crate::stats::{self, Counter};

impl Hub {
    /// Arms the UCX workers this hub sleeps on: its own lanes (its leader calls this) and those
    /// of nested hubs that nobody else leads. A nested hub with a leader of its own is left alone:
    /// arming drains a worker's event fd, which would keep that leader asleep while its worker
    /// has events; it progresses the hub itself and wakes this one through the keys it notifies.
    fn arm(&self) -> Armed {
        let mut armed = Armed::Yes;
        let mut arm = |lane: &Lane| {
            armed = armed.and(arm_worker(&lane.worker));
            armed != Armed::Busy
        };
        self.each_lane(&mut arm);
        if !self.nested.is_empty() {
            self.nested.with(|nested| {
            for (hub, _) in nested.iter() {
                if let Some(leader) = hub.waiting.leader.try_lock() {
                    hub.each_lane(&mut arm);
                    drop(leader);
                    // A thread that found the leadership taken meanwhile must learn that it is
                    // free again (as after `poll`).
                    if hub.waiting.followers.any() {
                        hub.waiting.followers.signal_all();
                    }
                }
            }
            });
        }
        armed
    }

    /// Waits until `ready()` holds or `deadline` passes; returns the final `ready()`. `key` is
    /// the id of the connection whose state `ready()` looks at (None: it looks at more).
    ///
    /// The first waiting thread becomes the leader and makes progress for everyone; the others
    /// follow: they sleep until the leader's progress delivers an event to their connection (see
    /// `Followers`), and take over when the leader leaves. Every event that can make a
    /// follower's condition true also wakes the leader's epoll (UCX event fd, sockets, wake-up
    /// eventfd).
    pub fn wait(&self, key: Option<u32>, ready: &mut dyn FnMut() -> bool, deadline: Option<Instant>) -> bool {
        self.waiting.followers.enter();
        let result = loop {
            let seen = self.waiting.followers.generation();
            if ready() {
                break true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break ready();
            }
            if let Some(guard) = self.waiting.leader.try_lock() {
                self.waiting.followers.had_baton();
                self.waiting.followers.leave();
                // Only leaders write it, and this one now follows the last: its value is current.
                // Unchanged (a leader for the same connection again), it costs no locked instruction.
                let key = key.unwrap_or(0);
                if self.waiting.leader_key.load(Ordering::Relaxed) != key {
                    self.waiting.leader_key.store(key, Ordering::SeqCst);
                }
                let result = self.lead(guard, ready, deadline);
                self.note_progressed(Instant::now());
                self.waiting.followers.hand_over();
                return result;
            }
            self.waiting.followers.follow(key.unwrap_or(0), seen, deadline);
        };
        self.waiting.followers.leave();
        if self.waiting.followers.had_baton() {
            self.waiting.followers.hand_over();
        }
        result
    }

    /// Leads until `ready()` holds or `deadline` passes: progress, then a spin where that pays,
    /// then a sleep in epoll until something happens, again and again.
    fn lead(&self, guard: MutexGuard<'_, ()>, ready: &mut dyn FnMut() -> bool, deadline: Option<Instant>) -> bool {
        let began = self.waiting.governor.wait_began();
        let result = self.lead_rounds(guard, ready, deadline);
        self.waiting.governor.wait_ended(began);
        result
    }

    fn lead_rounds(&self, guard: MutexGuard<'_, ()>, ready: &mut dyn FnMut() -> bool, deadline: Option<Instant>) -> bool {
        let _guard = guard;
        let mut spun = false;
        let mut stuck = Stuck::default();
        let mut owed = Stuck::default();
        loop {
            if self.progress() {
                self.waiting.followers.signal();
                stuck = Stuck::default();
            }
            self.progress_nested();
            let owed_sleep = if self.settle_nested_owed() { Some(owed.next_sleep()) } else {
                owed = Stuck::default();
                None
            };
            if ready() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return ready();
            }
            // Spin once per wait: cheap when events come soon, and only where it has been paying
            // off and a core is free for it.
            if let (false, Some(window)) = (spun, self.spin_window()) {
                if let Some(_permit) = spin::permit() {
                    spun = true;
                    if self.spin(window, ready) {
                        return true;
                    }
                }
            }
            let stuck_sleep = match self.arm() {
                Armed::Busy => continue,
                Armed::Stuck if stuck.try_again() => continue,
                Armed::Stuck => Some(stuck.next_sleep()),
                Armed::Yes => None,
            };
            let limit = match (stuck_sleep, owed_sleep) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if self.sleep(ready, deadline, limit) {
                return true;
            }
        }
    }

    /// How long this wait may spin, if at all (see `spin.rs`).
    fn spin_window(&self) -> Option<Duration> {
        let governor = &self.waiting.governor;
        if governor.busy() && !self.ucx_open() {
            return None;
        }
        governor.window()
    }

    /// Whether a UCX worker of this hub or of a nested one is open.
    fn ucx_open(&self) -> bool {
        let open = |hub: &Hub| hub.lanes.as_ref().is_some_and(|lanes| lanes.any());
        let mut any = open(self);
        if !any {
            self.each_nested(|hub| any |= open(hub));
        }
        any
    }

    /// Busy-polls for up to `window` while the core stays free for it; true if `ready()` came
    /// true meanwhile. The governor learns which it was.
    fn spin(&self, window: Duration, ready: &mut dyn FnMut() -> bool) -> bool {
        let start = Instant::now();
        let mut checked = start;
        let mut rounds = 0u32;
        let nested = !self.nested.is_empty();
        loop {
            if rounds % 16 == 15 {
                let now = Instant::now();
                if now.duration_since(start) >= window {
                    self.waiting.governor.missed();
                    return false;
                }
                if now.duration_since(checked) >= spin::RECHECK {
                    checked = now;
                    if !spin::core_free() {
                        // Another thread wants the core: spinning competes with the threads that
                        // do the work here, which is a miss as well.
                        self.waiting.governor.missed();
                        return false;
                    }
                }
            }
            if nested {
                self.progress_nested_lanes();
                if ready() {
                    self.waiting.governor.caught();
                    return true;
                }
            }
            if self.progress() {
                self.waiting.followers.signal();
                if ready() {
                    self.waiting.governor.caught();
                    return true;
                }
            }
            rounds += 1;
            if rounds % 64 == 0 {
                if self.dispatch_ready(Some(Duration::ZERO), false) > 0 {
                    self.waiting.followers.signal();
                }
                self.progress_nested();
                if ready() {
                    self.waiting.governor.caught();
                    return true;
                }
                // A thread that became runnable on this core (one this wait's caller just handed
                // work to, say) gets it now rather than at the next check.
                std::thread::yield_now();
            }
            std::hint::spin_loop();
        }
    }

    /// Sleeps in epoll until an event or `deadline`, at most `limit` (a stuck worker does not
    /// signal its event fd, nor does a nested hub whose events are owed) and [`GRAVE_CHECK`]
    /// while links are buried or closes linger (nothing signals when their time is up); true if
    /// `ready()` held before it slept.
    fn sleep(&self, ready: &mut dyn FnMut() -> bool, deadline: Option<Instant>, limit: Option<Duration>) -> bool {
        self.waiting.sleeping.store(true, Ordering::SeqCst);
        if ready() {
            self.waiting.sleeping.store(false, Ordering::SeqCst);
            return true;
        }
        let mut timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mut at_most = |limit: Duration| timeout = Some(timeout.map_or(limit, |t| t.min(limit)));
        if let Some(limit) = limit {
            at_most(limit);
        }
        if !self.graveyard.is_empty() || !self.lingering.is_empty() {
            at_most(GRAVE_CHECK);
        }
        stats::count(Counter::Sleeps);
        self.dispatch_ready(timeout, true);
        self.waiting.followers.signal();
        false
    }
}

/// A leader's patience with a stuck worker: a few more rounds of progress, then sleeps that
/// double while it stays stuck. The same doubling bounds the sleeps while a nested hub's events
/// are owed.
struct Stuck {
    rounds: u32,
    sleep: Duration,
}

impl Default for Stuck {
    fn default() -> Self {
        Stuck { rounds: 0, sleep: STUCK_SLEEP_MIN }
    }
}

impl Stuck {
    /// Counts a round that found the worker stuck; true while it is worth progressing again
    /// before sleeping.
    fn try_again(&mut self) -> bool {
        self.rounds += 1;
        self.rounds < STUCK_ROUNDS
    }

    /// How long the next sleep may last at most.
    fn next_sleep(&mut self) -> Duration {
        let sleep = self.sleep;
        self.sleep = (sleep * 2).min(STUCK_SLEEP_MAX);
        sleep
    }
}
