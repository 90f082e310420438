//! Slot messages go from the caller's memory straight into UCX, which copies them into the peer's
//! ring at once when it has room. One that UCX has to queue (the ring is full) is copied before
//! the write returns, so the caller may reuse its memory at once: what arrives is what was
//! written, not what the caller's buffer held later.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{read_exactly, region, selector_pairs};
use hadronio::config::settings;
use hadronio::core::conn::Conn;
use hadronio::core::hub::Hub;
use hadronio::core::selector::Selector;

/// Connections whose first messages are more than the peer's ring holds (128 messages; each
/// client may send 32 before the server reports what it read).
const PAIRS: usize = 8;

/// Longer than UCX sends without a request (about 100 bytes), shorter than a slot.
const MESSAGE: usize = 1000;

/// What the caller's buffer holds after each write: no message carries it.
const REUSED: u8 = 0xEE;

/// The byte at stream offset `offset` of pair `pair`: the same within a message, different from
/// the previous and the next message and never [`REUSED`].
fn expected(pair: usize, offset: usize) -> u8 {
    ((offset / MESSAGE * 7 + pair * 13) % 200) as u8
}

/// Pairs upgraded to shared memory, the clients on `selector`'s hub, the servers on a hub of their
/// own that nobody progresses until they read (see [`selector_pairs`]).
fn pairs(selector: &Arc<Selector>) -> (Vec<(Arc<Conn>, Arc<Conn>)>, Arc<Hub>) {
    let (pairs, _keys, server_hub) = selector_pairs(selector, PAIRS as u8);
    for (client, _) in &pairs {
        // Sends from the caller's memory are the shared-memory path's (see `Link::sends_direct`).
        assert!(client.describe().starts_with("ucx over shared memory"), "{}", client.describe());
    }
    (pairs, server_hub)
}

/// Writes messages of pair `pair` without blocking, from one buffer overwritten after every
/// write, until the connection takes nothing more; the bytes written.
fn write_until_full(client: &Conn, pair: usize) -> usize {
    let mut buffer = vec![0u8; MESSAGE];
    let mut total = 0;
    loop {
        let start = total % MESSAGE;
        for (i, byte) in buffer[start..].iter_mut().enumerate() {
            *byte = expected(pair, total + i);
        }
        let n = client.write(&region(&mut buffer[start..]), false).unwrap();
        buffer.fill(REUSED);
        if n == 0 {
            return total;
        }
        total += n;
    }
}

#[test]
fn messages_queued_behind_a_full_ring_carry_what_was_written() {
    let selector = Selector::open(settings()).unwrap();
    let (pairs, _server_hub) = pairs(&selector);
    let written: Vec<usize> = pairs.iter().enumerate().map(|(pair, (client, _))| write_until_full(client, pair)).collect();
    assert!(
        written.iter().sum::<usize>() > 128 * MESSAGE,
        "the clients wrote more messages than the server's ring holds: {written:?}"
    );
    let readers: Vec<_> = pairs
        .iter()
        .zip(written)
        .enumerate()
        .map(|(pair, ((_, server), written))| {
            let server = server.clone();
            std::thread::spawn(move || {
                let mut got = vec![0u8; written];
                read_exactly(&server, &mut got, Some(Duration::from_secs(20)));
                if let Some(offset) = (0..written).find(|&k| got[k] != expected(pair, k)) {
                    panic!(
                        "pair {pair}: byte {offset} (message {}) is {:#x}, written as {:#x}",
                        offset / MESSAGE,
                        got[offset],
                        expected(pair, offset)
                    );
                }
            })
        })
        .collect();
    for reader in readers {
        reader.join().unwrap();
    }
    selector.close();
}
