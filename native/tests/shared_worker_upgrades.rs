//! Channels in blocking mode whose UCX worker serves other channels too upgrade to a peer on this
//! host only where they moved `hadronio.sharedUpgradeBytes` (64 KiB) before the upgrade was
//! decided: small messages stay on the kernel's TCP, which wakes the reader alone, and bulk
//! transfers go over shared memory. (A process of its own: the settings are process-wide.)

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use hadronio::config::{settings, Settings, Workers};
use hadronio::core::conn::Conn;
use hadronio::core::listener::Listener;
use common::{read_exactly, region};

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // One worker for all blocking channels: both ends of every pair share it.
        let usual = Settings::default();
        assert!(Settings::install(Settings { workers: Workers { blocking: 1, ..usual.workers }, ..usual }));
    });
}

fn pair(listener: &Listener) -> (Arc<Conn>, Arc<Conn>) {
    let client = Conn::open(settings()).unwrap();
    assert!(client.connect(&listener.local_addr().unwrap().unwrap(), true, None).unwrap());
    let server = listener.accept(true, None).unwrap().unwrap();
    (client, server)
}

/// Echoes `size` bytes through the pair until both ends decided their path (neither describes
/// the upgrade as under way) or 10 s passed; returns both descriptions.
fn echo_until_decided(client: &Conn, server: &Conn, size: usize) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut round = 0u8;
    loop {
        round = round.wrapping_add(1);
        let mut message = vec![round; size];
        assert_eq!(client.write(&region(&mut message), true).unwrap(), size);
        let mut echo = vec![0u8; size];
        read_exactly(server, &mut echo, None);
        assert_eq!(server.write(&region(&mut echo), true).unwrap(), size);
        read_exactly(client, &mut message, None);
        assert!(message.iter().all(|&b| b == round), "round {round}: the echo differs");
        let (c, s) = (client.describe(), server.describe());
        let decided = |d: &str| !d.starts_with("tcp (not upgraded yet)");
        if (decided(&c) && decided(&s) && round >= 8) || Instant::now() > deadline {
            return (c, s);
        }
    }
}

#[test]
fn small_messages_on_a_shared_worker_stay_on_tcp_and_bulk_transfers_upgrade() {
    setup();
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 16).unwrap();

    let (client, server) = pair(&listener);
    let (c, s) = echo_until_decided(&client, &server, 100);
    assert!(c.starts_with("tcp") && s.starts_with("tcp"), "small echoes: client {c}; server {s}");
    assert!(c.contains("hadronio.sharedUpgradeBytes") || s.contains("hadronio.sharedUpgradeBytes"), "client {c}; server {s}");
    // Decided for good: plain reads and writes go on.
    let (c, s) = echo_until_decided(&client, &server, 100);
    assert!(c.starts_with("tcp") && s.starts_with("tcp"), "client {c}; server {s}");

    let (bulk_client, bulk_server) = pair(&listener);
    let (c, s) = echo_until_decided(&bulk_client, &bulk_server, 64 * 1024);
    assert!(c.starts_with("ucx") && s.starts_with("ucx"), "64 KiB echoes: client {c}; server {s}");

    for conn in [&client, &server, &bulk_client, &bulk_server] {
        conn.close();
    }
    listener.close();
}
