//! A hadroNIO server connection whose client is a plain TCP socket (`std::net::TcpStream`): the
//! connection stays on TCP for good, and a blocking read waits in the kernel's `recv` itself.
//! Checks that it does (the thread is seen asleep inside `recvmsg`), that `close`, `shutdown_input` and the
//! peer's end or reset wake it as they should; the same for a blocking write that waits for room
//! in the kernel's `sendmsg` (`close`, `shutdown_output`, the peer's reset), and that a gathering
//! write arrives whole. Also a
//! connection that gave the upgrade up, or whose server reset it right after answering the offer:
//! a reset of its raw stream is a reset, not an end.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use hadronio::config::settings;
use hadronio::core::conn::Conn;
use hadronio::core::error::{Result, Status};
use hadronio::core::iov::Region;
use hadronio::core::listener::Listener;
use common::{connected_pair, region};

/// A plain client and the hadroNIO server connection it reached, after one byte went each way
/// (the byte makes the server decide that the client is plain).
fn plain_pair() -> (TcpStream, Arc<Conn>) {
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 16).unwrap();
    let addr = listener.local_addr().unwrap().unwrap();
    let mut client = TcpStream::connect(addr).unwrap();
    let server = listener.accept(true, None).unwrap().unwrap();
    listener.close();
    client.write_all(b"x").unwrap();
    let mut byte = [0u8];
    assert_eq!(server.read(&region(&mut byte), true, None).unwrap(), 1);
    assert_eq!(&byte, b"x");
    assert!(server.describe().starts_with("tcp"), "{}", server.describe());
    (client, server)
}

/// Runs `call` on another thread and returns once that thread sleeps inside system call `number`
/// (as `/proc` shows), with the thread's result to come.
fn asleep_in<T: Send + 'static>(number: i64, call: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let (tid_tx, tid_rx) = mpsc::channel();
    let thread = thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        call()
    });
    let tid = tid_rx.recv().unwrap();
    let task = format!("/proc/self/task/{tid}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let call = std::fs::read_to_string(format!("{task}/syscall")).unwrap_or_default();
        let current = call.split_whitespace().next().and_then(|n| n.parse::<i64>().ok());
        // The state follows the command name in parentheses: `S` is asleep.
        let stat = std::fs::read_to_string(format!("{task}/stat")).unwrap_or_default();
        let asleep = stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('S'));
        if current == Some(number) && asleep {
            return thread;
        }
        assert!(Instant::now() < deadline, "the thread does not sleep in system call {number} (its system call: {call:?}, {stat:?})");
        thread::sleep(Duration::from_millis(5));
    }
}

/// Starts a blocking read of up to 64 bytes on another thread and returns once that thread sleeps
/// inside `recvmsg`, with the thread's result to come.
fn blocked_reader(server: &Arc<Conn>) -> JoinHandle<(Result<usize>, Vec<u8>)> {
    let server = server.clone();
    asleep_in(libc::SYS_recvmsg, move || {
        let mut buf = vec![0u8; 64];
        let result = server.read(&region(&mut buf), true, None);
        (result, buf)
    })
}

/// Bytes a blocked writer sends: far more than the socket buffers of both ends hold.
const BLOCKED_WRITE: usize = 32 << 20;

/// The byte at `offset` of what [`blocked_writer`] sends.
fn pattern(offset: usize) -> u8 {
    (offset % 251) as u8
}

/// Starts a blocking write of [`BLOCKED_WRITE`] bytes on another thread (its peer reads nothing
/// yet) and returns once that thread sleeps inside `sendmsg`, with the write's result to come.
fn blocked_writer(server: &Arc<Conn>) -> JoinHandle<Result<usize>> {
    let server = server.clone();
    asleep_in(libc::SYS_sendmsg, move || {
        let mut buf: Vec<u8> = (0..BLOCKED_WRITE).map(pattern).collect();
        server.write(&region(&mut buf), true)
    })
}

/// Reads until the end of the stream and checks that every byte is the writer's pattern.
fn read_pattern_to_end(client: &mut TcpStream) -> usize {
    client.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    if let Some(at) = got.iter().enumerate().position(|(i, b)| *b != pattern(i)) {
        panic!("byte {at} of {} is {}, not {}", got.len(), got[at], pattern(at));
    }
    got.len()
}

