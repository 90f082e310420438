//! A client remembers what its connections showed about a server address (`core/peers.rs`), with
//! real sockets: a plain server that answered none of the last offers, and a hadroNIO server whose
//! connections each carry one request and its answer, get no offer on the next connections (but
//! samples: the `SAMPLE_EVERY`th, then one twice as many later); every connection still carries
//! its bytes exactly. (This file runs in a process of its own: the memory is the process's.)

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Once};
use std::thread;

use hadronio::config::{settings, Settings, Upgrade};
use hadronio::core::conn::Conn;
use hadronio::core::error::Status;
use hadronio::core::listener::Listener;
use hadronio::core::peers::SAMPLE_EVERY;
use common::region;

/// A client's mark waits for its second write or a minute: a connection here carries one
/// request however slow the machine, so only the count of writes decides its upgrade.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        assert!(Settings::install(Settings { upgrade: Upgrade { delay_ms: 60_000, ..Settings::default().upgrade }, ..Settings::default() }));
    });
}

/// Connects to `addr`, writes one request, reads the answer to the end; returns the answer and the
/// path the connection took.
fn one_request(addr: SocketAddr, request: &[u8]) -> (Vec<u8>, String) {
    let client = Conn::open(settings()).unwrap();
    assert!(client.connect(&addr, true, None).unwrap());
    let mut out = request.to_vec();
    assert_eq!(client.write(&region(&mut out), true).unwrap(), out.len());
    let mut answer = Vec::new();
    loop {
        let mut buf = [0u8; 256];
        match client.read(&region(&mut buf), true, None) {
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.status == Status::Eof => break,
            Err(e) => panic!("after {} bytes of the answer: {e:?}", answer.len()),
        }
    }
    let path = client.describe();
    client.close();
    (answer, path)
}

#[test]
fn a_plain_server_that_answered_no_offer_gets_none() {
    setup();
    // A plain server that answers each line on a new connection and closes (HTTP/1.0 style).
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    // The record settles after two; samples come after `SAMPLE_EVERY` more and twice as many.
    let connections = 2 + 3 * SAMPLE_EVERY as usize;
    let plain = thread::spawn(move || {
        for _ in 0..connections {
            let (stream, _) = server.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            reader.get_mut().write_all(format!("pong {}", line).as_bytes()).unwrap();
        }
    });
    let mut offered = 0;
    for i in 0..connections {
        let (answer, path) = one_request(addr, format!("ping {i}\n").as_bytes());
        assert_eq!(answer, format!("pong ping {i}\n").as_bytes(), "connection {i}: {path}");
        assert!(path.starts_with("tcp"), "connection {i}: {path}");
        if i < 2 {
            assert!(path.contains("closed without answering the offer"), "connection {i}: {path}");
        } else if path.contains("went unanswered") {
            assert!(path.contains("a plain server"), "connection {i}: {path}");
        } else {
            offered += 1;
        }
    }
    // Two samples among the connections after the first two; the rest offered nothing.
    assert_eq!(offered, 2);
    plain.join().unwrap();
}

#[test]
fn connections_per_request_to_a_hadronio_server_stop_offering() {
    setup();
    let listener = Arc::new(Listener::open(settings()).unwrap());
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 64).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let connections = 8 + 3 * SAMPLE_EVERY as usize;
    let accepting = listener.clone();
    let server = thread::spawn(move || {
        let mut paths = Vec::new();
        for _ in 0..connections {
            let conn = accepting.accept(true, None).unwrap().unwrap();
            let mut request = [0u8; 5];
            common::read_exactly(&conn, &mut request, None);
            let mut answer = b"answer".to_vec();
            assert_eq!(conn.write(&region(&mut answer), true).unwrap(), answer.len());
            paths.push(conn.describe());
            conn.close();
        }
        paths
    });
    let mut skipped = 0;
    for i in 0..connections {
        let (answer, path) = one_request(addr, b"query");
        assert_eq!(answer, b"answer", "connection {i}: {path}");
        assert!(path.starts_with("tcp"), "connection {i}: {path}");
        if path.contains("a connection per request") {
            assert!(i >= 8, "connection {i}: {path}");
            skipped += 1;
        }
    }
    assert_eq!(skipped, connections - 8 - 2, "all but the two samples after the first eight skip the offer");
    let paths = server.join().unwrap();
    // The server saw an offer on the first eight and the samples, plain clients on the others.
    let plain = paths.iter().filter(|p| p.contains("does not speak hadroNIO")).count();
    assert_eq!(plain, skipped, "{paths:?}");
    listener.close();
}
