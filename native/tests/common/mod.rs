//! Shared by the integration tests that run connections through the core. (Each test file runs in
//! a process of its own, which the worker lifetime tests need: they depend on the process-wide
//! settings and spare workers.)

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hadronio::config::settings;
use hadronio::core::conn::Conn;
use hadronio::core::error::Status;
use hadronio::core::hub::Hub;
use hadronio::core::iov::Region;
use hadronio::core::listener::Listener;
use hadronio::core::readiness::Key;
use hadronio::core::selector::{Selector, Target};

/// The one region of `buf`, as reads and writes take it.
pub fn region(buf: &mut [u8]) -> [Region<'_>; 1] {
    [Region::of(buf)]
}

/// A fresh client connected in blocking mode to `listener`, and the server side it accepted.
fn accepted(listener: &Listener) -> (Arc<Conn>, Arc<Conn>) {
    let addr = listener.local_addr().unwrap().unwrap();
    let client = Conn::open(settings()).unwrap();
    assert!(client.connect(&addr, true, None).unwrap());
    let server = listener.accept(true, None).unwrap().unwrap();
    (client, server)
}

/// A client and server connection through a listener on loopback that is closed again, before
/// any byte went (neither side has chosen its path yet).
pub fn connected_pair() -> (Arc<Conn>, Arc<Conn>) {
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 16).unwrap();
    let pair = accepted(&listener);
    listener.close();
    pair
}

/// A blocking connection from a fresh client to `listener` whose server side is bound to `hub`,
/// after round trips until both sides have switched to UCX.
pub fn connected_to(hub: &Arc<Hub>, listener: &Listener, round: u8) -> (Arc<Conn>, Arc<Conn>) {
    let (client, server) = accepted(listener);
    server.bind_hub(hub).unwrap();
    upgrade(&client, &server, round);
    (client, server)
}

/// `count` pairs through a listener on loopback, upgraded to UCX: each client registered with
/// `selector` before it connects (no interest yet: its connection uses the selector's hub), with
/// its key; the servers on a hub of their own for blocking use.
pub fn selector_pairs(selector: &Arc<Selector>, count: u8) -> (Vec<(Arc<Conn>, Arc<Conn>)>, Vec<Arc<Key>>, Arc<Hub>) {
    let server_hub = Hub::new(settings(), true).unwrap();
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 16).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let (mut pairs, mut keys) = (Vec::new(), Vec::new());
    for round in 0..count {
        let client = Conn::open(settings()).unwrap();
        keys.push(selector.register(Target::Conn(client.clone()), round as i32, 0).unwrap());
        assert!(client.connect(&addr, true, None).unwrap());
        let server = listener.accept(true, None).unwrap().unwrap();
        server.bind_hub(&server_hub).unwrap();
        upgrade(&client, &server, round);
        pairs.push((client, server));
    }
    listener.close();
    (pairs, keys, server_hub)
}

/// How long a new connection may take to switch to UCX: a few round trips (offer, marks,
/// greeting, probe), after the lane's UCX worker was made (on a thread of its own, while bytes
/// flow over TCP) if none was ready.
const UPGRADE_WAIT: Duration = Duration::from_secs(10);

/// Fills `buf` with blocking reads, each waiting at most `stall` (`None`: for ever); panics with
/// how far it got when a read fails or times out.
pub fn read_exactly(conn: &Conn, buf: &mut [u8], stall: Option<Duration>) {
    let mut got = 0;
    while got < buf.len() {
        match conn.read(&region(&mut buf[got..]), true, stall) {
            Ok(n) => got += n,
            Err(e) => panic!("after {got} of {} bytes: {e:?}", buf.len()),
        }
    }
}

/// Echo round trips in blocking mode until both sides of a new connection have switched to UCX.
/// The first carries `hadronio.sharedUpgradeBytes`: blocking connections that share a hub (as
/// the tests' pairs on one hub do) upgrade to a peer on this host only after that much.
pub fn upgrade(client: &Conn, server: &Conn, round: u8) {
    let deadline = Instant::now() + UPGRADE_WAIT;
    let mut first = settings().upgrade.shared_bytes as usize;
    while Instant::now() < deadline {
        let mut hello = vec![round; std::mem::take(&mut first).max(1000)];
        assert_eq!(client.write(&region(&mut hello), true).unwrap(), hello.len());
        let mut echo = vec![0u8; hello.len()];
        read_exactly(server, &mut echo, None);
        assert_eq!(server.write(&region(&mut echo), true).unwrap(), echo.len());
        read_exactly(client, &mut hello, None);
        assert!(hello.iter().all(|&b| b == round), "round {round}: echo differs");
        if client.describe().starts_with("ucx") && server.describe().starts_with("ucx") {
            return;
        }
    }
    panic!("round {round}: no upgrade; client {}, server {}", client.describe(), server.describe());
}

/// Closes both ends (client first) and lets the server see the end of the stream.
pub fn close_pair(client: &Conn, server: &Conn) {
    client.close();
    let mut buf = [0u8; 16];
    assert_eq!(server.read(&region(&mut buf), true, None).unwrap_err().status, Status::Eof);
    server.close();
}
