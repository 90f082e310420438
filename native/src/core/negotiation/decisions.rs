//! What the connection reports back (its link, its endpoint, a probe's pong, time, shutdown, end
//! of stream) and how the upgrade ends: upgraded, plain TCP, or given up.

use std::time::{Duration, Instant};

use super::*;

impl Negotiation {
    /// The link is posted (`Ok(our ADDR)`) or could not be (`Err(why)`).
    pub fn on_link(&mut self, result: std::result::Result<Addr, String>) {
        let Some(greeting) = self.greeting() else { return };
        match result {
            Ok(addr) => {
                greeting.link = Link::Ready(Some(addr));
                self.advance();
            }
            Err(why) => self.give_up(TcpReason::NoPath, why),
        }
    }

    /// Our FIN frame (the output is shut down after `messages` UCX messages); only while our
    /// stream carries frames.
    pub fn fin(&mut self, messages: u64) {
        protocol::put_frame(&mut self.out, FrameType::Fin, &protocol::encode_u64(messages));
    }

    /// The endpoint exists (`Ok`; the caller sends the probe asked for) or could not be created.
    pub fn on_endpoint(&mut self, result: std::result::Result<(), String>, now: Instant) {
        let deadline = now + self.policy.probe_wait;
        let nonce = self.policy.nonce;
        let Some(greeting) = self.greeting() else { return };
        match result {
            Ok(()) => {
                greeting.endpoint = Endpoint::Probing { deadline };
                self.actions.push_back(Action::Probe(nonce));
            }
            Err(why) => self.give_up(TcpReason::NoPath, format!("UCX endpoint could not be created: {why}")),
        }
    }

    /// The connection decided against the upgrade it was setting up (the UCX path is no better
    /// than TCP, say): RAW goes out, the string says why.
    pub fn decline(&mut self, why: impl Into<Why>) {
        self.give_up(TcpReason::NoPath, why);
    }

    /// The pong of our probe came back over UCX: the path works both ways.
    pub fn on_probe_answered(&mut self, token: u64) {
        if token != self.policy.nonce || self.ours.output != Output::Open {
            return;
        }
        let Some(greeting) = self.greeting() else { return };
        if !matches!(greeting.endpoint, Endpoint::Probing { .. }) {
            return;
        }
        protocol::put_frame(&mut self.out, FrameType::Switch, &[]);
        self.stage = Stage::Upgraded;
        self.path = Path::Ucx;
        self.actions.push_back(Action::Switched);
    }

