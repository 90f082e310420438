//! The peer's control frames after its mark: HELLO, AUTH, ADDR, SWITCH, RAW, FIN and DATA.

use std::time::Instant;

use super::*;

impl Negotiation {
    /// Control bytes of the peer's stream (at most what [`Next::Control`] asked for).
    pub fn on_control(&mut self, mut bytes: &[u8], now: Instant) -> Result<()> {
        while !bytes.is_empty() {
            let Rx::Framed(parser) = &mut self.rx else {
                return Err(Error::new(Status::Internal, "control bytes outside the framed stream"));
            };
            if parser.magic < MAGIC.len() {
                let n = (MAGIC.len() - parser.magic).min(bytes.len());
                if bytes[..n] != MAGIC[parser.magic..parser.magic + n] {
                    return self.fail(Error::new(
                        Status::Protocol,
                        "hadroNIO protocol error: the bytes after the peer's mark are not the hadroNIO greeting",
                    ));
                }
                parser.magic += n;
                bytes = &bytes[n..];
                continue;
            }
            if parser.data_left > 0 {
                return Err(Error::new(Status::Internal, "control bytes where DATA was due"));
            }
            if let Some((kind, length)) = parser.control {
                let n = (length - parser.payload.len()).min(bytes.len());
                parser.payload.extend_from_slice(&bytes[..n]);
                bytes = &bytes[n..];
                if parser.payload.len() == length {
                    parser.control = None;
                    let payload = std::mem::take(&mut parser.payload);
                    self.on_frame(kind, &payload, now)?;
                }
                continue;
            }
            let n = (FRAME_HEADER_LEN - parser.header_len).min(bytes.len());
            parser.header[parser.header_len..parser.header_len + n].copy_from_slice(&bytes[..n]);
            parser.header_len += n;
            bytes = &bytes[n..];
            if parser.header_len < FRAME_HEADER_LEN {
                continue;
            }
            parser.header_len = 0;
            let header = match protocol::decode_header(&parser.header) {
                Ok(header) => header,
                Err(e) => return self.fail(e.into()),
            };
            if header.kind == FrameType::Data {
                if self.peer.switched || self.peer.fin.is_some() || self.peer.raw {
                    return self.protocol_error("DATA after SWITCH, RAW or FIN");
                }
                if let Rx::Framed(parser) = &mut self.rx {
                    parser.data_left = header.length;
                }
                if !bytes.is_empty() {
                    return Err(Error::new(Status::Internal, "control bytes read into a DATA frame"));
                }
            } else if header.length == 0 {
                self.on_frame(header.kind, &[], now)?;
            } else if let Rx::Framed(parser) = &mut self.rx {
                parser.control = Some((header.kind, header.length));
                parser.payload.clear();
            }
        }
        Ok(())
    }

    /// `n` bytes of the current DATA frame went to the application.
    pub fn on_data(&mut self, n: usize) {
        if let Rx::Framed(parser) = &mut self.rx {
            parser.data_left = parser.data_left.saturating_sub(n);
        }
    }

    pub(super) fn protocol_error(&mut self, what: &str) -> Result<()> {
        self.fail(Error::new(Status::Protocol, format!("hadroNIO protocol error: {what}")))
    }

    pub(super) fn fail(&mut self, error: Error) -> Result<()> {
        if !matches!(self.stage, Stage::Failed(_)) {
            self.stage = Stage::Failed(error.clone());
        }
        Err(error)
    }

    pub(super) fn on_frame(&mut self, kind: FrameType, payload: &[u8], now: Instant) -> Result<()> {
        if self.peer.reflected {
            // Our own frames coming back: only what shapes the byte stream counts.
            return match kind {
                FrameType::Raw => {
                    self.peer.raw = true;
                    self.rx = Rx::Raw(Watch::Nothing);
                    Ok(())
                }
                FrameType::Fin => {
                    self.peer.fin = Some((0, now));
                    Ok(())
                }
                _ => Ok(()),
            };
        }
        match kind {
            FrameType::Hello => self.on_hello(payload, now),
            FrameType::Auth => self.on_auth(payload),
            FrameType::Addr => self.on_addr(payload),
            FrameType::Switch => {
                if self.peer.switched || self.peer.raw || self.peer.fin.is_some() {
                    return self.protocol_error("SWITCH out of order");
                }
                if !self.ours.addr_sent {
                    return self.protocol_error("SWITCH before this side sent ADDR");
                }
                self.peer.switched = true;
                Ok(())
            }
            FrameType::Raw => {
                if self.peer.switched || self.peer.raw || self.peer.fin.is_some() {
                    return self.protocol_error("RAW out of order");
                }
                self.peer.raw = true;
                self.rx = Rx::Raw(Watch::Nothing);
                // A peer that gave up will not create an endpoint to us: give up too.
                self.give_up(TcpReason::Other, "the peer gave up the upgrade");
                Ok(())
            }
            FrameType::Fin => {
                if self.peer.fin.is_some() {
                    return self.protocol_error("second FIN");
                }
                let messages = match protocol::decode_u64(payload) {
                    Ok(messages) => messages,
                    Err(e) => return self.fail(e.into()),
                };
                if !self.peer.switched && messages != 0 {
                    return self.protocol_error("FIN counts UCX messages but the peer never switched");
                }
                self.peer.fin = Some((messages, now));
                Ok(())
            }
            FrameType::Credit | FrameType::Data => self.protocol_error(&format!("unexpected {kind:?} frame")),
        }
    }

