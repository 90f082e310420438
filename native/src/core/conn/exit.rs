//! The end of the process. When a process exits, the kernel closes its sockets as `close` would:
//! a FIN after the bytes they still had to send (a reset where received bytes were never read).
//! A framed stream ends with a FIN frame instead, which only this library can send; without it
//! the peer of a JVM that exits with connections open (an HTTP client's pooled connections,
//! say) would read a reset. So at exit every open connection gets the FIN a close would send,
//! and the process waits, at most [`EXIT_WAIT`], until what was written has been handed on.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use log::debug;
use parking_lot::Mutex;

use super::{Conn, Phase};

/// Every connection of the process, by serial.
static LIVE: Mutex<BTreeMap<u64, Weak<Conn>>> = Mutex::new(BTreeMap::new());

/// How long the exit waits for written data to go out, over all connections.
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// How long the exit waits for a UCX worker being created (UCX is unloaded after the exit's
/// handlers).
const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// How long the exit waits for one connection's state; a thread that holds it longer is in the
/// middle of an operation that the exit does not wait for.
const LOCK_WAIT: Duration = Duration::from_millis(20);

pub(super) fn track(conn: &Arc<Conn>) {
    LIVE.lock().insert(conn.serial, Arc::downgrade(conn));
}

impl Drop for Conn {
    fn drop(&mut self) {
        LIVE.lock().remove(&self.serial);
    }
}

/// Ends the stream of every open connection as the kernel would close its socket, and waits a
/// bounded time for written data to be handed on. Called once, as the process exits.
pub fn end_all() {
    let conns: Vec<Arc<Conn>> = LIVE.lock().values().filter_map(Weak::upgrade).collect();
    let deadline = Instant::now() + EXIT_WAIT;
    let mut sending: Vec<Arc<Conn>> = conns.into_iter().filter(|conn| conn.end_at_exit()).collect();
    while !sending.is_empty() && Instant::now() < deadline {
        sending.retain(|conn| conn.exit_step());
        if !sending.is_empty() {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    if !sending.is_empty() {
        debug!("{} connection(s) still had data to send when the process exited", sending.len());
    }
    crate::core::lanes::settle(SETTLE_WAIT);
}

impl Conn {
    /// Sends the FIN of an open connection (unless unread data makes the kernel reset it, as it
    /// would with the JDK); whether written data still waits to go out.
    fn end_at_exit(&self) -> bool {
        let Some(mut state) = self.state.try_lock_for(LOCK_WAIT) else { return false };
        if state.closing.released || state.phase != Phase::Connected || state.failure.is_fatal() {
            return false;
        }
        if !self.is_closed() && !state.closing.output_shutdown {
            self.progress_stream(&mut state);
            if Self::unread(&state) {
                return false;
            }
            state.closing.output_shutdown = true;
            self.send_fin(&mut state, false);
        }
        self.pending_tx(&state)
    }

    /// Moves written data on (credits, staged messages, control bytes); whether some still waits.
    fn exit_step(&self) -> bool {
        let Some(mut state) = self.state.try_lock_for(LOCK_WAIT) else { return true };
        if state.closing.released || state.failure.is_fatal() || state.failure.writes_failed() {
            return false;
        }
        if let Some(link) = &mut state.link {
            // Only with the worker free: a thread that holds it is not waited for either.
            let worker = link.lane().worker.clone();
            if let Some(lock) = worker.try_lock() {
                lock.progress();
                if let Err(e) = link.flush() {
                    drop(lock);
                    self.set_fatal(&mut state, e);
                    return false;
                }
            };
        }
        self.progress_stream(&mut state);
        self.pending_tx(&state)
    }
}
