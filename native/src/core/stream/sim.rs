//! An in-memory TCP connection with Linux's rules for urgent data (`SO_OOBINLINE` off), for tests
//! of the stream logic without sockets. Bytes travel in flight and arrive in steps drawn from a
//! seeded generator, one step on every call of either side, so that a mark can arrive between any
//! two calls of the reading side; sends take random parts of what they are given.
//!
//! Also two-sided runners ([`run_pair`], [`against_plain`]) that drive negotiations the way a
//! connection does, with a fake UCX channel for probes and switched data; the unit tests and the
//! `negotiation` fuzz target use them.
//!
//! Modelled as `tcp_recvmsg`/`tcp_check_urg` behave: one urgent mark per direction; an ordinary
//! read stops before the mark once it read something, and one that starts at the mark skips the
//! urgent byte; the urgent byte can be read out of band once; a newer mark makes the kernel skip
//! the older byte if the reader sits right at it, and otherwise leaves the older byte in the
//! stream as an ordinary byte.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use crate::core::stream::{Look, Wire};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::core::auth::Secret;
use crate::core::error::Error;
use crate::core::iov::{Cursor, Region};
use crate::core::negotiation::{Action, Negotiation, Policy, WriteMode};
use crate::core::protocol::{Addr, Identity, Role};
use crate::core::stream::{flush, read, release, urgent, write, Failure, RxState, TxState};


/// A small deterministic generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 if `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

#[derive(Default)]
struct Urgent {
    offset: usize,
    taken: bool,
}

/// One direction of the connection.
#[derive(Default)]
struct Direction {
    bytes: Vec<u8>,
    /// Bytes the receiver's kernel has.
    arrived: usize,
    /// The receiver's read position.
    read: usize,
    /// The urgent mark the receiver's kernel knows.
    urgent: Option<Urgent>,
    /// Offsets of urgent bytes written but not arrived yet.
    in_flight: Vec<usize>,
    /// The writer shut down after `bytes`.
    closed: bool,
    /// The receiver shut down and would close its socket at once, as a plain one: an urgent
    /// byte reaching it would be answered with a reset.
    quiet: bool,
}

impl Direction {
    fn arrive(&mut self, n: usize) {
        self.arrived = (self.arrived + n).min(self.bytes.len());
        while let Some(&offset) = self.in_flight.first() {
            if offset >= self.arrived {
                break;
            }
            self.in_flight.remove(0);
            if let Some(old) = &self.urgent {
                if old.offset >= offset {
                    continue;
                }
                if old.offset == self.read {
                    // The reader sits at the older mark: its byte is skipped.
                    self.read += 1;
                }
            }
            self.urgent = Some(Urgent { offset, taken: false });
        }
    }

    fn at_mark(&self) -> bool {
        self.urgent.as_ref().is_some_and(|u| u.offset == self.read)
    }

