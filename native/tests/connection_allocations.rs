//! How many heap allocations a connection that stays on TCP costs (a connection per request
//! between hadroNIO peers, which its client remembers, or one to a plain peer): each costs a
//! malloc and a free, often on two threads (the selector's thread frees what the acceptor
//! allocated), which glibc serves slowly. Counted with a global allocator that counts the calls
//! of this test's thread. (This file runs in a process of its own.)

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::SocketAddr;

use hadronio::config::{settings, Settings, Upgrade};
use hadronio::core::conn::Conn;
use hadronio::core::error::Status;
use hadronio::core::listener::Listener;
use common::region;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the thread's locals may be gone while it ends.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: every call goes to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations (and reallocations) this thread makes in `f`.
fn allocations<T>(f: impl FnOnce() -> T) -> (T, u64) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    let value = f();
    COUNTING.with(|on| on.set(false));
    (value, COUNT.with(Cell::get))
}

/// Counts per step of one request on a new connection, all on this thread: the client connects
/// and writes, the server accepts, reads, answers and closes, the client reads to the end and
/// closes.
fn one_request(listener: &Listener, addr: SocketAddr) -> (Vec<(&'static str, u64)>, String) {
    let mut steps = Vec::new();
    let (client, n) = allocations(|| Conn::open(settings()).unwrap());
    steps.push(("open", n));
    let (_, n) = allocations(|| assert!(client.connect(&addr, true, None).unwrap()));
    steps.push(("connect", n));
    let mut request = *b"query";
    let (_, n) = allocations(|| assert_eq!(client.write(&region(&mut request), true).unwrap(), 5));
    steps.push(("client write", n));
    let (server, n) = allocations(|| listener.accept(true, None).unwrap().unwrap());
    steps.push(("accept", n));
    let mut buf = [0u8; 64];
    let (_, n) = allocations(|| common::read_exactly(&server, &mut buf[..5], None));
    steps.push(("server read", n));
    let mut answer = *b"answer";
    let (_, n) = allocations(|| assert_eq!(server.write(&region(&mut answer), true).unwrap(), 6));
    steps.push(("server write", n));
    let (_, n) = allocations(|| server.close());
    steps.push(("server close", n));
    let mut got = Vec::with_capacity(64);
    let (_, n) = allocations(|| {
        loop {
            match client.read(&region(&mut buf), true, None) {
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(e) if e.status == Status::Eof => break,
                Err(e) => panic!("{e:?}"),
            }
        }
    });
    assert_eq!(got, b"answer");
    steps.push(("client reads", n));
    let path = client.describe();
    let (_, n) = allocations(|| client.close());
    steps.push(("client close", n));
    let (_, n) = allocations(|| {
        drop(server);
        drop(client);
    });
    steps.push(("drop", n));
    (steps, path)
}

#[test]
fn a_connection_that_stays_on_tcp_allocates_little() {
    // A client's mark waits for its second write or a minute: each connection here carries one
    // request however slow the machine, so every one ends before its upgrade.
    assert!(Settings::install(Settings { upgrade: Upgrade { delay_ms: 60_000, ..Settings::default().upgrade }, ..Settings::default() }));
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 64).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let mut remembered = Vec::new();
    for _ in 0..40 {
        let (steps, path) = one_request(&listener, addr);
        if path.contains("a connection per request") {
            remembered.push(steps);
        }
    }
    // The client remembered after eight connections (30 of these 40 skip the offer: one in
    // sixteen still offers).
    assert!(remembered.len() >= 8, "only {} connections skipped the offer", remembered.len());
    for steps in &remembered[remembered.len() - 8..] {
        let total: u64 = steps.iter().map(|(_, n)| n).sum();
        // Both connections and their control-stream states, nothing else (4 in all; 6 when the
        // client's reason for skipping the offer was built as text and the server queued its
        // decision on the heap, 28 when every reason and path was built as text at once and a poll
        // or an end of stream allocated).
        assert!(total <= 4, "{total} allocations: {steps:?}");
        let per_step = |name: &str| steps.iter().find(|(n, _)| *n == name).map_or(0, |(_, k)| *k);
        assert!(per_step("accept") <= 2, "{steps:?}");
        assert!(per_step("connect") <= 1, "{steps:?}");
        assert_eq!(per_step("server read") + per_step("server close") + per_step("client reads") + per_step("client close"), 0, "{steps:?}");
    }
    listener.close();
}
