//! End-to-end through the core, without a JVM: a listener and two connections on one host over
//! real UCX (shared memory), blocking mode, checking bytes, order, end of stream and the path.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;

use hadronio::config::settings;
use hadronio::core::conn::Conn;
use hadronio::core::error::Status;
use hadronio::core::listener::Listener;
use common::{connected_pair, region, upgrade};

/// A connected pair after round trips until both sides switched to UCX.
fn upgraded_pair() -> (Arc<Conn>, Arc<Conn>) {
    let (client, server) = connected_pair();
    upgrade(&client, &server, 1);
    (client, server)
}

fn read_all(conn: &Conn, expected: usize) -> Vec<u8> {
    let mut received = Vec::with_capacity(expected);
    let mut buf = vec![0u8; 70_000];
    loop {
        match conn.read(&region(&mut buf), true, None) {
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.status == Status::Eof => return received,
            Err(e) => panic!("read failed: {e}"),
        }
    }
}

#[test]
fn stream_upgrades_to_shared_memory_and_ends_cleanly() {
    let (client, server) = upgraded_pair();
    let data: Vec<u8> = (0..5_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let writer = {
        let client = client.clone();
        let data = data.clone();
        thread::spawn(move || {
            let mut offset = 0;
            let mut step = 1;
            while offset < data.len() {
                let end = (offset + step).min(data.len());
                let mut chunk = data[offset..end].to_vec();
                let n = client.write(&region(&mut chunk), true).unwrap();
                assert_eq!(n, end - offset, "blocking writes write everything");
                offset = end;
                step = (step * 7 + 13) % 100_000 + 1;
            }
            client.shutdown_output().unwrap();
        })
    };
    let received = read_all(&server, data.len());
    writer.join().unwrap();
    assert_eq!(received.len(), data.len());
    assert!(received == data, "bytes differ");

    let path = server.describe();
    assert!(path.starts_with("ucx"), "server path: {path}");
    assert!(
        path.contains("posix") || path.contains("sysv") || path.contains("cma"),
        "a connection on one host must use a shared-memory transport: {path}"
    );
    assert!(client.describe().starts_with("ucx"));

    // The other direction still works after the half-close, then ends too.
    let mut reply = b"done".to_vec();
    assert_eq!(server.write(&region(&mut reply), true).unwrap(), 4);
    server.close();
    assert_eq!(read_all(&client, 4), b"done");
    client.close();
}

#[test]
fn refused_connect_is_reported() {
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 1).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    listener.close();
    let client = Conn::open(settings()).unwrap();
    let error = client.connect(&addr, true, None).unwrap_err();
    assert_eq!(error.status, Status::Refused, "{error}");
}

#[test]
fn close_wakes_a_blocked_reader() {
    let (client, server) = connected_pair();
    let reader = {
        let server = server.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 16];
            server.read(&region(&mut buf), true, None)
        })
    };
    thread::sleep(std::time::Duration::from_millis(200));
    server.close();
    let result = reader.join().unwrap();
    assert_eq!(result.unwrap_err().status, Status::Closed);
    client.close();
}

#[test]
fn large_writes_arrive_whole_with_small_and_large_reads() {
    let (client, server) = connected_pair();
    let data: Vec<u8> = (0..12_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    let writer = {
        let client = client.clone();
        let data = data.clone();
        thread::spawn(move || {
            // Writes of 1 MiB, 3 MiB and odd sizes: the large-message path, in pieces of at
            // most the peer's maximum message.
            let sizes = [1 << 20, 3 << 20, 65_537, 40_000, 2_000_001];
            let mut offset = 0;
            let mut i = 0;
            while offset < data.len() {
                let end = (offset + sizes[i % sizes.len()]).min(data.len());
                let mut chunk = data[offset..end].to_vec();
                assert_eq!(client.write(&region(&mut chunk), true).unwrap(), end - offset);
                offset = end;
                i += 1;
            }
            client.shutdown_output().unwrap();
        })
    };
    // Alternate tiny reads (bounce buffer) and reads big enough for whole messages.
    let mut received = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; 4 << 20];
    let mut round = 0;
    loop {
        let len = if round % 3 == 0 { 1000 } else { buf.len() };
        round += 1;
        match server.read(&region(&mut buf[..len]), true, None) {
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.status == Status::Eof => break,
            Err(e) => panic!("read failed: {e}"),
        }
    }
    writer.join().unwrap();
    assert_eq!(received.len(), data.len());
    assert!(received == data, "bytes differ");
    client.close();
    server.close();
}

/// Length of the writes that fill a send buffer in [`full_send_buffer`] (one slot).
const SLOT: usize = 16 * 1024;

/// A pair on UCX whose client has used up its credits and filled its send buffer with writes of
/// [`SLOT`] bytes; returns how many bytes the client took. A round trip first puts both sides on
/// UCX with every message so far consumed and reported.
fn full_send_buffer() -> (Arc<Conn>, Arc<Conn>, usize) {
    let (client, server) = upgraded_pair();
    let mut slot = vec![7u8; SLOT];
    let mut written = 0;
    loop {
        let n = client.write(&region(&mut slot), false).unwrap();
        if n == 0 {
            return (client, server, written);
        }
        written += n;
    }
}

/// Receive slots per connection (the default setting).
fn slots() -> usize {
    hadronio::config::settings().slots as usize
}

/// The server consumes half of the client's slots: the credit message it sends then.
fn consume_half_the_slots(server: &Conn) {
    let mut message = vec![0u8; SLOT];
    for _ in 0..slots() / 2 {
        let mut read = 0;
        while read < SLOT {
            read += server.read(&region(&mut message[read..]), true, None).unwrap();
        }
    }
}

/// Credits come back in a credit message once the reader consumed half the slots, whether or not
/// anybody reads on the writer's side: the connection turns writable again without another
/// write (a writer blocked on a full send buffer while its own side reads nothing, an echo server
/// that stops reading until it can write, would otherwise wait for good).
#[test]
fn credit_messages_free_a_full_send_buffer() {
    use hadronio::core::readiness::OP_WRITE;
    let (client, server, written) = full_send_buffer();
    assert!(written > slots() * SLOT, "the send buffer took bytes beyond the credits: {written}");
    assert_eq!(client.ready_ops() & OP_WRITE, 0, "a full send buffer is not writable");

    consume_half_the_slots(&server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while client.ready_ops() & OP_WRITE == 0 {
        assert!(std::time::Instant::now() < deadline, "the credit message freed no room");
        client.hub().expect("bound").poll_now();
        thread::sleep(std::time::Duration::from_millis(1));
    }
    client.close();
    server.close();
}

/// A blocking write waiting for room goes on once the reader's credit message is in.
#[test]
fn credit_messages_release_a_blocked_writer() {
    use std::sync::mpsc;
    use std::time::Duration;
    let (client, server, _) = full_send_buffer();

    let (done, finished) = mpsc::channel();
    let writer = {
        let client = client.clone();
        thread::spawn(move || {
            let mut more = vec![8u8; SLOT];
            done.send(client.write(&region(&mut more), true).map_err(|e| e.to_string())).unwrap();
        })
    };
    consume_half_the_slots(&server);
    let result = finished.recv_timeout(Duration::from_secs(20));
    if result.is_err() {
        // Unblock the writer so that the test ends with its failure.
        client.close();
    }
    assert_eq!(result.expect("the credit message freed room").unwrap(), SLOT);
    writer.join().unwrap();
    client.close();
    server.close();
}