    fn pass_check(&mut self) {
        if self.urgent.as_ref().is_some_and(|u| u.offset < self.read) {
            self.urgent = None;
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut copied = 0;
        while copied < buf.len() {
            if self.at_mark() {
                if copied > 0 {
                    break;
                }
                if self.read >= self.arrived {
                    break;
                }
                self.read += 1;
                self.pass_check();
                continue;
            }
            let end = match &self.urgent {
                Some(u) if u.offset > self.read => u.offset.min(self.arrived),
                _ => self.arrived,
            };
            if self.read >= end {
                break;
            }
            let n = (end - self.read).min(buf.len() - copied);
            buf[copied..copied + n].copy_from_slice(&self.bytes[self.read..self.read + n]);
            self.read += n;
            copied += n;
            self.pass_check();
        }
        if copied == 0 && !buf.is_empty() {
            if self.closed && self.read >= self.bytes.len() {
                return Ok(0);
            }
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(copied)
    }

    fn peek(&self) -> io::Result<bool> {
        let start = if self.at_mark() { self.read + 1 } else { self.read };
        if start < self.arrived {
            return Ok(true);
        }
        if self.closed && self.arrived == self.bytes.len() {
            return Ok(false);
        }
        Err(io::ErrorKind::WouldBlock.into())
    }

    /// As `poll` reports it: an urgent byte that arrived and was neither read nor passed, or the
    /// writer's end (all its bytes arrived), is news of another kind than ordinary bytes.
    fn look(&self) -> Look {
        let urgent = self.urgent.as_ref().is_some_and(|u| !u.taken);
        let end = self.closed && self.arrived == self.bytes.len();
        match self.peek() {
            _ if urgent || end => Look::Other,
            Ok(true) => Look::Ordinary,
            Ok(false) => Look::Other,
            Err(_) => Look::Nothing,
        }
    }

    fn before_mark(&self) -> usize {
        match &self.urgent {
            Some(u) if u.offset >= self.read && u.offset < self.arrived => u.offset - self.read,
            _ => self.arrived - self.read,
        }
    }

    fn recv_urgent(&mut self) -> Option<u8> {
        let read = self.read;
        match &mut self.urgent {
            Some(u) if !u.taken && u.offset >= read => {
                u.taken = true;
                Some(self.bytes[u.offset])
            }
            _ => None,
        }
    }
}

/// Both directions and the generator; side 0 writes `dirs[0]`, side 1 writes `dirs[1]`.
pub struct Net {
    dirs: [Direction; 2],
    rng: Rng,
    /// Largest arrival step (0: everything arrives at once).
    pub step: usize,
    /// Whether sends take random parts and sometimes nothing.
    pub partial: bool,
    /// Per side: looks at urgent marks (peeks, mark and urgent-byte queries), each a system call
    /// on a socket.
    mark_looks: [usize; 2],
}

impl Net {
    pub fn new(seed: u64) -> Rc<RefCell<Net>> {
        Rc::new(RefCell::new(Net { dirs: Default::default(), rng: Rng::new(seed), step: 7, partial: true, mark_looks: [0; 2] }))
    }

    fn tick(&mut self) {
        for d in 0..2 {
            let n = if self.step == 0 { usize::MAX / 2 } else { self.rng.below(self.step + 1) };
            self.dirs[d].arrive(n);
        }
    }

    /// Lets everything in flight arrive.
    pub fn settle(&mut self) {
        for d in 0..2 {
            self.dirs[d].arrive(usize::MAX / 2);
        }
    }

    /// A line per direction: written, arrived, read, urgent mark.
    pub fn describe(&self) -> String {
        self.dirs
            .iter()
            .map(|d| format!("[{} written, {} arrived, {} read, urgent {:?}]", d.bytes.len(), d.arrived, d.read, d.urgent.as_ref().map(|u| (u.offset, u.taken))))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether bytes of either direction are still in flight or unread.
    pub fn busy(&self) -> bool {
        self.dirs.iter().any(|d| d.arrived < d.bytes.len())
    }
}

/// One side's view of the connection.
#[derive(Clone)]
pub struct SimWire {
    net: Rc<RefCell<Net>>,
    side: usize,
}

impl SimWire {
    pub fn pair(net: &Rc<RefCell<Net>>) -> (SimWire, SimWire) {
        (SimWire { net: net.clone(), side: 0 }, SimWire { net: net.clone(), side: 1 })
    }

    fn with<R>(&self, f: impl FnOnce(&mut Direction, &mut Direction, &mut Rng, bool) -> R) -> R {
        let mut net = self.net.borrow_mut();
        net.tick();
        let partial = net.partial;
        let Net { dirs, rng, .. } = &mut *net;
        let (a, b) = dirs.split_at_mut(1);
        let (out, inp) = if self.side == 0 { (&mut a[0], &mut b[0]) } else { (&mut b[0], &mut a[0]) };
        f(out, inp, rng, partial)
    }

    /// Looks at urgent marks this side made so far.
    pub fn mark_looks(&self) -> usize {
        self.net.borrow().mark_looks[self.side]
    }

    fn count_mark_look(&self) {
        self.net.borrow_mut().mark_looks[self.side] += 1;
    }

    /// Shuts down this side's direction (a TCP FIN after what was written).
    pub fn shutdown(&self) {
        self.with(|out, _, _, _| out.closed = true);
    }

    /// This side expects no more urgent bytes from the peer (see [`Direction::quiet`]).
    pub fn expect_quiet(&self) {
        self.with(|_, inp, _, _| inp.quiet = true);
    }
}

impl Wire for SimWire {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.with(|_, inp, _, _| inp.recv(buf))
    }

    fn peek(&self) -> io::Result<bool> {
        self.count_mark_look();
        self.with(|_, inp, _, _| inp.peek())
    }

    fn recv_urgent(&self) -> io::Result<Option<u8>> {
        self.count_mark_look();
        Ok(self.with(|_, inp, _, _| inp.recv_urgent()))
    }

    fn look(&self) -> io::Result<Look> {
        Ok(self.with(|_, inp, _, _| inp.look()))
    }

    fn at_mark(&self) -> io::Result<bool> {
        self.count_mark_look();
        Ok(self.with(|_, inp, _, _| inp.at_mark()))
    }

    fn before_mark(&self) -> io::Result<usize> {
        self.count_mark_look();
        Ok(self.with(|_, inp, _, _| inp.before_mark()))
    }

    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.send_vectored(&[buf])
    }

    fn send_vectored(&self, parts: &[&[u8]]) -> io::Result<usize> {
        self.with(|out, _, rng, partial| {
            let total: usize = parts.iter().map(|p| p.len()).sum();
            if total == 0 {
                return Ok(0);
            }
            assert!(!out.closed, "send after shutdown");
            let take = if !partial {
                total
            } else {
                match rng.below(8) {
                    0 => return Err(io::ErrorKind::WouldBlock.into()),
                    1 => 1 + rng.below(total),
                    _ => total,
                }
            };
            let mut left = take;
            for part in parts {
                let n = part.len().min(left);
                out.bytes.extend_from_slice(&part[..n]);
                left -= n;
            }
            Ok(take)
        })
    }

    fn send_urgent(&self, byte: u8) -> io::Result<bool> {
        self.with(|out, _, rng, partial| {
            if partial && rng.below(8) == 0 {
                return Ok(false);
            }
            assert!(!out.closed, "urgent send after shutdown");
            // (An offer goes right ahead of the client's first bytes, which would reach a closed
            // socket with the kernel's channels as well.)
            assert!(!out.quiet || byte == crate::core::protocol::URGENT_OFFER, "urgent send to a peer that closes its socket as a plain one");
            out.in_flight.push(out.bytes.len());
            out.bytes.push(byte);
            Ok(true)
        })
    }
}

/// A peer that uses its socket the ordinary way: reads skip urgent bytes, as the JDK's do.
pub struct PlainPeer {
    pub wire: SimWire,
}

impl PlainPeer {
    /// Reads what is there.
    pub fn read(&self, into: &mut Vec<u8>) -> io::Result<bool> {
        let mut buf = [0u8; 300];
        loop {
            match self.wire.recv(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => into.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes as much of `data[*sent..]` as the socket takes.
    pub fn write(&self, data: &[u8], sent: &mut usize) {
        while *sent < data.len() {
            match self.wire.send(&data[*sent..]) {
                Ok(n) => *sent += n,
                Err(_) => return,
            }
        }
    }
}

// --- two-sided runs ---------------------------------------------------------------------------

/// What travels over the fake UCX, to side `i` in `to[i]`.
#[derive(Default)]
pub struct Ucx {
    to: [VecDeque<Msg>; 2],
    /// Probes are lost (a path that does not work).
    pub broken: bool,
}

enum Msg {
    Data(Vec<u8>),
    Ping(u64),
    Pong(u64),
}

/// A side's UCX link, as far as the stream sees it.
#[derive(Default)]
struct FakeLink {
    /// Whether its endpoint exists.
    endpoint: bool,
    /// Pings that came before the endpoint, to answer once it exists.
    pending_pongs: Vec<u64>,
    /// Data messages sent and read.
    sent: u64,
    read: u64,
}

/// One hadroNIO side: its negotiation, stream state, application data and fake link.
pub struct Side {
    idx: usize,
    pub neg: Negotiation,
    wire: SimWire,
    rx: RxState,
    tx: TxState,
    pub received: Vec<u8>,
    /// What the application writes, and how much of it went.
    data: Vec<u8>,
    sent: usize,
    link: FakeLink,
    shut: bool,
    pub failed: Option<Error>,
    pub ended: bool,
    /// Shut the output down only once the upgrade is decided (so that it can happen).
    pub patient: bool,
}

pub fn policy(role: Role, secret: Option<&[u8]>, nonce: u64) -> Policy {
    Policy {
        role,
        upgrade: Ok(()),
        secret: secret.and_then(Secret::new),
        identity: Identity { host: 1, namespaces: 2, process: nonce },
        nonce,
        offer_wait: Duration::from_millis(200),
        probe_wait: Duration::from_millis(500),
        auth_wait: Duration::from_millis(1000),
        mark_delay: Duration::ZERO,
    }
}

impl Side {
    pub fn new(idx: usize, policy: Policy, wire: SimWire, data: Vec<u8>) -> Side {
        Side {
            idx,
            neg: Negotiation::new(policy),
            wire,
            rx: RxState::default(),
            tx: TxState::default(),
            received: Vec::new(),
            data,
            sent: 0,
            link: FakeLink::default(),
            shut: false,
            failed: None,
            ended: false,
            patient: false,
        }
    }

    /// The connection fails: what is queued goes out (the peer learns why from it), then the
    /// socket closes.
    fn fail(&mut self, error: Error) {
        if self.failed.is_none() {
            // As the connection does: it waits a moment for the socket to take what is queued.
            for _ in 0..64 {
                if flush(&mut self.neg, &self.wire, &self.rx).unwrap_or(true) {
                    break;
                }
            }
            if !self.shut {
                self.wire.shutdown();
                self.shut = true;
            }
        }
        self.failed.get_or_insert(error);
    }

    /// One round of everything the connection does: timeouts, actions, UCX, reads, writes.
    pub fn step(&mut self, ucx: &RefCell<Ucx>, rng: &mut Rng, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        let round = self.neg.on_timeout(now).and_then(|_| {
            self.act(ucx, now);
            self.take_notices(ucx);
            self.receive(ucx, rng, now)
        });
        match round {
            Ok(()) => self.send(ucx, rng, now),
            Err(e) => self.fail(e),
        }
    }

    /// Carries out what the negotiation asks for.
    fn act(&mut self, ucx: &RefCell<Ucx>, now: Instant) {
        while let Some(action) = self.neg.poll_action() {
            match action {
                Action::OpenLink(_) => {
                    let addr = Addr { tag_id: 1 + self.idx as u32, slots: 8, slot_len: 16384, max_message: 1 << 20, worker_address: vec![1, 2] };
                    self.neg.on_link(Ok(addr));
                }
                Action::Connect(_) => {
                    self.link.endpoint = true;
                    self.neg.on_endpoint(Ok(()), now);
                    for token in self.link.pending_pongs.drain(..) {
                        ucx.borrow_mut().to[1 - self.idx].push_back(Msg::Pong(token));
                    }
                }
                Action::Probe(token) => {
                    if !ucx.borrow().broken {
                        ucx.borrow_mut().to[1 - self.idx].push_back(Msg::Ping(token));
                    }
                }
                Action::Switched | Action::GaveUp(..) => {}
            }
        }
    }

    /// Takes the UCX messages other than data: pings and pongs.
    fn take_notices(&mut self, ucx: &RefCell<Ucx>) {
        let mut keep = VecDeque::new();
        let inbox = std::mem::take(&mut ucx.borrow_mut().to[self.idx]);
        for msg in inbox {
            match msg {
                Msg::Ping(token) if self.link.endpoint => ucx.borrow_mut().to[1 - self.idx].push_back(Msg::Pong(token)),
                Msg::Ping(token) => self.link.pending_pongs.push(token),
                Msg::Pong(token) => self.neg.on_probe_answered(token),
                data => keep.push_back(data),
            }
        }
        keep.extend(ucx.borrow_mut().to[self.idx].drain(..));
        ucx.borrow_mut().to[self.idx] = keep;
    }

    /// Reads what the socket reports as urgent data (EPOLLPRI), then the stream, then UCX data
    /// once the peer switched; notes the end of the peer's stream.
    fn receive(&mut self, ucx: &RefCell<Ucx>, rng: &mut Rng, now: Instant) -> Result<(), Error> {
        let negotiation = |failure| match failure {
            Failure::Negotiation(e) => e,
            Failure::Io(e) => panic!("simulated socket failed: {e}"),
        };
        urgent(&mut self.neg, &self.wire, &mut self.rx, now).map_err(negotiation)?;
        let mut buf = vec![0u8; 1 + rng.below(700)];
        let regions = [Region::of(&mut buf)];
        let mut cursor = Cursor::new(&regions);
        let r = read(&mut self.neg, &self.wire, &mut self.rx, Some(&mut cursor), &|| now).map_err(negotiation)?;
        self.received.extend_from_slice(&buf[..r.delivered]);
        if self.neg.peer_switched() && self.neg.deliverable() && self.rx.inbox.is_empty() {
            let mut to = ucx.borrow_mut();
            while let Some(Msg::Data(bytes)) = to.to[self.idx].front() {
                self.received.extend_from_slice(bytes);
                self.link.read += 1;
                to.to[self.idx].pop_front();
            }
        }
        match self.neg.peer_fin() {
            // As the connection's end: the raw bytes read ahead before the peer's mark come first.
            Some((messages, _)) if self.link.read >= messages && !self.neg.data_pending() && self.rx.inbox.is_empty() => {
                self.ended = true
            }
            _ => {}
        }
        if self.rx.eof && self.rx.inbox.is_empty() && !self.neg.peer_switched() {
            // A TCP end (a framed peer's stream that breaks off is a reset for the connection).
            self.ended = true;
        }
        Ok(())
    }

    /// Writes a piece of the application's data, or shuts the output down after the last.
    fn send(&mut self, ucx: &RefCell<Ucx>, rng: &mut Rng, now: Instant) {
        if let Err(e) = flush(&mut self.neg, &self.wire, &self.rx) {
            panic!("simulated socket failed: {e}");
        }
        if self.sent < self.data.len() {
            self.neg.before_write(|| now);
            let n = (1 + rng.below(900)).min(self.data.len() - self.sent);
            let mut chunk = self.data[self.sent..self.sent + n].to_vec();
            if self.neg.write_mode() == WriteMode::Ucx && self.tx.early.is_empty() && !self.neg.has_output() {
                ucx.borrow_mut().to[1 - self.idx].push_back(Msg::Data(chunk));
                self.link.sent += 1;
                self.sent += n;
            } else if self.neg.write_mode() != WriteMode::Ucx {
                let regions = [Region::of(&mut chunk)];
                let mut src = Cursor::new(&regions);
                write(&mut self.neg, &self.wire, &self.rx, &mut self.tx, &mut src).expect("simulated write");
                self.sent += src.moved();
                if src.moved() > 0 && self.neg.pending() {
                    // As the connection does: each write that sent bytes counts.
                    self.neg.on_write(now);
                }
            } else {
                let _ = release(&mut self.neg, &self.wire, &self.rx, &mut self.tx);
            }
        } else if !self.tx.early.is_empty() {
            let _ = release(&mut self.neg, &self.wire, &self.rx, &mut self.tx);
        } else if !(self.shut || self.neg.has_output() || self.neg.write_mode() == WriteMode::Hold || (self.patient && self.neg.pending())) {
            self.neg.on_shutdown();
            if !self.neg.peer_may_send_control() {
                self.wire.expect_quiet();
            }
            if self.neg.framed() {
                let messages = self.link.sent;
                self.neg.fin(if self.neg.upgraded() { messages } else { 0 });
                let _ = flush(&mut self.neg, &self.wire, &self.rx);
            } else {
                self.wire.shutdown();
            }
            self.shut = true;
        }
    }

    /// Whether all our bytes left and the peer's stream ended.
    pub fn done(&self) -> bool {
        self.failed.is_some() || (self.shut && !self.neg.has_output() && self.ended)
    }
}

pub fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| ((i * 31 + salt as usize) % 251) as u8).collect()
}

/// A simulated connection whose arrival steps (a byte at a time up to everything at once) and
/// send behaviour depend on the seed.
pub fn shaped_net(seed: u64) -> std::rc::Rc<RefCell<Net>> {
    let net = Net::new(seed);
    {
        let mut n = net.borrow_mut();
        n.step = [7, 1, 0, 100, 3000][(seed % 5) as usize];
        n.partial = seed % 3 != 2;
    }
    net
}

pub fn run_pair(seed: u64, client: Policy, server: Policy, lengths: (usize, usize), broken: bool) -> (Side, Side) {
    run_sides(seed, client, server, lengths, broken, (true, true))
}

/// [`run_pair`] where each side shuts its output down as soon as its bytes are out, even while
/// the upgrade is undecided (`patient` false), as a connection per request does.
pub fn run_short(seed: u64, client: Policy, server: Policy, lengths: (usize, usize)) -> (Side, Side) {
    run_sides(seed, client, server, lengths, false, (false, false))
}

/// [`run_short`] where only the server is short: the client shuts its output down once the
/// upgrade is decided.
pub fn run_server_short(seed: u64, client: Policy, server: Policy, lengths: (usize, usize)) -> (Side, Side) {
    run_sides(seed, client, server, lengths, false, (true, false))
}

/// Both sides patient for `rounds` rounds (10 µs of simulated time each), whatever they do: for
/// connections that stay open and idle.
pub fn run_open(seed: u64, client: Policy, server: Policy, lengths: (usize, usize), rounds: u64) -> (Side, Side) {
    let (a, b) = SimWire::pair(&shaped_net(seed));
    let ucx = RefCell::new(Ucx::default());
    let mut client = Side::new(0, client, a, pattern(lengths.0, 1));
    let mut server = Side::new(1, server, b, pattern(lengths.1, 2));
    (client.patient, server.patient) = (true, true);
    let mut rng = Rng::new(seed ^ 0x5555);
    let start = Instant::now();
    client.neg.on_connected(start);
    for round in 0..rounds {
        let now = start + Duration::from_micros(10 * round);
        client.step(&ucx, &mut rng, now);
        server.step(&ucx, &mut rng, now);
    }
    (client, server)
}

fn run_sides(seed: u64, mut client: Policy, mut server: Policy, lengths: (usize, usize), broken: bool, patient: (bool, bool)) -> (Side, Side) {
    if broken {
        client.probe_wait = Duration::from_millis(1);
        server.probe_wait = Duration::from_millis(1);
    }
    let net = shaped_net(seed);
    let (a, b) = SimWire::pair(&net);
    let ucx = RefCell::new(Ucx { broken, ..Ucx::default() });
    // A client that writes nothing offers only with a secret (at once): without one, the
    // upgrade that a patient side would wait for never starts.
    let offers = lengths.0 > 0 || client.secret.is_some();
    let mut client = Side::new(0, client, a, pattern(lengths.0, 1));
    let mut server = Side::new(1, server, b, pattern(lengths.1, 2));
    (client.patient, server.patient) = if offers { patient } else { (false, false) };
    let mut rng = Rng::new(seed ^ 0x5555);
    let start = Instant::now();
    client.neg.on_connected(start);
    for round in 0..200_000u64 {
        // Simulated time: 10 µs per round, so timeouts fire within the run.
        let now = start + Duration::from_micros(10 * round);
        if rng.below(2) == 0 {
            client.step(&ucx, &mut rng, now);
            server.step(&ucx, &mut rng, now);
        } else {
            server.step(&ucx, &mut rng, now);
            client.step(&ucx, &mut rng, now);
        }
        if client.done() && server.done() {
            return (client, server);
        }
    }
    panic!(
        "seed {seed}: no end after 200000 rounds; client {:?} ended {} shut {}, server {:?} ended {} shut {}; busy {}",
        client.neg.path(),
        client.ended,
        client.shut,
        server.neg.path(),
        server.ended,
        server.shut,
        net.borrow().busy()
    );
}

/// Runs a hadroNIO side against a plain peer whose behaviour is `peer(received so far, sent so
/// far) -> bytes to send next`.
pub fn against_plain(seed: u64, role: Role, secret: Option<&[u8]>, data_len: usize, peer_data: Vec<u8>, echo: bool) -> (Side, Vec<u8>) {
    let net = shaped_net(seed);
    let (a, b) = SimWire::pair(&net);
    let ucx = RefCell::new(Ucx::default());
    let mut side = Side::new(0, policy(role, secret, 11), a, pattern(data_len, 1));
    let plain = PlainPeer { wire: b };
    let mut rng = Rng::new(seed ^ 77);
    let start = Instant::now();
    if role == Role::Client {
        side.neg.on_connected(start);
    }
    let mut peer_received = Vec::new();
    let mut peer_out = peer_data;
    let mut peer_sent = 0;
    let mut peer_eof = false;
    let mut peer_shut = false;
    for round in 0..200_000u64 {
        let now = start + Duration::from_micros(10 * round);
        side.step(&ucx, &mut rng, now);
        if !peer_eof {
            let before = peer_received.len();
            peer_eof = plain.read(&mut peer_received).expect("plain read");
            if echo {
                peer_out.extend_from_slice(&peer_received[before..]);
            }
        }
        plain.write(&peer_out, &mut peer_sent);
        if peer_sent == peer_out.len() && !peer_shut && (!echo || peer_eof) {
            plain.wire.shutdown();
            peer_shut = true;
        }
        if side.done() && peer_eof && peer_shut {
            return (side, peer_received);
        }
    }
    panic!("seed {seed}: no end; side {:?} ended {} shut {}", side.neg.path(), side.ended, side.shut);
}
