//! What this process's clients learned about the servers they connected to, so that a new
//! connection to the same address skips an offer that would only cost: to a plain server (it
//! answered none of the last offers), or where every recent connection ended before its upgrade
//! was due (a connection per request: the offer, its answer and the strict reads until the close
//! are all the upgrade ever did there). Every [`SAMPLE_EVERY`]th connection to such an address
//! still offers, so that a server that changed is found again; one that goes ahead with its
//! upgrade clears the record. Each sample that finds the address as recorded doubles the gap to
//! the next one, up to [`SAMPLE_MAX`]: an offer that goes no further costs both processes about
//! 175 µs of CPU (its answer, strict reads, a hub for the client's socket), a tenth of a
//! connection per request's own cost at one in 16. What is learned stays for [`REMEMBER`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::negotiation::{Outcome, TcpReason, Why};

/// Unanswered offers in a row after which an address counts as a plain server.
const PLAIN_AFTER: u32 = 2;

/// Connections in a row that ended before their upgrade after which an address counts as one
/// served a connection per request.
const SHORT_AFTER: u32 = 8;

/// While an address counts as either, one connection in this many still offers at first.
pub const SAMPLE_EVERY: u32 = 16;

/// The widest gap between samples: one connection in this many.
pub const SAMPLE_MAX: u32 = 256;

/// How long a record lasts without news.
const REMEMBER: Duration = Duration::from_secs(60);

/// Most addresses remembered; beyond that the oldest records go.
const CAPACITY: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Record {
    /// Offers in a row that the server did not answer.
    plain: u32,
    /// Answered connections in a row that ended before their upgrade.
    short: u32,
    /// Connections that skipped the offer since the last one that made it.
    skipped: u32,
    /// Connections that skip the offer before the next one makes it.
    gap: u32,
    touched: Instant,
}

impl Record {
    /// What the record says of the address, once enough connections in a row showed it.
    fn says(&self) -> Option<Outcome> {
        if self.plain >= PLAIN_AFTER {
            Some(Outcome::Plain)
        } else if self.short >= SHORT_AFTER {
            Some(Outcome::Short)
        } else {
            None
        }
    }
}

/// The records, by server address.
pub struct Peers {
    records: Mutex<HashMap<SocketAddr, Record>>,
}

/// The process's records.
pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(Peers::new)
}

impl Peers {
    pub fn new() -> Peers {
        Peers { records: Mutex::new(HashMap::new()) }
    }

    /// Whether a new connection to `server` should offer the upgrade: `Err` says why not.
    pub fn advice(&self, server: SocketAddr, now: Instant) -> Result<(), (TcpReason, Why)> {
        let mut records = self.records.lock();
        let Some(record) = records.get_mut(&server) else { return Ok(()) };
        if now.saturating_duration_since(record.touched) >= REMEMBER {
            records.remove(&server);
            return Ok(());
        }
        let reason = match record.says() {
            Some(Outcome::Plain) => TcpReason::PlainPeer,
            Some(_) => TcpReason::Other,
            None => return Ok(()),
        };
        record.skipped += 1;
        if record.skipped >= record.gap {
            // This one offers: it tells whether the server is still what the record says.
            record.skipped = 0;
            return Ok(());
        }
        let why = if reason == TcpReason::PlainPeer {
            Why::Learned { plain: true, count: record.plain, gap: record.gap }
        } else {
            Why::Learned { plain: false, count: record.short, gap: record.gap }
        };
        Err((reason, why))
    }

    /// What a connection to `server` that offered showed.
    pub fn learn(&self, server: SocketAddr, outcome: Outcome, now: Instant) {
        let mut records = self.records.lock();
        if outcome == Outcome::Upgrading {
            records.remove(&server);
            return;
        }
        if records.len() >= CAPACITY && !records.contains_key(&server) {
            records.retain(|_, r| now.saturating_duration_since(r.touched) < REMEMBER);
            if records.len() >= CAPACITY {
                // Still full of fresh records: the oldest go.
                let mut ages: Vec<Instant> = records.values().map(|r| r.touched).collect();
                ages.sort_unstable();
                let cut = ages[CAPACITY / 4];
                records.retain(|_, r| r.touched > cut);
            }
        }
        let record = records.entry(server).or_insert(Record { plain: 0, short: 0, skipped: 0, gap: SAMPLE_EVERY, touched: now });
        record.touched = now;
        // An outcome that finds the address as recorded (a sample's, as a rule) widens the gap;
        // one that changes what the record says starts it over.
        let settled = record.says() == Some(outcome);
        let (same, other) = match outcome {
            Outcome::Plain => (&mut record.plain, &mut record.short),
            Outcome::Short => (&mut record.short, &mut record.plain),
            Outcome::Upgrading => return,
        };
        *same = same.saturating_add(1);
        *other = 0;
        record.gap = if settled { (record.gap * 2).min(SAMPLE_MAX) } else { SAMPLE_EVERY };
    }
}

