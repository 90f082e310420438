//! The negotiation and the stream logic together, over the simulated TCP of `sim` and a fake UCX
//! channel: every pairing a deployment meets (hadroNIO or plain on either end, echo servers,
//! banners, secrets, failed probes), with random arrival steps and partial sends, checking that
//! each application reads exactly the bytes the other one wrote.

use std::time::{Duration, Instant};

use super::sim::{against_plain, pattern, policy, run_open, run_pair, run_server_short, run_short, Net, SimWire};
use super::{read, Failure, RxState, Wire, INBOX_LIMIT};
use crate::core::iov::{Cursor, Region};
use crate::core::negotiation::{Negotiation, Outcome, TcpReason, STREAM_READ};
use crate::core::peers::Peers;
use crate::core::protocol::{self, Role};

#[test]
fn two_hadronio_sides_upgrade_and_deliver_every_byte() {
    for seed in 0..200 {
        let (mut client, mut server) = run_pair(seed, policy(Role::Client, None, 11), policy(Role::Server, None, 22), (20_000, 15_000), false);
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert_eq!(client.neg.path(), "ucx", "seed {seed}");
        assert_eq!(server.neg.path(), "ucx", "seed {seed}");
        // What the client learned of its server (once), for its next connections to it.
        assert_eq!(client.neg.take_outcome(), Some(Outcome::Upgrading), "seed {seed}");
        assert_eq!(client.neg.take_outcome(), None, "seed {seed}");
        assert_eq!(server.neg.take_outcome(), None, "seed {seed}");
        assert!(server.received == pattern(20_000, 1), "seed {seed}: server got {} bytes", server.received.len());
        assert!(client.received == pattern(15_000, 2), "seed {seed}: client got {} bytes", client.received.len());
    }
}

#[test]
fn a_client_that_writes_once_upgrades_when_its_mark_delay_passes_and_a_stream_comes() {
    for seed in 0..50 {
        let mut delayed = policy(Role::Client, None, 11);
        delayed.mark_delay = Duration::from_millis(5);
        // One byte: a single write, so only the delay can bring the mark, with a stream to read.
        let streamed = STREAM_READ as usize + 20_000;
        let (client, server) = run_pair(seed, delayed, policy(Role::Server, None, 22), (1, streamed), false);
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert_eq!(client.neg.path(), "ucx", "seed {seed}");
        assert_eq!(server.neg.path(), "ucx", "seed {seed}");
        assert!(server.received == pattern(1, 1) && client.received == pattern(streamed, 2), "seed {seed}");
    }
}

#[test]
fn a_client_that_wrote_once_and_got_nothing_back_marks_after_a_while() {
    for seed in 0..20 {
        let mut delayed = policy(Role::Client, None, 11);
        delayed.mark_delay = Duration::from_millis(5);
        // The server holds its answer (as one with a secret holds it until the upgrade).
        // 300 ms of simulated time: the answer may still come.
        let (client, _) = run_open(seed, delayed.clone(), policy(Role::Server, None, 22), (1, 0), 30_000);
        assert!(!client.neg.framed(), "seed {seed}: the mark went before 64 times the delay");
        // 340 ms: past 64 times the delay.
        let (client, server) = run_open(seed, delayed, policy(Role::Server, None, 22), (1, 0), 34_000);
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert!(client.neg.framed(), "seed {seed}: no mark after the delay ({})", client.neg.path());
    }
}

#[test]
fn a_client_that_wrote_once_and_got_its_answer_stays_on_tcp_while_it_waits() {
    for seed in 0..20 {
        let mut delayed = policy(Role::Client, None, 11);
        delayed.mark_delay = Duration::from_millis(5);
        // One request, a 15,000-byte answer, then both wait: 400 ms of simulated time, past the
        // last look for a stream (64 times the delay).
        let (client, server) = run_open(seed, delayed, policy(Role::Server, None, 22), (1, 15_000), 40_000);
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert!(server.received == pattern(1, 1) && client.received == pattern(15_000, 2), "seed {seed}");
        assert!(!client.neg.framed(), "seed {seed}: the client sent its mark ({})", client.neg.path());
        assert_eq!(client.neg.path(), "tcp (not upgraded yet)", "seed {seed}");
        assert_eq!(client.neg.deadline(), None, "seed {seed}: an idle connection still asks for timers");
    }
}

