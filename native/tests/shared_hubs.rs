//! Channels used in blocking mode beyond `hadronio.blockingWorkers` share the hubs (and UCX
//! workers) of the first ones, and the threads of different channels take turns progressing a
//! hub: each wakes when its own connection has something, the leadership passes on when its
//! holder leaves, and a close from another thread wakes the thread blocked on that connection.
//! Small messages upgrade too here (`hadronio.sharedUpgradeBytes=0`), so that the hubs' waiting
//! is what carries them. (A process of its own: the settings are process-wide.)

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Once};
use std::thread;
use std::time::Duration;

use hadronio::config::{settings, Settings, Upgrade, Workers};
use hadronio::core::conn::Conn;
use hadronio::core::error::Status;
use hadronio::core::listener::Listener;
use common::{read_exactly, region, upgrade};

const WORKERS: usize = 2;

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let usual = Settings::default();
        let upgrade = Upgrade { shared_bytes: 0, ..usual.upgrade.clone() };
        assert!(Settings::install(Settings { workers: Workers { blocking: WORKERS, ..usual.workers }, upgrade, ..usual }));
    });
}

/// `count` blocking connections (client, server), each after round trips until both ends went
/// over to UCX.
fn pairs(count: usize) -> Vec<(Arc<Conn>, Arc<Conn>)> {
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 64).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let mut pairs = Vec::new();
    for _ in 0..count {
        let client = Conn::open(settings()).unwrap();
        assert!(client.connect(&addr, true, None).unwrap());
        let server = listener.accept(true, None).unwrap().unwrap();
        upgrade(&client, &server, 7);
        pairs.push((client, server));
    }
    listener.close();
    pairs
}

fn hubs(conns: &[&Arc<Conn>]) -> usize {
    conns.iter().map(|c| Arc::as_ptr(c.hub().unwrap()) as usize).collect::<HashSet<_>>().len()
}

#[test]
fn channels_beyond_the_budget_share_hubs_and_each_thread_gets_its_own_bytes() {
    setup();
    const PAIRS: usize = 12;
    const ROUNDS: usize = 300;
    let pairs = pairs(PAIRS);
    let all: Vec<&Arc<Conn>> = pairs.iter().flat_map(|(c, s)| [c, s]).collect();
    assert!(hubs(&all) <= WORKERS, "{} connections on {} hubs", all.len(), hubs(&all));

    // Every connection gets a thread of its own, all blocked on the same few hubs: each server
    // echoes, each client checks that the echo is its own.
    let (done_tx, done_rx) = mpsc::channel();
    for (index, (client, server)) in pairs.iter().enumerate() {
        let server = server.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 64];
            for _ in 0..ROUNDS {
                read_exactly(&server, &mut buf, None);
                server.write(&region(&mut buf), true).unwrap();
            }
        });
        let client = client.clone();
        let done = done_tx.clone();
        thread::spawn(move || {
            for round in 0..ROUNDS {
                let mut message = [0u8; 64];
                message[0] = index as u8;
                message[1..9].copy_from_slice(&(round as u64).to_le_bytes());
                client.write(&region(&mut message.clone()), true).unwrap();
                let mut echo = [0u8; 64];
                read_exactly(&client, &mut echo, None);
                assert_eq!(echo, message, "connection {index}, round {round}: not its own echo");
            }
            done.send(index).unwrap();
        });
    }
    for _ in 0..PAIRS {
        done_rx.recv_timeout(Duration::from_secs(60)).expect("a thread on a shared hub was never woken");
    }
    for (client, server) in &pairs {
        client.close();
        server.close();
    }
}

#[test]
fn a_close_wakes_the_thread_blocked_on_that_connection_only() {
    setup();
    let pairs = pairs(6);
    let all: Vec<&Arc<Conn>> = pairs.iter().flat_map(|(c, s)| [c, s]).collect();
    assert!(hubs(&all) <= WORKERS);
    // A blocked reader on every server side.
    let (result_tx, result_rx) = mpsc::channel();
    for (index, (_, server)) in pairs.iter().enumerate() {
        let server = server.clone();
        let results = result_tx.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 16];
            let result = server.read(&region(&mut buf), true, None);
            results.send((index, result.map_err(|e| e.status))).unwrap();
        });
    }
    thread::sleep(Duration::from_millis(200));
    pairs[2].1.close();
    let (index, result) = result_rx.recv_timeout(Duration::from_secs(10)).expect("the closed connection's reader stays blocked");
    assert_eq!((index, result), (2, Err(Status::Closed)));
    assert!(result_rx.recv_timeout(Duration::from_millis(200)).is_err(), "another reader returned");
    // The others still get their bytes.
    for (index, (client, _)) in pairs.iter().enumerate().filter(|(i, _)| *i != 2) {
        let mut byte = [index as u8];
        client.write(&region(&mut byte), true).unwrap();
        let (got, result) = result_rx.recv_timeout(Duration::from_secs(10)).expect("a reader was not woken by its bytes");
        assert_eq!((got, result), (index, Ok(1)));
    }
    for (client, server) in &pairs {
        client.close();
        server.close();
    }
}
