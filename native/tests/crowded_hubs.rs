//! A hub that holds many links gives further ones fewer receive slots (so that many connections
//! exchanging small messages do not stream through more memory than a core's cache holds), and a
//! link with fewer slots still carries a long stream in both directions, its credits going round
//! the ring many times.

mod common;

use std::thread;

use hadronio::config::settings;
use hadronio::core::hub::Hub;
use hadronio::core::link::{CROWDED_HUB, CROWDED_SLOTS};
use hadronio::core::listener::Listener;
use common::{close_pair, connected_to, read_exactly, region};

#[test]
fn links_beyond_a_crowded_hub_get_fewer_slots_and_carry_streams() {
    let configured = settings().slots;
    assert!(configured > CROWDED_SLOTS, "the default has more slots than a crowded hub gives");
    let hub = Hub::new(settings(), true).unwrap();
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse().unwrap(), 64).unwrap();
    let mut pairs = Vec::new();
    for i in 0..CROWDED_HUB + 2 {
        pairs.push(connected_to(&hub, &listener, i as u8));
    }
    listener.close();
    assert_eq!(hub.link_count(), CROWDED_HUB + 2);
    for (i, (_, server)) in pairs.iter().enumerate() {
        let expected = if i < CROWDED_HUB { configured } else { CROWDED_SLOTS };
        assert_eq!(server.receive_slots(), Some(expected), "server side of connection {i}");
    }

    // 4 MiB each way at once on the last connection, in writes of 3,000 bytes: its ring of 8
    // slots goes round more than a hundred times, and its credits return after every 4 messages.
    const TOTAL: usize = 4 << 20;
    let (client, server) = pairs.pop().unwrap();
    let pattern = |from: usize| (0..3000).map(|i| ((from + i) * 31 + 1) as u8).collect::<Vec<u8>>();
    let sender = {
        let client = client.clone();
        thread::spawn(move || {
            let mut sent = 0;
            while sent < TOTAL {
                let mut chunk = pattern(sent);
                chunk.truncate(TOTAL - sent);
                // A blocking write takes all of it, as the kernel's does.
                assert_eq!(client.write(&region(&mut chunk), true).unwrap(), chunk.len());
                sent += chunk.len();
            }
        })
    };
    let echo = {
        let server = server.clone();
        thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut moved = 0;
            while moved < TOTAL {
                let n = (TOTAL - moved).min(buf.len());
                read_exactly(&server, &mut buf[..n], None);
                assert_eq!(server.write(&region(&mut buf[..n]), true).unwrap(), n);
                moved += n;
            }
        })
    };
    let mut back = vec![0u8; TOTAL];
    read_exactly(&client, &mut back, None);
    sender.join().unwrap();
    echo.join().unwrap();
    for (k, chunk) in back.chunks(3000).enumerate() {
        assert_eq!(chunk, &pattern(k * 3000)[..chunk.len()], "bytes at {} differ", k * 3000);
    }
    close_pair(&client, &server);
    for (client, server) in &pairs {
        close_pair(client, server);
    }
}