#[test]
fn a_look_for_a_stream_that_finds_none_reports_nothing_to_wake_for() {
    for seed in 0..20 {
        let mut delayed = policy(Role::Client, None, 11);
        delayed.mark_delay = Duration::from_millis(5);
        // 30 ms: the first looks are behind, the last ones (to 320 ms) ahead.
        let (mut client, _) = run_open(seed, delayed, policy(Role::Server, None, 22), (1, 15_000), 3_000);
        let mut looks = 0;
        while let Some(at) = client.neg.deadline() {
            // The connection's waiters and selectors are woken only when a time changes something.
            assert_eq!(client.neg.on_timeout(at).ok(), Some(false), "seed {seed}: look {looks}");
            looks += 1;
            assert!(looks < 10, "seed {seed}: the looks do not end");
        }
        assert!(looks >= 2 && !client.neg.framed(), "seed {seed}: {looks} looks, path {}", client.neg.path());
    }
}

#[test]
fn a_connection_per_request_stays_plain_while_the_mark_waits() {
    for seed in 0..100 {
        let mut delayed = policy(Role::Client, None, 11);
        delayed.mark_delay = Duration::from_secs(1);
        let (client, server) = run_short(seed, delayed, policy(Role::Server, None, 22), (1, 700));
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert!(!client.neg.framed(), "seed {seed}: the client sent its mark ({})", client.neg.path());
        assert!(!server.neg.framed(), "seed {seed}: the server sent its mark ({})", server.neg.path());
        assert!(server.received == pattern(1, 1) && client.received == pattern(700, 2), "seed {seed}");
        // Without the delay the same exchange starts the upgrade.
        let (client, _) = run_short(seed, policy(Role::Client, None, 11), policy(Role::Server, None, 22), (1, 700));
        assert!(client.neg.framed() || client.neg.path() != "tcp (not upgraded yet)", "seed {seed}: {}", client.neg.path());
    }
}

#[test]
fn a_client_whose_server_closed_while_its_mark_waited_stays_plain() {
    for seed in 0..100 {
        let mut delayed = policy(Role::Client, None, 11);
        delayed.mark_delay = Duration::from_millis(50);
        // The client writes once (its offer goes with it) and stays until the upgrade is decided;
        // the server answers, writes and closes.
        let (mut client, server) = run_server_short(seed, delayed, policy(Role::Server, None, 22), (1, 900));
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert!(!client.neg.framed(), "seed {seed}: the client sent its mark after the server's end ({})", client.neg.path());
        assert_eq!(client.received, pattern(900, 2), "seed {seed}");
        assert_eq!(server.received, pattern(1, 1), "seed {seed}");
        assert_eq!(client.neg.path(), "tcp (the peer closed before the upgrade)", "seed {seed}");
        assert_eq!(client.neg.take_outcome(), Some(Outcome::Short), "seed {seed}");
    }
}

#[test]
fn a_client_that_only_reads_offers_nothing() {
    // A plain server that writes and closes without reading must not find an offer unread (its
    // kernel would reset the connection instead of ending it): a client offers with its first
    // write, and one that writes nothing offers nothing.
    for seed in 0..100 {
        let (mut client, server) = run_short(seed, policy(Role::Client, None, 11), policy(Role::Server, None, 22), (0, 900));
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert_eq!(client.received, pattern(900, 2), "seed {seed}");
        // The server saw the client's end and nothing before it: no offer.
        assert_eq!(server.neg.path(), "tcp (the peer closed before speaking)", "seed {seed}");
        assert_eq!(client.neg.take_outcome(), None, "seed {seed}: it never offered");
    }
}

#[test]
fn a_path_that_does_not_carry_the_probe_stays_on_tcp() {
    for seed in 0..50 {
        let (client, server) = run_pair(seed, policy(Role::Client, None, 11), policy(Role::Server, None, 22), (30_000, 5_000), true);
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}");
        let paths = format!("{} / {}", client.neg.path(), server.neg.path());
        assert!(paths.contains("did not carry a probe round trip"), "seed {seed}: {paths}");
        assert!(client.neg.path().starts_with("tcp") && server.neg.path().starts_with("tcp"), "seed {seed}: {paths}");
        assert!(server.received == pattern(30_000, 1), "seed {seed}");
        assert!(client.received == pattern(5_000, 2), "seed {seed}");
    }
}

#[test]
fn matching_secrets_upgrade() {
    for seed in 0..50 {
        let (client, server) =
            run_pair(seed, policy(Role::Client, Some(b"s3"), 11), policy(Role::Server, Some(b"s3"), 22), (9_000, 9_000), false);
        assert!(client.failed.is_none() && server.failed.is_none(), "seed {seed}: {:?} {:?}", client.failed, server.failed);
        assert_eq!(client.neg.path(), "ucx");
        assert!(server.received == pattern(9_000, 1) && client.received == pattern(9_000, 2), "seed {seed}");
    }
}

