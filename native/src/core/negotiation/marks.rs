//! Before the greeting: the client's offer and the server's answer (urgent bytes), the client's
//! clock for its mark, and the marks at which each side's stream turns into frames.

use std::time::Instant;

use super::*;

impl Negotiation {
    /// Client: the TCP connection is up. With a secret the offer goes at once: the client holds
    /// the server's bytes back from the first one until it proved the secret.
    pub fn on_connected(&mut self, now: Instant) {
        if matches!(self.stage, Stage::Connecting) {
            self.client.connected_at = Some(now);
            if self.policy.secret.is_some() {
                self.offer(now);
            }
        }
    }

    /// Client: the application is about to write bytes. Before its first ones, the offer goes
    /// out (as the stream's first byte). A client that only reads offers nothing: a plain server
    /// that writes and closes without reading would otherwise close with the offer unread, and
    /// its kernel would answer with a reset instead of the end of stream (however long it wrote
    /// first). Once the client wrote, an unread offer comes with unread application bytes, which
    /// reset the connection with the kernel's channels too. So a connection whose client never
    /// writes stays on TCP. `now` is asked only when the offer goes out (every write comes here).
    pub fn before_write(&mut self, now: impl FnOnce() -> Instant) {
        if matches!(self.stage, Stage::Connecting) && self.client.connected_at.is_some() {
            self.offer(now());
        }
    }

    pub(super) fn offer(&mut self, now: Instant) {
        self.urgent = Some(protocol::URGENT_OFFER);
        self.stage = Stage::Offered { since: now, waited: false };
        self.rx = Rx::Raw(Watch::Accept);
    }

    /// Client: what this connection showed about its server, once (`None` before that and
    /// after it was taken), and once more if an answer proves an unanswered offer's server a
    /// hadroNIO one after all.
    pub fn take_outcome(&mut self) -> Option<Outcome> {
        match std::mem::replace(&mut self.client.outcome, Learned::Taken) {
            Learned::Ready(outcome) => Some(outcome),
            kept => {
                self.client.outcome = kept;
                None
            }
        }
    }

    pub(super) fn learned(&mut self, outcome: Outcome) {
        if matches!(self.client.outcome, Learned::Nothing) {
            self.client.outcome = Learned::Ready(outcome);
        }
    }

    /// Raw bytes of the peer's stream were read (`n > 0`).
    pub fn on_raw(&mut self, n: usize) {
        self.peer.raw_read += n as u64;
        let _ = self.on_ordinary_start();
    }

    /// Server: the client's stream starts with an ordinary byte (no mark at offset 0), read or
    /// not: the first byte is not an offer, so the client is a plain one. True if that decided
    /// the connection (its reads no longer look for marks).
    pub fn on_ordinary_start(&mut self) -> bool {
        if matches!(self.stage, Stage::Listening) {
            self.decide_plain(TcpReason::PlainPeer, "the peer does not speak hadroNIO");
            return true;
        }
        false
    }

    /// An urgent byte of the peer. `at_mark`: the socket's read position is at its offset (for
    /// [`Watch::Offer`] and [`Watch::Mark`] it always is). Before the caller reads on, it must have
    /// read past the mark if [`Negotiation::must_pass_mark`] says so.
    pub fn on_mark(&mut self, byte: u8, at_mark: bool, now: Instant) -> Result<()> {
        let watch = match &self.rx {
            Rx::Raw(watch) => *watch,
            Rx::Framed(_) => Watch::Nothing,
        };
        match (watch, &self.stage) {
            (Watch::Offer, Stage::Listening) => {
                if byte != protocol::URGENT_OFFER || self.peer.raw_read > 0 || !at_mark {
                    // Urgent data of a plain client: ignored, as the JDK's reads ignore it.
                    return Ok(());
                }
                // The caller passes the offer's mark before the ACCEPT goes out (the client's mark
                // can only follow the ACCEPT).
                self.urgent = Some(if self.policy.secret.is_some() { protocol::URGENT_ACCEPT_AUTH } else { protocol::URGENT_ACCEPT });
                self.stage = Stage::Accepted;
                self.rx = Rx::Raw(Watch::Mark);
                self.auth.since = Some(now);
            }
            (Watch::Accept, Stage::Offered { waited, .. }) => {
                let late = *waited;
                if byte != protocol::URGENT_ACCEPT && byte != protocol::URGENT_ACCEPT_AUTH {
                    // Our own offer coming back (a connection to itself), or a plain server's
                    // urgent data: not an answer.
                    return Ok(());
                }
                if byte == protocol::URGENT_ACCEPT_AUTH && self.policy.secret.is_none() {
                    // The server holds our bytes unread until we prove a secret we do not have.
                    return self.fail(Error::new(Status::Protocol, PEER_REQUIRES_SECRET));
                }
                if late {
                    // The wait took this server for a plain one; it is a hadroNIO server that was
                    // slow to answer (busy, or a JVM still starting). What the connection shows
                    // from here (its upgrade, or its end before it) is learned instead, so that
                    // the next connections to it offer again.
                    self.client.outcome = Learned::Nothing;
                }
                self.stage = Stage::Answered { reached: false };
                self.rx = Rx::Raw(Watch::Reach);
                self.auth.since = Some(now);
                if at_mark {
                    // Already at its offset: the caller passes it, then our mark can go.
                    self.reached(now);
                }
            }
            (Watch::Mark, _) => {
                if byte != self.policy.role.peer().mark() {
                    return self.fail(Error::new(
                        Status::Protocol,
                        format!("hadroNIO protocol error: urgent byte {byte:#04x} where the peer's mark was due"),
                    ));
                }
                self.rx = Rx::Framed(Parser::default());
                if self.policy.role == Role::Server && matches!(self.stage, Stage::Accepted) {
                    self.send_mark(now);
                }
            }
            // Urgent bytes at other times are not part of the protocol: ignored (ordinary reads
            // skip them).
            _ => {}
        }
        Ok(())
    }