    pub(super) fn greeting(&mut self) -> Option<&mut Greeting> {
        match &mut self.stage {
            Stage::Greeting(greeting) => Some(greeting),
            _ => None,
        }
    }

    pub(super) fn on_hello(&mut self, payload: &[u8], _now: Instant) -> Result<()> {
        let hello = match Hello::decode(payload) {
            Ok(hello) => hello,
            Err(e) => return self.fail(e.into()),
        };
        if self.peer.hello.is_some() {
            return self.protocol_error("second HELLO");
        }
        self.peer.hello = Some(hello);
        if hello.role != self.policy.role.peer() || hello.nonce == self.policy.nonce {
            // Our own stream came back to us (an echo that passes urgent data on): it carries
            // the application's bytes as they were written, so it stays plain TCP.
            self.peer.reflected = true;
            self.give_up(TcpReason::Other, "the peer's stream is this side's own, reflected");
            return Ok(());
        }
        let peer_secret = hello.capabilities & protocol::CAP_AUTH != 0;
        match (self.policy.secret.is_some(), peer_secret) {
            (true, false) => return self.fail(Error::new(Status::Protocol, PEER_HAS_NO_SECRET)),
            (false, true) => return self.fail(Error::new(Status::Protocol, PEER_REQUIRES_SECRET)),
            _ => {}
        }
        if !hello.shares_version() {
            let why = format!(
                "the peer speaks hadroNIO protocol versions {}..={}, this side {}..={}",
                hello.min_version,
                hello.version,
                protocol::MIN_VERSION,
                protocol::VERSION
            );
            self.give_up(TcpReason::Other, why);
            return Ok(());
        }
        if hello.capabilities & protocol::CAP_UCX == 0 {
            self.give_up(TcpReason::NoPath, "UCX is unavailable on the peer's side");
            return Ok(());
        }
        if let Some(greeting) = self.greeting() {
            greeting.link = Link::Opening;
            self.actions.push_back(Action::OpenLink(hello.identity));
        }
        Ok(())
    }

    pub(super) fn on_auth(&mut self, payload: &[u8]) -> Result<()> {
        let Some(secret) = self.policy.secret.clone() else {
            return self.protocol_error("AUTH without a shared secret");
        };
        let role = self.policy.role;
        let (Some(own), true) = (self.auth.own_challenge, self.peer.hello.is_some()) else {
            return self.protocol_error("AUTH before HELLO");
        };
        match payload.len() {
            auth::CHALLENGE_LEN if self.auth.peer_challenge.is_none() => {
                let mut challenge = [0u8; auth::CHALLENGE_LEN];
                challenge.copy_from_slice(payload);
                self.auth.peer_challenge = Some(challenge);
                let proof = auth::proof(&secret, role == Role::Client, &challenge, &own);
                protocol::put_frame(&mut self.out, FrameType::Auth, &proof);
                Ok(())
            }
            auth::PROOF_LEN if self.auth.peer_challenge.is_some() && !self.auth.verified => {
                let peer_challenge = self.auth.peer_challenge.unwrap_or_default();
                if !auth::verify(&secret, role == Role::Server, &own, &peer_challenge, payload) {
                    return self.fail(Error::new(
                        Status::Protocol,
                        "hadroNIO authentication failed: the peer's shared secret differs",
                    ));
                }
                self.auth.verified = true;
                self.advance();
                Ok(())
            }
            _ => self.protocol_error("AUTH out of order"),
        }
    }

    pub(super) fn on_addr(&mut self, payload: &[u8]) -> Result<()> {
        if self.peer.hello.is_none() || self.peer.addr_seen {
            return self.protocol_error("ADDR out of order");
        }
        if self.policy.secret.is_some() && !self.auth.verified {
            return self.protocol_error("ADDR before the peer authenticated");
        }
        self.peer.addr_seen = true;
        let addr = match Addr::decode(payload) {
            Ok(addr) => addr,
            Err(e) => return self.fail(e.into()),
        };
        // A side that gave up does not connect.
        if let Some(greeting) = self.greeting() {
            greeting.peer_addr = Some(addr);
            self.advance();
        }
        Ok(())
    }

    /// Sends ADDR and asks for the endpoint once the link is posted, the peer's ADDR is here
    /// and the peer authenticated.
    pub(super) fn advance(&mut self) {
        if self.policy.secret.is_some() && !self.auth.verified {
            return;
        }
        let Stage::Greeting(greeting) = &mut self.stage else { return };
        if let Link::Ready(addr) = &mut greeting.link {
            if let Some(addr) = addr.take() {
                protocol::put_frame(&mut self.out, FrameType::Addr, &addr.encode());
                self.ours.addr_sent = true;
            }
        }
        if let (Link::Ready(_), Some(addr), Endpoint::None) = (&greeting.link, &greeting.peer_addr, greeting.endpoint) {
            greeting.endpoint = Endpoint::Creating;
            self.actions.push_back(Action::Connect(addr.clone()));
        }
    }
}
