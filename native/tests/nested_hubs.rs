//! A channel registered with two selectors (one for OP_READ, one for OP_WRITE, as applications
//! do that read and write from different threads) has its socket in the first selector's epoll
//! set; the second selector waits on that set through its own (an edge-triggered entry: it says
//! once that the nested set has events). A socket event that arrives right after the nested hub
//! last dispatched its events must still end the second selector's wait: each round here sends
//! one byte within microseconds of such a dispatch, and the select that follows must see it.
//! (A process of its own: the settings are process-wide.)

mod common;

use std::time::{Duration, Instant};

use hadronio::config::{settings, Settings, Upgrade};
use hadronio::core::readiness::OP_READ;
use hadronio::core::selector::{Selector, Target};
use common::{connected_pair, region};

const ROUNDS: usize = 2_000;

#[test]
fn a_second_selector_sees_every_event_of_the_nested_hub() {
    // Plain TCP and no busy-polling: the selecting thread goes to sleep at once, so that an event
    // the nested hub's set holds back would keep it asleep.
    assert!(Settings::install(Settings { upgrade: Upgrade { ucx: false, ..Settings::default().upgrade }, spin_ns: 0, ..Settings::default() }));
    let (client, server) = connected_pair();
    let first = Selector::open(settings()).unwrap();
    let second = Selector::open(settings()).unwrap();
    // The keys live as long as the registrations (the channel holds them weakly).
    let _keys = [
        first.register(Target::Conn(server.clone()), 0, OP_READ).unwrap(),
        second.register(Target::Conn(server.clone()), 7, OP_READ).unwrap(),
    ];
    let mut buf = [0u8; 16];
    // A new connection counts as readable until a read finds its socket empty.
    assert_eq!(server.read(&region(&mut buf), false, None).unwrap(), 0);
    let mut ready = [0i32; 4];
    let limit = Duration::from_secs(1);
    for round in 0..ROUNDS {
        // The nested hub dispatches its socket events (none are pending) ...
        assert_eq!(first.select(Some(Duration::ZERO), &mut ready), 0, "round {round}: nothing was sent yet");
        // ... and an event follows at once.
        let byte = [round as u8];
        assert_eq!(client.write(&region(&mut byte.clone()), true).unwrap(), 1);
        let start = Instant::now();
        let selected = second.select(Some(limit), &mut ready);
        // Not a measurement: the byte is there within microseconds; a select that lasts its whole
        // timeout slept through the event (its end finds the byte when it looks again).
        assert!(start.elapsed() < limit, "round {round}: the select slept until its timeout");
        assert_eq!(selected, 1, "round {round}: the byte sent was not selected");
        assert_eq!(&ready[..2], &[7, OP_READ as i32], "round {round}");
        assert_eq!(server.read(&region(&mut buf), false, None).unwrap(), 1, "round {round}");
        assert_eq!(buf[0], round as u8, "round {round}");
        assert_eq!(server.read(&region(&mut buf), false, None).unwrap(), 0, "round {round}: one byte was sent");
    }
    client.close();
    server.close();
}
