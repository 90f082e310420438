//! Closing a channel registered with a selector does not wake the selector's thread, as the
//! JDK's selectors are not woken by a close: the thread that waits in `select` sleeps on, and
//! only a thread that waits for the closed connection itself is woken (see `shared_hubs.rs`).
//! Nor does the close shut the socket's output down first where it closes the socket at once
//! (the shutdown is an event for the epoll set the socket is still in). Counted by the hub's
//! sleeps: a leader that is woken looks at its keys again and sleeps once more (28 sleeps for 16
//! closes when both woke it, 9 with the shutdown alone). (A process of its own: the settings and
//! the counters are process-wide.)

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hadronio::config::{settings, Settings, Upgrade};
use hadronio::core::conn::Conn;
use hadronio::core::error::Status;
use hadronio::core::listener::Listener;
use hadronio::core::readiness::OP_READ;
use hadronio::core::selector::{Selector, Target};
use hadronio::stats::{self, Counter};
use common::region;

const CHANNELS: usize = 16;

fn sleeps() -> u64 {
    stats::read()[Counter::Sleeps as usize]
}

#[test]
fn closing_registered_channels_leaves_a_select_asleep() {
    // Plain TCP connections: their sockets are in the selector's epoll set.
    assert!(Settings::install(Settings { upgrade: Upgrade { ucx: false, ..Settings::default().upgrade }, ..Settings::default() }));
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 64).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let selector = Selector::open(settings()).unwrap();
    let mut clients = Vec::new();
    let mut servers: Vec<Arc<Conn>> = Vec::new();
    for index in 0..CHANNELS {
        let client = Conn::open(settings()).unwrap();
        assert!(client.connect(&addr, true, None).unwrap());
        let server = listener.accept(true, None).unwrap().unwrap();
        selector.register(Target::Conn(server.clone()), index as i32, OP_READ).unwrap();
        clients.push(client);
        servers.push(server);
    }
    // A new connection counts as readable until a read finds its socket empty.
    for server in &servers {
        let mut buf = [0u8; 8];
        assert_eq!(server.read(&region(&mut buf), false, None).unwrap(), 0, "nothing was sent");
    }
    let mut ready = [0i32; 2 * CHANNELS];
    assert_eq!(selector.select(Some(Duration::from_millis(20)), &mut ready), 0, "nothing was sent");

    let closing = servers.clone();
    let closer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        for server in closing {
            server.close();
            thread::sleep(Duration::from_millis(5));
        }
    });
    let before = sleeps();
    let wait = Duration::from_millis(300);
    let start = Instant::now();
    let selected = selector.select(Some(wait), &mut ready);
    let (waited, slept) = (start.elapsed(), sleeps() - before);
    closer.join().unwrap();
    assert_eq!(selected, 0, "a closed channel's key was selected");
    assert!(waited >= wait, "the select returned after {waited:?}");
    // One sleep for the whole wait (a few more if the host interrupts it); woken by every
    // close, the selecting thread slept once more after each of the 16.
    assert!(slept <= 4, "the selecting thread slept {slept} times while {CHANNELS} channels closed");

    // The clients read the end of stream.
    for client in &clients {
        let mut buf = [0u8; 8];
        let result = client.read(&region(&mut buf), true, Some(Duration::from_secs(10)));
        assert_eq!(result.map_err(|e| e.status), Err(Status::Eof));
    }
    selector.close();
    listener.close();
}