#[test]
fn a_blocking_read_waits_in_the_kernel_and_gets_the_bytes() {
    let (mut client, server) = plain_pair();
    let reader = blocked_reader(&server);
    client.write_all(b"hello").unwrap();
    let (result, buf) = reader.join().unwrap();
    assert_eq!(result.unwrap(), 5);
    assert_eq!(&buf[..5], b"hello");
    server.close();
}

#[test]
fn close_wakes_a_read_waiting_in_the_kernel() {
    let (mut client, server) = plain_pair();
    let reader = blocked_reader(&server);
    server.close();
    let (result, _) = reader.join().unwrap();
    assert_eq!(result.unwrap_err().status, Status::Closed);
    // The peer sees the close: end of stream.
    let mut rest = Vec::new();
    client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(client.read_to_end(&mut rest).unwrap(), 0);
}

#[test]
fn shutdown_input_wakes_a_read_waiting_in_the_kernel() {
    let (mut client, server) = plain_pair();
    let reader = blocked_reader(&server);
    server.shutdown_input().unwrap();
    let (result, _) = reader.join().unwrap();
    assert_eq!(result.unwrap_err().status, Status::Eof);
    // Output still works.
    let mut hi = *b"hi";
    assert_eq!(server.write(&region(&mut hi), true).unwrap(), 2);
    let mut got = [0u8; 2];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"hi");
    server.close();
}

#[test]
fn the_peers_end_and_reset_end_a_read_waiting_in_the_kernel() {
    let (client, server) = plain_pair();
    let reader = blocked_reader(&server);
    client.shutdown(Shutdown::Write).unwrap();
    let (result, _) = reader.join().unwrap();
    assert_eq!(result.unwrap_err().status, Status::Eof);
    server.close();

    let (client, server) = plain_pair();
    let reader = blocked_reader(&server);
    // SO_LINGER 0: the close sends RST.
    socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO)).unwrap();
    drop(client);
    let (result, _) = reader.join().unwrap();
    let error = result.unwrap_err();
    assert_eq!(error.status, Status::Reset, "{error}");
    server.close();
}

#[test]
fn a_blocking_write_waits_in_the_kernel_and_all_of_it_arrives() {
    let (mut client, server) = plain_pair();
    let writer = blocked_writer(&server);
    let reader = thread::spawn(move || read_pattern_to_end(&mut client));
    assert_eq!(writer.join().unwrap().unwrap(), BLOCKED_WRITE);
    server.close();
    assert_eq!(reader.join().unwrap(), BLOCKED_WRITE);
}

#[test]
fn close_wakes_a_write_waiting_in_the_kernel() {
    use hadronio::core::conn::OPT_SO_LINGER;

    for linger in [-1, 0] {
        let (mut client, server) = plain_pair();
        let writer = blocked_writer(&server);
        server.set_option(OPT_SO_LINGER, linger).unwrap();
        server.close();
        let error = writer.join().unwrap().unwrap_err();
        assert_eq!(error.status, Status::Closed, "SO_LINGER {linger}: {error}");
        if linger < 0 {
            // What the socket took goes out before the FIN, and nothing else.
            let got = read_pattern_to_end(&mut client);
            assert!(got > 0 && got < BLOCKED_WRITE, "{got} bytes arrived");
        } else {
            // The reset (perhaps after a FIN) ends the peer's stream.
            let mut rest = Vec::new();
            client.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            if let Err(e) = client.read_to_end(&mut rest) {
                assert!(!matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "{e}");
            }
        }
    }
}

#[test]
fn shutdown_output_wakes_a_write_waiting_in_the_kernel_with_its_count() {
    let (mut client, server) = plain_pair();
    let writer = blocked_writer(&server);
    server.shutdown_output().unwrap();
    let written = writer.join().unwrap().unwrap();
    assert!(written > 0 && written < BLOCKED_WRITE, "the write returned {written}");
    assert_eq!(read_pattern_to_end(&mut client), written, "the peer gets what the write counted, then the end");
    let mut byte = [1u8];
    assert_eq!(server.write(&region(&mut byte), true).unwrap_err().status, Status::OutputShutdown);
    // Input still works.
    client.write_all(b"y").unwrap();
    assert_eq!(server.read(&region(&mut byte), true, None).unwrap(), 1);
    assert_eq!(&byte, b"y");
    server.close();
}

