//! Process-wide counters (read through `Native.counters()` and shown as the JMX MBean
//! `dev.hadronio:type=Counters`).
//!
//! Every thread counts into a block of its own, so that counting on the data path never makes
//! threads share a cache line; a read sums the live threads' blocks and what exited threads left
//! behind. Counts are monotonic; a read taken while threads count is a snapshot of each counter,
//! not of all at one instant.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What is counted, in the order [`read`] returns it; [`Counter::description`] says what each is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    Connections,
    UpgradesSharedMemory,
    UpgradesNetwork,
    TcpPlainPeer,
    TcpByRule,
    TcpNoPath,
    TcpOther,
    BytesSentUcx,
    BytesReceivedUcx,
    BytesSentTcp,
    BytesReceivedTcp,
    CreditStalls,
    SpinsCaught,
    SpinsMissed,
    Sleeps,
    WorkersCreated,
    WorkersDestroyed,
    LanesOpened,
    LanesClosed,
    EndpointsCreated,
    EndpointsDestroyed,
    LargeSendsDirect,
    LargeReceivesDirect,
}

impl Counter {
    pub const ALL: [Counter; 23] = [
        Counter::Connections,
        Counter::UpgradesSharedMemory,
        Counter::UpgradesNetwork,
        Counter::TcpPlainPeer,
        Counter::TcpByRule,
        Counter::TcpNoPath,
        Counter::TcpOther,
        Counter::BytesSentUcx,
        Counter::BytesReceivedUcx,
        Counter::BytesSentTcp,
        Counter::BytesReceivedTcp,
        Counter::CreditStalls,
        Counter::SpinsCaught,
        Counter::SpinsMissed,
        Counter::Sleeps,
        Counter::WorkersCreated,
        Counter::WorkersDestroyed,
        Counter::LanesOpened,
        Counter::LanesClosed,
        Counter::EndpointsCreated,
        Counter::EndpointsDestroyed,
        Counter::LargeSendsDirect,
        Counter::LargeReceivesDirect,
    ];

    /// The attribute name (JMX).
    pub fn name(self) -> &'static str {
        match self {
            Counter::Connections => "Connections",
            Counter::UpgradesSharedMemory => "UpgradesSharedMemory",
            Counter::UpgradesNetwork => "UpgradesNetwork",
            Counter::TcpPlainPeer => "TcpPlainPeer",
            Counter::TcpByRule => "TcpByRule",
            Counter::TcpNoPath => "TcpNoPath",
            Counter::TcpOther => "TcpOther",
            Counter::BytesSentUcx => "BytesSentUcx",
            Counter::BytesReceivedUcx => "BytesReceivedUcx",
            Counter::BytesSentTcp => "BytesSentTcp",
            Counter::BytesReceivedTcp => "BytesReceivedTcp",
            Counter::CreditStalls => "CreditStalls",
            Counter::SpinsCaught => "SpinsCaught",
            Counter::SpinsMissed => "SpinsMissed",
            Counter::Sleeps => "Sleeps",
            Counter::WorkersCreated => "WorkersCreated",
            Counter::WorkersDestroyed => "WorkersDestroyed",
            Counter::LanesOpened => "LanesOpened",
            Counter::LanesClosed => "LanesClosed",
            Counter::EndpointsCreated => "EndpointsCreated",
            Counter::EndpointsDestroyed => "EndpointsDestroyed",
            Counter::LargeSendsDirect => "LargeSendsDirect",
            Counter::LargeReceivesDirect => "LargeReceivesDirect",
        }
    }

    /// What the counter counts (the JMX attribute's description).
    pub fn description(self) -> &'static str {
        match self {
            Counter::Connections => "connections set up (connected or accepted)",
            Counter::UpgradesSharedMemory => "connections whose data moved to UCX over shared memory",
            Counter::UpgradesNetwork => "connections whose data moved to UCX over the network",
            Counter::TcpPlainPeer => "connections kept on TCP: the peer does not speak hadroNIO",
            Counter::TcpByRule => "connections kept on TCP by hadronio.rules or hadronio.transport=tcp",
            Counter::TcpNoPath => "connections kept on TCP: UCX does not reach the peer, or only more slowly than TCP",
            Counter::TcpOther => "connections kept on TCP for another reason (the log names it)",
            Counter::BytesSentUcx => "application bytes sent over UCX",
            Counter::BytesReceivedUcx => "application bytes received over UCX",
            Counter::BytesSentTcp => "application bytes sent over TCP",
            Counter::BytesReceivedTcp => "application bytes received over TCP",
            Counter::CreditStalls => "writes that found no credit left (the peer had not consumed enough)",
            Counter::SpinsCaught => "busy-polls that caught the event they waited for",
            Counter::SpinsMissed => "busy-polls that ran out of time or gave way, then slept",
            Counter::Sleeps => "waits that slept in the kernel",
            Counter::WorkersCreated => "UCX workers created (a selector's, a blocking channel's, the virtual threads')",
            Counter::WorkersDestroyed => "UCX workers destroyed (created minus destroyed: how many there are)",
            Counter::LanesOpened => "lanes opened: a hub's use of a worker, new or kept as a spare",
            Counter::LanesClosed => "lanes closed (their worker destroyed or kept as a spare)",
            Counter::EndpointsCreated => "UCX endpoints created: one per peer worker and worker here, shared by the connections between them",
            Counter::EndpointsDestroyed => "UCX endpoints closed (created minus closed: how many there are)",
            Counter::LargeSendsDirect => "messages above the slot length sent from the application's memory (UCX's rendezvous: RDMA where the transport has it)",
            Counter::LargeReceivesDirect => "messages above the slot length received straight into the application's memory",
        }
    }
}

