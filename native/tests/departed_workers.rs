//! A worker being destroyed says goodbye: its peers close their endpoints to it. Spare workers
//! are off in this process, so every closed blocking connection destroys its worker.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use hadronio::config::settings;
use hadronio::config::{Settings, Workers};
use hadronio::core::hub::Hub;
use hadronio::core::listener::Listener;
use common::{close_pair, connected_to};

#[test]
fn endpoints_to_departed_workers_are_closed() {
    assert!(Settings::install(Settings { workers: Workers { spare: 0, ..Settings::default().workers }, ..Settings::default() }));
    let hub = Hub::new(settings(), true).unwrap();
    let listener = Listener::open(settings()).unwrap();
    listener.bind(&"127.0.0.1:0".parse().unwrap(), 16).unwrap();
    for round in 0..3u8 {
        // The client's connection has a worker of its own, destroyed when the connection goes.
        let (client, server) = connected_to(&hub, &listener, round);
        assert_eq!(hub.main_lane().unwrap().endpoints.len(), 1, "round {round}: one endpoint to the client's worker");
        close_pair(&client, &server);
        drop((client, server));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !hub.main_lane().unwrap().endpoints.is_empty() {
            assert!(Instant::now() < deadline, "round {round}: the endpoint to the departed worker is still open");
            hub.poll_now();
            thread::sleep(Duration::from_millis(1));
        }
    }
    listener.close();
}
