//! A selector whose UCX sends wait for a full peer ring sleeps between looks.
//!
//! Messages to a worker go through its shared-memory ring; when the ring is full, UCX keeps
//! further sends until its owner reads, and the sending worker cannot be armed meanwhile (UCX
//! refuses while sends wait, before it takes the signal of an earlier wake-up from its socket).
//! That unread signal keeps the worker's event fd readable: a select that slept in `epoll_wait`
//! on it returned at once and looked again, over and over, taking a core from the peer that has
//! to read (netty echo with hundreds of connections ran at a third of its speed).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hadronio::config::settings;
use hadronio::core::conn::Conn;
use hadronio::core::hub::Hub;
use hadronio::core::listener::Listener;
use hadronio::core::readiness::OP_READ;
use hadronio::core::selector::{Selector, Target};
use common::{region, upgrade};

/// Connections whose server ends nobody reads: with every client's slots full of messages in
/// flight (32 each, by default) they are more than the peer's ring holds (128).
const PAIRS: usize = 8;

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes one timespec into a live local.
    assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) }, 0);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

#[test]
fn a_select_behind_a_full_peer_ring_sleeps() {
    // The clients are registered with one selector (their connections use its worker); the
    // server ends share a hub of their own.
    let selector = Selector::open(settings()).unwrap();
    let server_hub = Hub::new(settings(), true).unwrap();
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse().unwrap(), 16).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let mut pairs: Vec<(Arc<Conn>, Arc<Conn>)> = Vec::new();
    for round in 0..PAIRS as u8 {
        let client = Conn::open(settings()).unwrap();
        selector.register(Target::Conn(client.clone()), round as i32, OP_READ).unwrap();
        assert!(client.connect(&addr, true, None).unwrap());
        let server = listener.accept(true, None).unwrap().unwrap();
        server.bind_hub(&server_hub).unwrap();
        upgrade(&client, &server, round);
        pairs.push((client, server));
    }
    assert!(pairs.iter().all(|(c, _)| Arc::ptr_eq(c.hub().unwrap(), selector.hub())), "the clients use the selector's hub");

    // The selector's worker sleeps (armed) and a message wakes it: the wake-up's signal stays
    // in its socket until the worker is armed again.
    let (waker, woken) = (pairs[0].1.clone(), pairs[0].0.clone());
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        waker.write(&region(&mut [1u8]), true).unwrap();
    });
    assert_eq!(woken.read(&region(&mut [0u8]), true, None).unwrap(), 1);
    writer.join().unwrap();

    // Fill every client's credits and staging without blocking; nobody reads on the server side.
    let slot = settings().slot_len as usize;
    let mut chunk = vec![0x5au8; slot];
    let mut written = Vec::new();
    for (client, _) in &pairs {
        let mut total = 0;
        loop {
            match client.write(&region(&mut chunk), false).unwrap() {
                0 => break,
                n => total += n,
            }
        }
        written.push(total);
    }
    assert!(written.iter().sum::<usize>() > 128 * slot, "the clients wrote {written:?} bytes: less than the ring holds");

    // A select waits on the selector's hub, whose sends the full ring holds back.
    let wait = Duration::from_millis(300);
    let mut ready = [0i32; 2 * PAIRS];
    let cpu = thread_cpu();
    let start = Instant::now();
    let n = selector.select(Some(wait), &mut ready);
    let (busy, waited) = (thread_cpu() - cpu, start.elapsed());
    assert_eq!(n, 0, "nothing to read, yet a key was selected");
    assert!(waited >= wait);
    // Sleeping in steps from 20 µs up, doubling, takes about 15 wake-ups in 300 ms (well under a
    // millisecond of CPU); a wait that does not sleep uses the core for as long as the scheduler
    // lets it.
    assert!(busy < waited / 10, "the selecting thread used {busy:?} of CPU in {waited:?}: it looks again without sleeping");

    // Once the servers read, every byte arrives.
    let mut buffer = vec![0u8; slot];
    for ((_, server), expected) in pairs.iter().zip(written) {
        let mut got = 0;
        while got < expected {
            let want = (expected - got).min(buffer.len());
            let n = server.read(&region(&mut buffer[..want]), true, Some(Duration::from_secs(10))).unwrap();
            assert!(buffer[..n].iter().all(|&b| b == 0x5a), "a byte differs");
            got += n;
        }
    }
    selector.close();
}