const COUNTERS: usize = Counter::ALL.len();

struct Block([AtomicU64; COUNTERS]);

impl Block {
    fn new() -> Block {
        Block(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

struct Registry {
    live: Vec<Arc<Block>>,
    /// What threads that exited had counted.
    retired: [u64; COUNTERS],
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { live: Vec::new(), retired: [0; COUNTERS] });

/// This thread's block; handed to the registry's `retired` when the thread exits.
struct Local(Arc<Block>);

impl Drop for Local {
    fn drop(&mut self) {
        if let Ok(mut registry) = REGISTRY.lock() {
            for (total, count) in registry.retired.iter_mut().zip(self.0 .0.iter()) {
                *total += count.load(Ordering::Relaxed);
            }
            registry.live.retain(|block| !Arc::ptr_eq(block, &self.0));
        }
    }
}

thread_local! {
    static LOCAL: Local = {
        let block = Arc::new(Block::new());
        if let Ok(mut registry) = REGISTRY.lock() {
            registry.live.push(block.clone());
        }
        Local(block)
    };
}

/// Adds `n` to `counter` (on this thread's block: no cache line shared with other threads).
pub fn add(counter: Counter, n: u64) {
    // A thread that is exiting has no block any more; its last counts are dropped.
    let _ = LOCAL.try_with(|local| {
        let slot = &local.0 .0[counter as usize];
        // Only this thread writes its block: a plain load and store is enough.
        slot.store(slot.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    });
}

/// Adds one to `counter`.
pub fn count(counter: Counter) {
    add(counter, 1);
}

/// Every counter's total, in [`Counter::ALL`] order.
pub fn read() -> [u64; COUNTERS] {
    let registry = match REGISTRY.lock() {
        Ok(registry) => registry,
        Err(poisoned) => poisoned.into_inner(),
    };
    let mut totals = registry.retired;
    for block in &registry.live {
        for (total, count) in totals.iter_mut().zip(block.0.iter()) {
            *total += count.load(Ordering::Relaxed);
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_threads_that_exited_stay_in_the_totals() {
        let before = read()[Counter::CreditStalls as usize];
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..1000 {
                        count(Counter::CreditStalls);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        add(Counter::CreditStalls, 5);
        assert_eq!(read()[Counter::CreditStalls as usize] - before, 4005);
    }

    #[test]
    fn all_lists_every_counter_in_its_order() {
        assert_eq!(Counter::ALL.iter().enumerate().filter(|(i, c)| **c as usize != *i).count(), 0);
    }
}