    /// Time passed: an offer wait, an authentication or a probe may have run out. False if
    /// nothing was due but a client's look for a stream that did not come (a waiter has nothing
    /// to learn then).
    pub fn on_timeout(&mut self, now: Instant) -> Result<bool> {
        let millis = |d: Duration| d.as_millis();
        if let (Some(since), false, true) = (self.auth.since, self.auth.verified, self.policy.secret.is_some()) {
            if now >= since + self.policy.auth_wait && self.error().is_none() {
                return self.fail(Error::new(
                    Status::Protocol,
                    format!("hadroNIO authentication failed: the peer did not authenticate within {} ms", millis(self.policy.auth_wait)),
                ))
                .map(|()| true);
            }
        }
        let offer_wait = self.policy.offer_wait;
        let probe_wait = self.policy.probe_wait;
        if matches!(self.stage, Stage::Answered { reached: true }) {
            if self.mark_due(now) {
                self.send_mark(now);
                return Ok(true);
            }
            while self.next_mark_check().is_some_and(|at| now >= at) {
                self.client.mark_checks += 1;
            }
        }
        match &mut self.stage {
            Stage::Offered { since, waited } if !*waited && now >= *since + offer_wait => {
                // No answer in time: a plain server, as far as can be told (a late answer still
                // counts). With a secret the bytes held back go out raw now.
                *waited = true;
                self.learned(Outcome::Plain);
                let why = Why::from(format!("no answer to the hadroNIO offer within {} ms", millis(offer_wait)));
                self.path = Path::Tcp(why.clone());
                self.actions.push_back(Action::GaveUp(TcpReason::PlainPeer, why));
                Ok(true)
            }
            Stage::Greeting(greeting) if matches!(greeting.endpoint, Endpoint::Probing { deadline } if now >= deadline) => {
                let why = format!("the UCX path did not carry a probe round trip within {} ms", millis(probe_wait));
                self.give_up(TcpReason::NoPath, why);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Our output is shut down. While our stream is raw that ends the upgrade (our mark can no
    /// longer be sent); with frames the caller sends FIN ([`Negotiation::fin`]) and the greeting
    /// goes on only for the peer's direction.
    pub fn on_shutdown(&mut self) {
        if self.ours.output != Output::Open {
            return;
        }
        self.ours.output = Output::Shut;
        if !self.pending() {
            return;
        }
        if matches!(self.path, Path::NotYet) {
            self.path = Path::OutputShutDown;
        }
        if !self.framed() {
            // A client that did not offer, or saw the ACCEPT, waits for nothing: the server
            // answers only an offer and sends its own mark only after ours, which will not follow
            // a TCP FIN. Anywhere else the peer's offer, answer or mark may still be on its way.
            if !matches!(self.stage, Stage::Connecting | Stage::Answered { .. }) {
                self.ours.output = Output::CutShort;
            }
            if matches!(self.stage, Stage::Answered { .. }) {
                self.learned(Outcome::Short);
            }
            self.stage = Stage::Plain;
            // An offer or answer not sent yet cannot follow a TCP FIN.
            self.urgent = None;
            if matches!(self.rx, Rx::Raw(Watch::Accept) | Rx::Raw(Watch::Reach)) {
                // Without our mark the peer never sends its own.
                self.rx = Rx::Raw(Watch::Nothing);
            }
        }
    }

    /// The peer's TCP stream ended.
    pub fn on_eof(&mut self) -> Result<()> {
        self.peer.eof = true;
        match self.stage {
            Stage::Connecting => self.decide_plain(TcpReason::Other, "the peer closed before this side wrote"),
            Stage::Listening => self.decide_plain(TcpReason::PlainPeer, "the peer closed before speaking"),
            Stage::Offered { .. } => {
                self.learned(Outcome::Plain);
                self.decide_plain(TcpReason::PlainPeer, "the peer closed without answering the offer");
            }
            // Our mark waited for a second write, and the peer is done: no upgrade to start.
            Stage::Answered { .. } => {
                self.learned(Outcome::Short);
                self.decide_plain(TcpReason::Other, "the peer closed before the upgrade");
            }
            _ if self.unproven_writer() => return self.fail(Error::new(Status::Protocol, PEER_CLOSED_UNPROVEN)),
            _ => {}
        }
        Ok(())
    }

    /// The peer's TCP stream broke (a reset): an error that names the secret where the peer is a
    /// client without one (see [`Negotiation::on_eof`]), which fails at our answer and may close
    /// with a reset; otherwise the socket's error stands.
    pub fn on_reset(&mut self) -> Result<()> {
        if self.unproven_writer() {
            return self.fail(Error::new(Status::Protocol, PEER_CLOSED_UNPROVEN));
        }
        Ok(())
    }

    /// Server with a secret: the client offered, wrote application bytes and has not marked. A
    /// client without a secret does that (it fails at our ACCEPT-AUTH and closes); one with a
    /// secret holds its bytes until the answer came, and one that only connected wrote none.
    fn unproven_writer(&self) -> bool {
        matches!(self.stage, Stage::Accepted) && self.policy.secret.is_some() && self.peer.raw_read > 0
    }

    /// What this side holds of the peer's bytes before its mark (raw bytes it may not deliver
    /// before the peer proved the secret) reached the limit, so the mark cannot be reached.
    /// A server that requires a secret fails: a client without one (which fails at the answer)
    /// or one that sent that much before the late answer came would wait for nothing.
    pub fn on_held_full(&mut self) -> Result<()> {
        if matches!(self.stage, Stage::Accepted) && self.policy.secret.is_some() {
            return self.fail(Error::new(Status::Protocol, PEER_SENT_UNPROVEN));
        }
        Ok(())
    }

    /// Before any mark: the connection stays plain TCP (both streams raw), for `why`.
    pub(super) fn decide_plain(&mut self, reason: TcpReason, why: &'static str) {
        self.stage = Stage::Plain;
        self.rx = Rx::Raw(Watch::Nothing);
        self.path = Path::Tcp(Why::from(why));
        self.actions.push_back(Action::GaveUp(reason, Why::from(why)));
    }

    /// Gives the upgrade up for our writes: RAW if our stream carries frames.
    pub(super) fn give_up(&mut self, reason: TcpReason, why: impl Into<Why>) {
        let why = why.into();
        match self.stage {
            Stage::Upgraded | Stage::Plain | Stage::Failed(_) => return,
            _ => {}
        }
        if self.ours.carries == Ours::Framed {
            protocol::put_frame(&mut self.out, FrameType::Raw, &[]);
            self.ours.carries = Ours::RawAgain;
        }
        self.stage = Stage::Plain;
        self.path = Path::Tcp(why.clone());
        self.actions.push_back(Action::GaveUp(reason, why));
    }
}