    /// The urgent byte at which the peer's stream turns into frames.
    pub fn peer_mark(&self) -> u8 {
        self.policy.role.peer().mark()
    }

    /// Whether, having just handled an urgent byte at its offset, the caller must read past that
    /// offset before it sends [`Negotiation::urgent`] (see the protocol's rule on marks).
    pub fn must_pass_mark(&self) -> bool {
        matches!(self.urgent, Some(protocol::URGENT_ACCEPT | protocol::URGENT_ACCEPT_AUTH | protocol::URGENT_MARK_CLIENT))
            || matches!(self.stage, Stage::Answered { reached: true })
    }

    /// Client in [`Watch::Reach`]: the read position reached the ACCEPT's offset. The caller
    /// passes it (reads past it) before sending our mark.
    pub fn on_mark_reached(&mut self, now: Instant) {
        if matches!(self.stage, Stage::Answered { reached: false }) {
            self.reached(now);
        }
    }

    /// A write of the application sent bytes (once per call). After a client's second one its
    /// mark goes (true: it is queued) if the ACCEPT's offset was reached: a connection that
    /// carries one request and its answer and then closes (a connection per request) stays on
    /// TCP, where it costs what the kernel's connections cost, and the upgrade goes to
    /// connections that carry more.
    pub fn on_write(&mut self, now: Instant) -> bool {
        self.client.writes = self.client.writes.saturating_add(1);
        if matches!(self.stage, Stage::Answered { reached: true }) && self.mark_due(now) {
            self.send_mark(now);
            return true;
        }
        false
    }

    /// Client: the ACCEPT's offset was reached; our mark goes now or when it is due.
    pub(super) fn reached(&mut self, now: Instant) {
        self.stage = Stage::Answered { reached: true };
        if self.mark_due(now) {
            self.send_mark(now);
        } else {
            // The server's mark can only follow ours: ordinary reads until then.
            self.rx = Rx::Raw(Watch::Nothing);
        }
    }

    /// When a client's mark may go without a second write (none: at once).
    pub(super) fn mark_time(&self) -> Option<Instant> {
        match self.client.connected_at {
            Some(at) if !self.policy.mark_delay.is_zero() => Some(at + self.policy.mark_delay),
            _ => None,
        }
    }

    /// When a client that wrote once looks again whether a stream comes its way: at its mark's
    /// time, then each time the connection's age doubled, [`MARK_CHECKS`] times in all (none
    /// after that: only a second write brings its mark).
    pub(super) fn next_mark_check(&self) -> Option<Instant> {
        let at = self.client.connected_at?;
        (self.client.mark_checks < MARK_CHECKS).then(|| at + self.policy.mark_delay * (1u32 << self.client.mark_checks))
    }

    /// Whether a client's mark may go now: a second write came, or the connection is old enough
    /// and either a stream comes its way (it read [`STREAM_READ`] bytes) or nothing came back
    /// for [`HELD_ANSWER_DELAYS`] times the delay (a server may hold its answer until the
    /// upgrade). A connection that carried one request and its answer and then waits gains
    /// nothing from UCX until it writes again, and its upgrade would cost both processes CPU
    /// while it idles.
    pub(super) fn mark_due(&self, now: Instant) -> bool {
        if self.client.writes >= 2 {
            return true;
        }
        let Some(at) = self.mark_time() else { return true };
        let held = self.peer.raw_read == 0 && now >= at + self.policy.mark_delay * (HELD_ANSWER_DELAYS - 1);
        now >= at && (self.peer.raw_read >= STREAM_READ || held)
    }

    /// Our mark, MAGIC, HELLO (and the challenge with a secret): from here on our stream
    /// carries frames.
    pub(super) fn send_mark(&mut self, _now: Instant) {
        let role = self.policy.role;
        self.urgent = Some(role.mark());
        self.out.extend_from_slice(&MAGIC);
        let secret = self.policy.secret.is_some();
        let hello = Hello::ours(true, secret, role, self.policy.nonce, self.policy.identity);
        protocol::put_frame(&mut self.out, FrameType::Hello, &hello.encode());
        if secret {
            let challenge = auth::challenge();
            protocol::put_frame(&mut self.out, FrameType::Auth, &challenge);
            self.auth.own_challenge = Some(challenge);
        }
        self.ours.carries = Ours::Framed;
        self.stage = Stage::Greeting(Box::new(Greeting { link: Link::None, peer_addr: None, endpoint: Endpoint::None }));
        if role == Role::Client {
            self.rx = Rx::Raw(Watch::Mark);
            self.learned(Outcome::Upgrading);
        }
    }
}