#[test]
fn a_wrong_secret_delivers_nothing_and_fails_both_ends() {
    for seed in 0..50 {
        let (client, server) =
            run_pair(seed, policy(Role::Client, Some(b"one"), 11), policy(Role::Server, Some(b"two"), 22), (9_000, 9_000), false);
        assert!(server.received.is_empty(), "seed {seed}: the server application read {} bytes", server.received.len());
        assert!(client.received.is_empty(), "seed {seed}: the client application read {} bytes", client.received.len());
        let server_error = server.failed.expect("server fails");
        let client_error = client.failed.expect("client fails");
        assert!(server_error.message.contains("authentication failed"), "{server_error}");
        assert!(client_error.message.contains("authentication failed"), "{client_error}");
    }
}

#[test]
fn a_secret_on_one_side_only_fails_both_ends() {
    for seed in 0..20 {
        let (client, server) = run_pair(seed, policy(Role::Client, None, 11), policy(Role::Server, Some(b"s"), 22), (4_000, 4_000), false);
        assert!(server.received.is_empty(), "seed {seed}");
        assert!(client.failed.is_some() && server.failed.is_some(), "seed {seed}: client {:?}, server {:?}", client.failed, server.failed);
    }
}

/// A client without a secret whose first writes are more than a server that requires one holds
/// before the client's mark: the server's answer says that it requires a secret, and both ends
/// fail with an error that names it, long before the server's authentication wait runs out.
#[test]
fn a_client_without_the_secret_that_writes_much_fails_both_ends_at_once() {
    for seed in 0..12 {
        for length in [3_000, INBOX_LIMIT + 50_000] {
            let (client, server) = run_pair(seed, policy(Role::Client, None, 11), policy(Role::Server, Some(b"s"), 22), (length, 0), false);
            assert!(server.received.is_empty(), "seed {seed}, {length} bytes");
            let (Some(client_error), Some(server_error)) = (&client.failed, &server.failed) else {
                panic!("seed {seed}, {length} bytes: client {:?}, server {:?}", client.failed, server.failed);
            };
            assert!(client_error.message.contains("the peer requires a shared secret"), "seed {seed}, {length} bytes: {client_error}");
            assert!(
                server_error.message.contains("the peer has no shared secret"),
                "seed {seed}, {length} bytes: {server_error}"
            );
        }
    }
}

/// A client that writes on without reading the answer to its offer (one without the secret does
/// until it reads it) fills what a server that requires a secret holds of its bytes before its
/// mark: the server fails at once, naming the secret, rather than wait for a proof that cannot
/// come behind bytes it does not read.
#[test]
fn a_server_that_requires_a_secret_fails_when_what_it_holds_fills() {
    let net = Net::new(1);
    net.borrow_mut().step = 0;
    net.borrow_mut().partial = false;
    let (client, server) = SimWire::pair(&net);
    let mut neg = Negotiation::new(policy(Role::Server, Some(b"s"), 11));
    let mut rx = RxState::default();
    assert!(client.send_urgent(crate::core::protocol::URGENT_OFFER).unwrap());
    let data = pattern(INBOX_LIMIT + 10_000, 1);
    let mut sent = 0;
    while sent < data.len() {
        sent += client.send(&data[sent..]).unwrap();
    }
    let mut buf = [0u8; 4096];
    let regions = [Region::of(&mut buf)];
    let now = Instant::now();
    for _ in 0..1_000 {
        let mut dst = Cursor::new(&regions);
        match read(&mut neg, &server, &mut rx, Some(&mut dst), &|| now) {
            Ok(got) => assert_eq!(got.delivered, 0, "a byte of the unproven client was delivered"),
            Err(Failure::Negotiation(e)) => {
                assert!(e.message.contains("the peer has no shared secret"), "{e}");
                return;
            }
            Err(Failure::Io(e)) => panic!("simulated socket failed: {e}"),
        }
    }
    panic!("the server still waits, holding {} bytes", rx.inbox.len());
}

/// A client without the secret fails at the server's ACCEPT-AUTH and may close with a reset: the
/// server's error then names the secret, not the reset. Before the client wrote a byte, a reset
/// stays a reset.
#[test]
fn a_reset_from_a_client_that_wrote_without_the_secret_names_the_secret() {
    let now = Instant::now();
    let mut neg = Negotiation::new(policy(Role::Server, Some(b"s"), 11));
    neg.on_mark(crate::core::protocol::URGENT_OFFER, true, now).unwrap();
    assert!(neg.on_reset().is_ok(), "no byte came: the reset stands");
    neg.on_raw(100);
    let Err(error) = neg.on_reset() else { panic!("the reset of a client that wrote without the secret passed") };
    assert!(error.message.contains("the peer has no shared secret"), "{error}");
}

