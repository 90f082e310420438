//! A closed blocking connection's worker is kept and taken by the next one, which then reuses
//! the peer's endpoint as well.

mod common;

use hadronio::config::settings;
use hadronio::core::hub::Hub;
use hadronio::core::listener::Listener;
use common::{close_pair, connected_to};

#[test]
fn closed_channels_workers_are_reused() {
    let hub = Hub::new(settings(), true).unwrap();
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse().unwrap(), 16).unwrap();
    let mut addresses = Vec::new();
    for round in 0..5u8 {
        let (client, server) = connected_to(&hub, &listener, round);
        addresses.push(client.hub().unwrap().main_lane().unwrap().worker.address().to_vec());
        assert_eq!(hub.main_lane().unwrap().endpoints.len(), 1, "round {round}: the server needs one endpoint only");
        let client_hub = std::sync::Arc::downgrade(client.hub().unwrap());
        close_pair(&client, &server);
        drop((client, server));
        // The closed client lingers until the server reported what it consumed; then its hub
        // goes and its worker becomes a spare.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while client_hub.upgrade().is_some() {
            assert!(std::time::Instant::now() < deadline, "round {round}: the closed client's hub stays");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    assert!(addresses.windows(2).all(|w| w[0] == w[1]), "every client connection used the same worker");
    listener.close();
}