#[test]
fn the_peers_reset_fails_a_write_waiting_in_the_kernel() {
    let (client, server) = plain_pair();
    let writer = blocked_writer(&server);
    socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO)).unwrap();
    drop(client);
    // The kernel's write returns what it took before the reset (as the JDK's does); the next
    // write fails.
    let error = match writer.join().unwrap() {
        Ok(written) => {
            assert!(written < BLOCKED_WRITE, "the write returned {written}");
            let mut byte = [1u8];
            server.write(&region(&mut byte), true).unwrap_err()
        }
        Err(error) => error,
    };
    assert!(matches!(error.status, Status::Reset | Status::BrokenPipe), "{error}");
    server.close();
}

#[test]
fn a_gathering_write_arrives_whole_and_in_order() {
    let (mut client, server) = plain_pair();
    let mut parts: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 100 + i as usize]).collect();
    let total: usize = parts.iter().map(Vec::len).sum();
    let mut written = 0;
    while written < total {
        let mut skip = written;
        let mut rest = Vec::new();
        for part in parts.iter_mut() {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            rest.push(Region::of(&mut part[skip..]));
            skip = 0;
        }
        written += server.write(&rest, true).unwrap();
    }
    let mut got = vec![0u8; total];
    client.read_exact(&mut got).unwrap();
    assert_eq!(got, parts.concat());
    server.close();
}

/// A hadroNIO peer that gave the upgrade up (its side has no UCX: both sides send RAW and go on
/// raw) and then closes with `SO_LINGER` 0: the reader learns of the reset, as a kernel socket's
/// reader does, instead of taking it for a clean end of the raw stream.
#[test]
fn a_reset_after_the_upgrade_was_given_up_is_a_reset() {
    use hadronio::core::conn::OPT_SO_LINGER;
    use hadronio::core::hub::Hub;

    let (client, server) = connected_pair();
    server.bind_hub(&Hub::new(settings(), false).unwrap()).unwrap();
    // Round trips until both sides know that the upgrade was given up.
    for round in 0..100 {
        let mut byte = [round as u8];
        client.write(&region(&mut byte), true).unwrap();
        assert_eq!(server.read(&region(&mut byte), true, None).unwrap(), 1);
        server.write(&region(&mut byte), true).unwrap();
        assert_eq!(client.read(&region(&mut byte), true, None).unwrap(), 1);
        if client.describe().starts_with("tcp") && server.describe().starts_with("tcp") {
            break;
        }
    }
    assert!(client.describe().starts_with("tcp"), "client: {}", client.describe());
    server.set_option(OPT_SO_LINGER, 0).unwrap();
    server.close();
    let mut buf = [0u8; 16];
    let error = client.read(&region(&mut buf), true, Some(Duration::from_secs(10))).unwrap_err();
    assert_eq!(error.status, Status::Reset, "{error}");
    client.close();
}

/// A server that closes with `SO_LINGER` 0 right after it answered the client's offer, before
/// any byte of the application went (netty's `SocketRstTest`): the client reads past the answer's
/// place (the reset took the urgent byte) and must report the reset, not a clean end of the raw
/// stream. (When the client took the answer and its reply met the reset, that reply's `send` was
/// what reported it, and only `rx.reset` tells the reader since.)
#[test]
fn a_reset_right_after_the_answer_is_a_reset() {
    use hadronio::core::conn::OPT_SO_LINGER;

    let (client, server) = connected_pair();
    // The server takes the client's offer and answers it, then resets the connection.
    let mut buf = [0u8; 16];
    for _ in 0..20 {
        assert_eq!(server.read(&region(&mut buf), false, None).unwrap(), 0);
        thread::sleep(Duration::from_millis(5));
    }
    server.set_option(OPT_SO_LINGER, 0).unwrap();
    server.close();
    thread::sleep(Duration::from_millis(50));
    let error = client.read(&region(&mut buf), true, Some(Duration::from_secs(10))).unwrap_err();
    assert_eq!(error.status, Status::Reset, "{error}");
    client.close();
}