#[test]
fn a_side_without_upgrade_talks_plain_tcp_to_a_hadronio_side() {
    for seed in 0..100 {
        let mut no = policy(Role::Client, None, 11);
        no.upgrade = Err((TcpReason::Rule, "hadronio.transport=tcp".into()));
        let (client, server) = run_pair(seed, no, policy(Role::Server, None, 22), (12_000, 7_000), false);
        assert_eq!(server.neg.path(), "tcp (the peer does not speak hadroNIO)", "seed {seed}");
        assert!(server.received == pattern(12_000, 1) && client.received == pattern(7_000, 2), "seed {seed}");
        let mut no = policy(Role::Server, None, 22);
        no.upgrade = Err((TcpReason::Rule, "hadronio.transport=tcp".into()));
        let (client, server) = run_pair(seed, policy(Role::Client, None, 11), no, (12_000, 7_000), false);
        assert!(client.neg.path().starts_with("tcp"), "seed {seed}");
        assert!(server.received == pattern(12_000, 1) && client.received == pattern(7_000, 2), "seed {seed}");
    }
}

#[test]
fn a_plain_server_gets_exactly_the_application_bytes() {
    let mut learned = 0;
    for seed in 0..100 {
        let (mut client, server_got) = against_plain(seed, Role::Client, None, 30_000, pattern(8_000, 9), false);
        assert!(server_got == pattern(30_000, 1), "seed {seed}: the plain server got {} bytes", server_got.len());
        assert!(client.received == pattern(8_000, 9), "seed {seed}");
        assert!(client.neg.path().starts_with("tcp"), "{}", client.neg.path());
        // The server's end, or the offer's wait, tells the client that the server is plain; a
        // client that shut its output down first stopped looking for the answer.
        if !client.neg.path().contains("output shut down") {
            assert_eq!(client.neg.take_outcome(), Some(Outcome::Plain), "seed {seed}: {}", client.neg.path());
            learned += 1;
        }
    }
    assert!(learned > 0, "no seed let the client see the plain server's end");
}

#[test]
fn an_answer_after_the_offer_wait_makes_the_next_connections_offer_again() {
    let server: std::net::SocketAddr = "10.0.0.1:7000".parse().unwrap();
    let peers = Peers::new();
    let start = Instant::now();
    // A hadroNIO server too busy to answer two offers in time (a burst of connections, a JVM
    // still starting): the waits take it for a plain one.
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut neg = Negotiation::new(policy(Role::Client, None, 11));
        neg.on_connected(start);
        neg.before_write(|| start);
        let wait = neg.deadline().expect("the offer's wait");
        assert_eq!(neg.on_timeout(wait).ok(), Some(true));
        let outcome = neg.take_outcome().expect("the wait's outcome");
        assert_eq!(outcome, Outcome::Plain);
        peers.learn(server, outcome, wait);
        slow.push((neg, wait));
    }
    assert!(peers.advice(server, start).is_err(), "two unanswered offers make a plain server");
    // The answers come after all, at their offsets: the connections upgrade, and so does what
    // the process knows of the server.
    for (neg, wait) in &mut slow {
        let later = *wait + Duration::from_millis(300);
        neg.on_mark(protocol::URGENT_ACCEPT, true, later).unwrap();
        neg.on_write(later);
        assert!(neg.framed(), "{}", neg.path());
        let outcome = neg.take_outcome();
        assert_eq!(outcome, Some(Outcome::Upgrading), "{}", neg.path());
        peers.learn(server, outcome.unwrap(), later);
    }
    let now = start + Duration::from_secs(1);
    assert!((0..20).all(|_| peers.advice(server, now).is_ok()), "new connections to a server that answered still skip the offer");
}

#[test]
fn a_plain_echo_server_echoes_exactly_the_application_bytes() {
    for seed in 0..100 {
        let (client, echoed) = against_plain(seed, Role::Client, None, 25_000, Vec::new(), true);
        assert!(echoed == pattern(25_000, 1), "seed {seed}");
        assert!(client.received == pattern(25_000, 1), "seed {seed}: client read back {} bytes", client.received.len());
        assert!(!client.neg.upgraded());
    }
}