impl Default for Peers {
    fn default() -> Peers {
        Peers::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// A record of `n` connections to `server` in a row that showed `outcome`.
    fn learned(n: u32, server: SocketAddr, outcome: Outcome, now: Instant) -> Peers {
        let peers = Peers::new();
        for _ in 0..n {
            peers.learn(server, outcome, now);
        }
        peers
    }

    /// How many of `n` new connections to `server` offer.
    fn offers(peers: &Peers, server: SocketAddr, n: u32, now: Instant) -> u32 {
        (0..n).filter(|_| peers.advice(server, now).is_ok()).count() as u32
    }

    #[test]
    fn a_server_that_answers_none_of_two_offers_is_offered_one_connection_in_sixteen() {
        let peers = Peers::new();
        let now = Instant::now();
        peers.learn(addr(1), Outcome::Plain, now);
        assert!(peers.advice(addr(1), now).is_ok(), "one unanswered offer proves little");
        peers.learn(addr(1), Outcome::Plain, now);
        let advice = peers.advice(addr(1), now).unwrap_err();
        assert_eq!(advice.0, TcpReason::PlainPeer);
        assert!(advice.1.to_string().contains("2 offers"), "{}", advice.1);
        assert_eq!(offers(&peers, addr(1), SAMPLE_EVERY * 4, now), 4);
        assert!(peers.advice(addr(2), now).is_ok(), "another address is not affected");
    }

    #[test]
    fn each_sample_that_finds_the_address_as_recorded_doubles_the_gap_to_the_next() {
        let now = Instant::now();
        let peers = learned(SHORT_AFTER, addr(1), Outcome::Short, now);
        let mut gaps = Vec::new();
        for _ in 0..7 {
            let mut skipped = 0;
            while peers.advice(addr(1), now).is_err() {
                skipped += 1;
            }
            gaps.push(skipped + 1);
            peers.learn(addr(1), Outcome::Short, now);
        }
        assert_eq!(gaps, [16, 32, 64, 128, 256, 256, 256]);
        assert!(peers.advice(addr(1), now).unwrap_err().1.to_string().contains("one connection in 256"));
        // The next sample found a plain server: the record says something else now, and the
        // gap starts over once that is settled.
        peers.learn(addr(1), Outcome::Plain, now);
        assert_eq!(offers(&peers, addr(1), 3, now), 3, "one unanswered offer proves little");
        peers.learn(addr(1), Outcome::Plain, now);
        assert_eq!(offers(&peers, addr(1), SAMPLE_EVERY * 2, now), 2);
    }

    #[test]
    fn connections_per_request_stop_offering_until_one_upgrades() {
        let now = Instant::now();
        let peers = learned(SHORT_AFTER - 1, addr(1), Outcome::Short, now);
        assert_eq!(offers(&peers, addr(1), 10, now), 10);
        peers.learn(addr(1), Outcome::Short, now);
        assert_eq!(offers(&peers, addr(1), SAMPLE_EVERY, now), 1);
        // The sample went ahead with its upgrade: the address is offered again.
        peers.learn(addr(1), Outcome::Upgrading, now);
        assert_eq!(offers(&peers, addr(1), 10, now), 10);
    }

    #[test]
    fn a_mixed_record_starts_over() {
        let now = Instant::now();
        let peers = learned(SHORT_AFTER - 1, addr(1), Outcome::Short, now);
        peers.learn(addr(1), Outcome::Plain, now);
        peers.learn(addr(1), Outcome::Short, now);
        assert_eq!(offers(&peers, addr(1), 10, now), 10);
    }

    #[test]
    fn records_are_forgotten_after_a_while() {
        let now = Instant::now();
        let peers = learned(PLAIN_AFTER, addr(1), Outcome::Plain, now);
        assert!(peers.advice(addr(1), now + Duration::from_secs(1)).is_err());
        assert!(peers.advice(addr(1), now + REMEMBER).is_ok());
        assert!(peers.advice(addr(1), now + Duration::from_secs(1)).is_ok(), "the record is gone");
    }

    #[test]
    fn the_records_stay_bounded() {
        let peers = Peers::new();
        let now = Instant::now();
        for i in 0..(CAPACITY as u32 + 100) {
            let server = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 80));
            peers.learn(server, Outcome::Plain, now + Duration::from_micros(u64::from(i)));
        }
        assert!(peers.records.lock().len() <= CAPACITY);
    }
}
