//! Receive slots of 64 KiB (`hadronio.slotLength=65536`): full-slot messages arrive.
//!
//! UCX's shared-memory FIFO records a message's length in 16 bits. Segments sized for a 64 KiB
//! slot plus UCX's headers were longer than that: every full-slot message's length wrapped, the
//! receiver never saw it, and both sides of a 1 MiB exchange waited for ever.

mod common;

use std::sync::Once;
use std::time::Duration;

use hadronio::config::{settings, Settings};
use hadronio::core::conn::Conn;
use common::{connected_pair, read_exactly, region, upgrade};

const SLOT: u32 = 64 * 1024;
const TOTAL: usize = 1 << 20;
/// A read that finds nothing for this long means the bytes were lost.
const STALL: Duration = Duration::from_secs(10);

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        assert!(Settings::install(Settings { slot_len: SLOT, ..Settings::default() }));
    });
    assert_eq!(settings().slot_len, SLOT);
}

fn pattern(i: usize) -> u8 {
    (i * 7 + i / 65536) as u8
}

/// Reads `TOTAL` bytes and checks them against the pattern.
fn read_all(conn: &Conn) {
    let mut buf = vec![0u8; TOTAL];
    read_exactly(conn, &mut buf, Some(STALL));
    let wrong = (0..TOTAL).find(|&i| buf[i] != pattern(i));
    assert_eq!(wrong, None, "first wrong byte");
}

#[test]
fn full_slot_messages_arrive_blocking_and_not() {
    setup();
    let (client, server) = connected_pair();
    upgrade(&client, &server, 1);
    for blocking in [true, false] {
        // The writer has a thread of its own: a blocking write whose messages were lost would
        // wait for their credits for ever, and the reader's time-out fails the test instead.
        let client = client.clone();
        let writer = std::thread::spawn(move || {
            let mut data: Vec<u8> = (0..TOTAL).map(pattern).collect();
            let mut sent = 0;
            while sent < TOTAL {
                match client.write(&region(&mut data[sent..]), blocking).unwrap() {
                    0 => std::thread::sleep(Duration::from_micros(50)),
                    n => sent += n,
                }
            }
        });
        read_all(&server);
        writer.join().unwrap();
    }
    assert!(client.describe().starts_with("ucx over shared memory"), "{}", client.describe());
}
