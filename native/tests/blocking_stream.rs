//! A blocking writer whose peer has not freed its slots yet waits a moment for the credits when
//! it has whole slots left to send, rather than copying them into staging: over UCX every byte of
//! a stream is then copied into the peer's ring straight from the caller's memory. A peer that
//! does not read still leaves the writer the staging buffer, as the kernel's send buffer does.

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use hadronio::config::settings;
use hadronio::core::conn::Conn;
use common::{close_pair, connected_pair, read_exactly, region, upgrade};

/// A read that finds nothing for this long means the bytes were lost.
const STALL: Duration = Duration::from_secs(10);

fn pattern(i: usize) -> u8 {
    (i * 13 + i / 4099) as u8
}

fn check(buf: &[u8], offset: usize) {
    let wrong = (0..buf.len()).find(|&i| buf[i] != pattern(offset + i));
    assert_eq!(wrong, None, "first wrong byte after {offset}");
}

/// Writes `total` pattern bytes from `offset` in blocking writes of `piece` bytes (four slots and
/// more go as one BODY message from 256 KiB); the bytes found in staging after each write, summed.
fn write_pieces(client: &Conn, offset: usize, total: usize, piece: usize) -> usize {
    let mut data: Vec<u8> = (offset..offset + total).map(pattern).collect();
    let mut staged = 0;
    for piece in data.chunks_mut(piece) {
        assert_eq!(client.write(&region(piece), true).unwrap(), piece.len());
        staged += client.tx_backlog().unwrap().0;
    }
    staged
}

#[test]
fn a_stream_read_as_it_comes_is_not_staged() {
    let (client, server) = connected_pair();
    upgrade(&client, &server, 1);
    let total = 64 << 20;
    let reader = {
        let server = Arc::clone(&server);
        thread::spawn(move || {
            let mut got = vec![0u8; total];
            read_exactly(&server, &mut got, Some(STALL));
            check(&got, 0);
        })
    };
    let staged = write_pieces(&client, 0, total, 4 * settings().slot_len as usize);
    reader.join().unwrap();
    // Each write adds what it left in staging; all of them together held less than a tenth of
    // the stream (a writer that stages whenever the credits run out leaves whole pieces there).
    assert!(staged < total / 10, "{staged} of {total} bytes found staged after the writes");
    close_pair(&client, &server);
}

#[test]
fn a_writer_whose_peer_does_not_read_fills_the_staging_buffer() {
    let (client, server) = connected_pair();
    upgrade(&client, &server, 2);
    let slot = settings().slot_len as usize;
    // Slot by slot until no credit is left (each goes to UCX at once), nobody reading.
    let mut sent = 0;
    while client.tx_backlog().unwrap().1 > 0 {
        assert_eq!(write_pieces(&client, sent, slot, slot), 0, "a slot with a credit was staged");
        sent += slot;
    }
    // The staging buffer's worth more, four slots at a time: every write returns, its bytes
    // staged once it waited for a credit in vain.
    let buffer = settings().send_buffer as usize;
    write_pieces(&client, sent, buffer, 4 * slot);
    assert_eq!(client.tx_backlog().unwrap(), (buffer, 0));
    let total = sent + buffer;
    let mut got = vec![0u8; total];
    read_exactly(&server, &mut got, Some(STALL));
    check(&got, 0);
    close_pair(&client, &server);
}