#[test]
fn a_plain_server_that_speaks_first_is_served_at_once() {
    for seed in 0..100 {
        let banner = b"220 mail.example.org ESMTP ready\r\n".to_vec();
        let (client, server_got) = against_plain(seed, Role::Client, None, 500, banner.clone(), false);
        assert_eq!(client.received, banner, "seed {seed}");
        assert!(server_got == pattern(500, 1), "seed {seed}");
    }
}

#[test]
fn a_plain_client_of_a_hadronio_server_that_speaks_first() {
    for seed in 0..100 {
        let (server, client_got) = against_plain(seed, Role::Server, None, 40_000, pattern(3_000, 4), false);
        assert!(client_got == pattern(40_000, 1), "seed {seed}: the plain client got {} bytes", client_got.len());
        assert!(server.received == pattern(3_000, 4), "seed {seed}");
        assert_eq!(server.neg.path(), "tcp (the peer does not speak hadroNIO)", "seed {seed}");
    }
}

/// A client wire and a hadroNIO server's side of a connection on a simulated network that
/// delivers every byte at once.
fn server_of_a_plain_client(seed: u64) -> (SimWire, SimWire, Negotiation, RxState) {
    let net = Net::new(seed);
    net.borrow_mut().step = 0;
    net.borrow_mut().partial = false;
    let (client, server) = SimWire::pair(&net);
    (client, server, Negotiation::new(policy(Role::Server, None, 10 + seed)), RxState::default())
}

#[test]
fn a_plain_clients_first_bytes_cost_a_hadronio_server_no_look_at_marks() {
    // One look (a `poll` on a socket) tells ordinary bytes without an urgent byte from an offer,
    // and nothing from something: a server peeks at nothing and asks for no mark on the way to a
    // plain client's first bytes, before or after they came.
    let (client, server, mut neg, mut rx) = server_of_a_plain_client(1);
    let mut buf = [0u8; 64];
    let regions = [Region::of(&mut buf)];
    let now = Instant::now();
    let mut dst = Cursor::new(&regions);
    let nothing = read(&mut neg, &server, &mut rx, Some(&mut dst), &|| now).unwrap_or_else(|_| panic!("read failed"));
    assert_eq!((nothing.delivered, nothing.blocked), (0, true));
    let request = b"GET / HTTP/1.1\r\n\r\n";
    assert_eq!(client.send(request).unwrap(), request.len());
    let mut dst = Cursor::new(&regions);
    let got = read(&mut neg, &server, &mut rx, Some(&mut dst), &|| now).unwrap_or_else(|_| panic!("read failed"));
    assert_eq!(&buf[..got.delivered], request);
    assert_eq!(neg.path(), "tcp (the peer does not speak hadroNIO)");
    assert_eq!(server.mark_looks(), 0);
}

#[test]
fn reads_of_a_connection_that_stays_plain_do_not_ask_for_the_time() {
    // The clock is read where the protocol looks at it (an offer's wait, a mark, a control
    // frame); a plain connection's reads are ordinary receives, as with the kernel's channels.
    let (client, server, mut neg, mut rx) = server_of_a_plain_client(2);
    let now = Instant::now();
    let no_clock = || -> Instant { panic!("a plain connection's read asked for the time") };
    let mut receive = |neg: &mut Negotiation, clock: &dyn Fn() -> Instant| {
        let mut buf = [0u8; 64];
        let regions = [Region::of(&mut buf)];
        let mut dst = Cursor::new(&regions);
        let got = read(neg, &server, &mut rx, Some(&mut dst), clock).unwrap_or_else(|_| panic!("read failed"));
        (buf[..got.delivered].to_vec(), got.blocked)
    };
    assert_eq!(client.send(b"first").unwrap(), 5);
    assert_eq!(receive(&mut neg, &|| now).0, b"first");
    assert!(neg.settled_plain(), "{}", neg.path());
    assert_eq!(receive(&mut neg, &no_clock), (Vec::new(), true));
    assert_eq!(client.send(b"second").unwrap(), 6);
    assert_eq!(receive(&mut neg, &no_clock).0, b"second");
}

#[test]
fn a_secret_costs_a_plain_server_one_offer_wait() {
    for seed in 0..30 {
        let (mut client, server_got) = against_plain(seed, Role::Client, Some(b"s"), 5_000, pattern(2_000, 3), false);
        assert!(server_got == pattern(5_000, 1), "seed {seed}");
        assert!(client.received == pattern(2_000, 3), "seed {seed}");
        assert!(client.neg.path().contains("no answer to the hadroNIO offer"), "{}", client.neg.path());
        assert_eq!(client.neg.take_outcome(), Some(Outcome::Plain), "seed {seed}");
    }
}
