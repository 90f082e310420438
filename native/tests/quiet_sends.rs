//! Staged sends that UCX queues behind a full peer ring complete without an event for their
//! connection, unless a writer waits for room in staging: then their completion tells it.
//!
//! With hundreds of connections each keeping a message in flight, the peer's shared-memory ring
//! (128 messages) is full most of the time and most sends wait in UCX. An event per completed
//! send (the connection's state, its keys) cost netty echo at 4000 connections about a seventh
//! of its CPU; the buffers are now recycled when the link is next used. A channel registered for
//! OP_WRITE while its staging is full, and a blocking writer, must still hear when the sends went.

mod common;

use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use common::{read_exactly, region, selector_pairs};
use hadronio::config::{settings, Settings};
use hadronio::core::conn::Conn;
use hadronio::core::hub::Hub;
use hadronio::core::readiness::{Key, OP_WRITE};
use hadronio::core::selector::Selector;

/// Connections whose first messages are more than the peer's ring holds (128 messages; each
/// client may send 32 before the server reports what it read).
const PAIRS: usize = 8;

/// A send buffer of one slot: a client whose one staged message waits in UCX behind the full
/// ring has no room, and its server, reading that one message, reports nothing back (it reports
/// every 16), so the send's completion is the only thing that can tell the client.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let slot_len = Settings::default().slot_len;
        assert!(Settings::install(Settings { send_buffer: slot_len, ..Settings::default() }));
    });
    assert_eq!(settings().send_buffer, settings().slot_len);
}

/// Upgraded pairs with the clients on `selector` (see [`selector_pairs`]), once the timers of
/// their upgrades passed.
fn pairs(selector: &Arc<Selector>) -> (Vec<(Arc<Conn>, Arc<Conn>)>, Vec<Arc<Key>>, Arc<Hub>) {
    let pairs = selector_pairs(selector, PAIRS as u8);
    // A new connection asks the background thread for the times its upgrade may end at (the
    // probe's, 2 s), which look at its keys again when they come: let them pass, so that only
    // the sends can wake the keys.
    std::thread::sleep(Duration::from_secs(3));
    pairs
}

/// Writes without blocking until a client's staging takes nothing more; the bytes written.
fn fill(client: &Conn, fill: u8) -> usize {
    let mut chunk = vec![fill; settings().slot_len as usize];
    let mut total = 0;
    loop {
        match client.write(&region(&mut chunk), false).unwrap() {
            0 => return total,
            n => total += n,
        }
    }
}

/// Reads `expected` bytes of `fill` on every server, each on a thread of its own.
fn drain(pairs: &[(Arc<Conn>, Arc<Conn>)], expected: &[usize], fill: u8) -> Vec<std::thread::JoinHandle<()>> {
    pairs
        .iter()
        .zip(expected)
        .map(|((_, server), &expected)| {
            let server = server.clone();
            std::thread::spawn(move || {
                let mut buffer = vec![0u8; expected];
                read_exactly(&server, &mut buffer, Some(Duration::from_secs(20)));
                assert!(buffer.iter().all(|&b| b == fill), "a byte differs");
            })
        })
        .collect()
}

#[test]
fn a_channel_waiting_for_room_in_staging_is_selected_when_its_sends_went() {
    setup();
    let selector = Selector::open(settings()).unwrap();
    let (pairs, keys, _server_hub) = pairs(&selector);
    let written: Vec<usize> = pairs.iter().map(|(client, _)| fill(client, 0x5a)).collect();
    let send_buffer = settings().send_buffer as usize;
    assert!(written.iter().all(|&w| w >= send_buffer), "every client fills its staging: {written:?}");

    // Interest in writing now, while staging is full: nobody is writable.
    for key in &keys {
        key.set_interest(OP_WRITE);
    }
    let mut ready = [0i32; 2 * PAIRS];
    assert_eq!(selector.select(Some(Duration::ZERO), &mut ready), 0, "a client with full staging was selected for writing");

    // The servers read everything; the staged messages go out (most of them waiting for the
    // ring first), and each client must be selected for writing without writing itself.
    let readers = drain(&pairs, &written, 0x5a);
    let mut selected = [false; PAIRS];
    let deadline = Instant::now() + Duration::from_secs(20);
    while !selected.iter().all(|&s| s) && Instant::now() < deadline {
        let n = selector.select(Some(deadline.saturating_duration_since(Instant::now())), &mut ready);
        for pair in ready[..2 * n].chunks(2) {
            if pair[1] as u32 & OP_WRITE != 0 {
                selected[pair[0] as usize] = true;
                // A selected key stays ready: without interest it lets the select sleep.
                keys[pair[0] as usize].set_interest(0);
            }
        }
    }
    assert!(selected.iter().all(|&s| s), "clients selected for writing once their data went: {selected:?}");
    for reader in readers {
        reader.join().unwrap();
    }
    selector.close();
}

#[test]
fn a_blocking_writer_waiting_for_room_in_staging_goes_on_when_its_sends_went() {
    setup();
    let selector = Selector::open(settings()).unwrap();
    let (pairs, _keys, _server_hub) = pairs(&selector);
    let written: Vec<usize> = pairs.iter().map(|(client, _)| fill(client, 0x33)).collect();

    // One more slot on each client in a blocking write: it waits for room in staging.
    let slot = settings().slot_len as usize;
    let expected: Vec<usize> = written.iter().map(|w| w + slot).collect();
    let readers = drain(&pairs, &expected, 0x33);
    let start = Instant::now();
    for (client, _) in &pairs {
        let mut chunk = vec![0x33u8; slot];
        assert_eq!(client.write(&region(&mut chunk), true).unwrap(), slot);
    }
    for reader in readers {
        reader.join().unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(20));
    selector.close();
}
