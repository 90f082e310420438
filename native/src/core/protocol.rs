//! The hadroNIO wire protocol. All integers are big-endian.
//!
//! **Negotiation, out of band.** Every connection starts as a plain TCP byte stream in both
//! directions, and stays one unless both ends speak hadroNIO. A client that may upgrade sends one
//! byte of TCP urgent data, [`URGENT_OFFER`], as the very first byte of its stream. A receiver
//! that reads its socket the ordinary way (`SO_OOBINLINE` off, the default everywhere) never sees
//! an urgent byte, so a plain server reads exactly what the client application wrote. A hadroNIO
//! server finds the offer at offset 0 and answers with an urgent [`URGENT_ACCEPT`] (or, when it
//! requires a shared secret, [`URGENT_ACCEPT_AUTH`]). Each side then
//! switches its own direction at an urgent mark ([`URGENT_MARK_CLIENT`] first, answered by
//! [`URGENT_MARK_SERVER`]): the bytes before a side's mark are raw application bytes, the bytes
//! after it are [`MAGIC`] and frames. The kernel reports the exact stream offset of every mark,
//! so raw bytes written before it (a server's banner, a client's first request) are delivered as
//! they are. A side sends an urgent byte that the peer answers with one of its own only after it
//! has read past the peer's previous mark: the kernel keeps one urgent mark per direction, and an
//! earlier unread one would otherwise turn into an ordinary byte.
//!
//! **Frames, per direction, after the mark.** [`MAGIC`] followed by frames of an 8-byte header
//! (`type: u8, flags: u8 = 0, reserved: u16 = 0, length: u32`) and `length` payload bytes. The
//! header format and the HELLO and RAW frames stay as they are in every future version, so that
//! sides of different versions can always fall back to raw bytes:
//!
//! | type | payload |
//! |------|---------|
//! | HELLO  | `version: u16, min_version: u16, capabilities: u32, role: u8, reserved: [u8; 3] = 0, nonce: u64, host: u64, namespaces: u64, process: u64` — first frame, exactly once |
//! | ADDR   | `tag id: u32, slots: u32, slot length: u32, max message: u32, address length: u32, UCX worker address` |
//! | DATA   | stream bytes (before SWITCH or RAW) |
//! | SWITCH | empty: the sender's later stream bytes travel over UCX |
//! | FIN    | `messages: u64`: no more bytes after that many UCX messages (0 if never switched) |
//! | CREDIT | `consumed: u64`: reserved; never sent |
//! | AUTH   | 16 bytes: challenge, or 32 bytes: proof (see [`crate::core::auth`]) |
//! | RAW    | empty: the sender gave up the upgrade; its later bytes are raw stream bytes (a TCP FIN ends them) |
//!
//! HELLO names the sender's `role` (1 client, 2 server) and a random `nonce` of the connection,
//! so that a stream that comes back to its sender is recognised; `host` is a digest of the kernel's
//! boot id, `namespaces` one of the network, IPC, mount and PID namespaces the sender runs in
//! and of its UCX shared-memory layout (together they decide whether shared memory can reach
//! it), `process` a random number drawn once per process.
//!
//! **UCX messages.** Tagged messages to the peer's worker carry a 64-bit tag
//! `dest id: 32 | kind: 2 | seq: 30`, and every receive matches one tag exactly (so that UCX
//! finds it by hash, however many connections share a worker). SLOT messages (kind 0, `seq` = the
//! sender's count of slot messages before it, modulo 2^30) go into the posted receive slots: a
//! non-empty one carries stream bytes, an empty one announces a BODY. A BODY message (kind 2,
//! `seq` = its own sequence number) carries the bytes of such an announcement (1 byte up to the
//! receiver's `max_message`); it is received outside the slots, into the reader's memory when its
//! length fits there. The receiver returns credits as an active message [`AM_CREDIT`] with a
//! 12-byte header `dest id: u32, consumed: u64`. Before a side sends SWITCH it proves that the
//! UCX path works in both directions: it sends an [`AM_PROBE`] ping (16-byte header `dest id: u32,
//! kind: u8 = 1, reserved: [u8; 3] = 0, token: u64`, then 1 KiB of zeros, see [`PROBE_PADDING`]),
//! which the peer answers over UCX with a pong (kind 2, the same token and padding). A worker
//! being destroyed sends every peer worker an [`AM_GOODBYE`] with an 8-byte header `digest: u64`
//! ([`worker_digest`] of its worker address; small enough for UCX to send at once, without a
//! round trip to the peer).

use std::fmt;

/// First bytes of every hadroNIO TCP stream.
pub const MAGIC: [u8; 8] = [0x89, b'h', b'N', b'I', b'O', b'\r', b'\n', 0x1a];
pub const VERSION: u16 = 4;
pub const MIN_VERSION: u16 = 4;
/// A client's first stream byte, sent as TCP urgent data: "this side can upgrade".
pub const URGENT_OFFER: u8 = 0x00;
/// A server's urgent answer to an offer: "so can this side".
pub const URGENT_ACCEPT: u8 = 0xA1;
/// A server's urgent answer to an offer when it requires the shared secret: "so can this side,
/// once you prove the secret". A client without one fails at once rather than write on into a
/// server that holds its bytes unread until it authenticates.
pub const URGENT_ACCEPT_AUTH: u8 = 0xA4;
/// The client's urgent byte at the offset where its stream turns into frames.
pub const URGENT_MARK_CLIENT: u8 = 0xA2;
/// The server's urgent byte at the offset where its stream turns into frames.
pub const URGENT_MARK_SERVER: u8 = 0xA3;
/// Capability bit: this side can upgrade to UCX.
pub const CAP_UCX: u32 = 1;
/// Capability bit: this side requires authentication with a shared secret.
pub const CAP_AUTH: u32 = 2;

pub const FRAME_HEADER_LEN: usize = 8;
/// Largest DATA frame payload.
pub const MAX_DATA_FRAME: usize = 64 * 1024;
/// Largest control frame payload (an ADDR carrying a big worker address).
pub const MAX_CONTROL_FRAME: usize = 64 * 1024;
/// Bounds for what a peer may advertise in ADDR.
pub const MAX_SLOTS: u32 = 4096;
pub const MIN_SLOT_LEN: u32 = 256;
pub const MAX_SLOT_LEN: u32 = 16 << 20;
pub const MAX_MESSAGE: u32 = 1 << 30;

/// Active-message identifier of probes (ping and pong) that prove a UCX path before SWITCH.
pub const AM_PROBE: u32 = 0x4844;
pub const PROBE_HEADER_LEN: usize = 16;
/// The data after a probe's header: zeros, which the receiver ignores. They make the probe too
/// big for UCX's inline sends, so it is copied into the receiver's buffers as stream data is.
/// Over shared memory that maps the peer's receive buffers now, when a failure (no file
/// descriptor left, say) keeps the connection on TCP, instead of at its first larger message,
/// when it would cost the connection.
pub static PROBE_PADDING: [u8; 1024] = [0; 1024];
pub const PROBE_PING: u8 = 1;
pub const PROBE_PONG: u8 = 2;
/// Active-message identifier of credit updates.
pub const AM_CREDIT: u32 = 0x4843;
/// Active-message identifier of a worker's goodbye (header: [`worker_digest`] of the sender's
/// UCX worker address): the sending worker is being destroyed, so its peers may close their
/// endpoints to it once no connection uses them.
pub const AM_GOODBYE: u32 = 0x4842;
pub const GOODBYE_HEADER_LEN: usize = 8;
pub const CREDIT_HEADER_LEN: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameType {
    Hello = 1,
    Addr = 2,
    Data = 3,
    Switch = 4,
    Fin = 5,
    Credit = 6,
    Auth = 7,
    Raw = 8,
}

impl FrameType {
    fn from_u8(value: u8) -> Option<FrameType> {
        Some(match value {
            1 => FrameType::Hello,
            2 => FrameType::Addr,
            3 => FrameType::Data,
            4 => FrameType::Switch,
            5 => FrameType::Fin,
            6 => FrameType::Credit,
            7 => FrameType::Auth,
            8 => FrameType::Raw,
            _ => return None,
        })
    }

    /// Allowed payload lengths of this frame type.
    fn length_range(self) -> (usize, usize) {
        match self {
            FrameType::Hello => (HELLO_LEN, HELLO_LEN),
            FrameType::Addr => (21, MAX_CONTROL_FRAME),
            FrameType::Data => (1, MAX_DATA_FRAME),
            FrameType::Switch | FrameType::Raw => (0, 0),
            FrameType::Fin | FrameType::Credit => (8, 8),
            FrameType::Auth => (16, 32),
        }
    }
}

/// A malformed or unacceptable message from the peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hadroNIO protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn err<T>(message: impl Into<String>) -> Result<T, ProtocolError> {
    Err(ProtocolError(message.into()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub kind: FrameType,
    pub length: usize,
}

pub fn encode_header(kind: FrameType, length: usize) -> [u8; FRAME_HEADER_LEN] {
    let mut out = [0u8; FRAME_HEADER_LEN];
    out[0] = kind as u8;
    out[4..8].copy_from_slice(&(length as u32).to_be_bytes());
    out
}

pub fn decode_header(bytes: &[u8; FRAME_HEADER_LEN]) -> Result<FrameHeader, ProtocolError> {
    let Some(kind) = FrameType::from_u8(bytes[0]) else {
        return err(format!("unknown frame type {}", bytes[0]));
    };
    if bytes[1] != 0 || bytes[2] != 0 || bytes[3] != 0 {
        return err(format!("{kind:?} frame with non-zero flags/reserved bytes"));
    }
    let length = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    let (min, max) = kind.length_range();
    if length < min || length > max {
        return err(format!("{kind:?} frame of {length} bytes (allowed {min}..={max})"));
    }
    Ok(FrameHeader { kind, length })
}

/// Appends a complete frame (header and payload) to `out`.
pub fn put_frame(out: &mut Vec<u8>, kind: FrameType, payload: &[u8]) {
    out.extend_from_slice(&encode_header(kind, payload.len()));
    out.extend_from_slice(payload);
}

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn be_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(b)
}

/// Length of a HELLO payload.
pub const HELLO_LEN: usize = 44;

/// Which end of the TCP connection a side is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

impl Role {
    fn code(self) -> u8 {
        match self {
            Role::Client => 1,
            Role::Server => 2,
        }
    }

    fn from_code(code: u8) -> Option<Role> {
        match code {
            1 => Some(Role::Client),
            2 => Some(Role::Server),
            _ => None,
        }
    }

    /// The other end.
    pub fn peer(self) -> Role {
        match self {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }

    /// The urgent byte at which this side's stream turns into frames.
    pub fn mark(self) -> u8 {
        match self {
            Role::Client => URGENT_MARK_CLIENT,
            Role::Server => URGENT_MARK_SERVER,
        }
    }
}

/// Where a process runs, as far as shared memory is concerned (see [`Hello`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Identity {
    /// Digest of the kernel's boot id; 0 if unknown.
    pub host: u64,
    /// Digest of the network, IPC, mount and PID namespaces and the UCX shared-memory layout; 0
    /// if unknown.
    pub namespaces: u64,
    /// Random number drawn once per process.
    pub process: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    pub min_version: u16,
    pub capabilities: u32,
    pub role: Role,
    /// Random number of the sender's connection (recognises a stream that came back).
    pub nonce: u64,
    pub identity: Identity,
}

impl Hello {
    pub fn ours(ucx: bool, auth: bool, role: Role, nonce: u64, identity: Identity) -> Hello {
        let capabilities = if ucx { CAP_UCX } else { 0 } | if auth { CAP_AUTH } else { 0 };
        Hello { version: VERSION, min_version: MIN_VERSION, capabilities, role, nonce, identity }
    }

    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut out = [0u8; HELLO_LEN];
        out[0..2].copy_from_slice(&self.version.to_be_bytes());
        out[2..4].copy_from_slice(&self.min_version.to_be_bytes());
        out[4..8].copy_from_slice(&self.capabilities.to_be_bytes());
        out[8] = self.role.code();
        out[12..20].copy_from_slice(&self.nonce.to_be_bytes());
        out[20..28].copy_from_slice(&self.identity.host.to_be_bytes());
        out[28..36].copy_from_slice(&self.identity.namespaces.to_be_bytes());
        out[36..44].copy_from_slice(&self.identity.process.to_be_bytes());
        out
    }

    /// Decodes a peer's HELLO. The version range is not checked here: a peer that shares no
    /// version with this side falls back to raw bytes (see [`Hello::shares_version`]).
    pub fn decode(payload: &[u8]) -> Result<Hello, ProtocolError> {
        if payload.len() != HELLO_LEN {
            return err(format!("HELLO of {} bytes", payload.len()));
        }
        let Some(role) = Role::from_code(payload[8]) else {
            return err(format!("HELLO with role {}", payload[8]));
        };
        if payload[9..12] != [0, 0, 0] {
            return err("HELLO with non-zero reserved bytes");
        }
        let hello = Hello {
            version: u16::from_be_bytes([payload[0], payload[1]]),
            min_version: u16::from_be_bytes([payload[2], payload[3]]),
            capabilities: be_u32(payload, 4),
            role,
            nonce: be_u64(payload, 12),
            identity: Identity { host: be_u64(payload, 20), namespaces: be_u64(payload, 28), process: be_u64(payload, 36) },
        };
        if hello.min_version > hello.version {
            return err(format!("HELLO with version range {}..={}", hello.min_version, hello.version));
        }
        Ok(hello)
    }

    /// Whether the peer's version range includes one this side speaks.
    pub fn shares_version(&self) -> bool {
        self.version >= MIN_VERSION && self.min_version <= VERSION
    }
}

/// What a side needs to send to the other over UCX: where, how many messages, how large.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addr {
    pub tag_id: u32,
    pub slots: u32,
    pub slot_len: u32,
    pub max_message: u32,
    pub worker_address: Vec<u8>,
}

impl Addr {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20 + self.worker_address.len());
        out.extend_from_slice(&self.tag_id.to_be_bytes());
        out.extend_from_slice(&self.slots.to_be_bytes());
        out.extend_from_slice(&self.slot_len.to_be_bytes());
        out.extend_from_slice(&self.max_message.to_be_bytes());
        out.extend_from_slice(&(self.worker_address.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.worker_address);
        out
    }

    pub fn decode(payload: &[u8]) -> Result<Addr, ProtocolError> {
        if payload.len() < 21 {
            return err(format!("ADDR of {} bytes", payload.len()));
        }
        let addr = Addr {
            tag_id: be_u32(payload, 0),
            slots: be_u32(payload, 4),
            slot_len: be_u32(payload, 8),
            max_message: be_u32(payload, 12),
            worker_address: payload[20..].to_vec(),
        };
        let address_len = be_u32(payload, 16) as usize;
        if address_len != payload.len() - 20 {
            return err(format!("ADDR says {address_len} address bytes but carries {}", payload.len() - 20));
        }
        if addr.tag_id == 0 {
            return err("ADDR with tag id 0");
        }
        if addr.slots == 0 || addr.slots > MAX_SLOTS {
            return err(format!("ADDR with {} slots (allowed 1..={MAX_SLOTS})", addr.slots));
        }
        if addr.slot_len < MIN_SLOT_LEN || addr.slot_len > MAX_SLOT_LEN {
            return err(format!(
                "ADDR with slot length {} (allowed {MIN_SLOT_LEN}..={MAX_SLOT_LEN})",
                addr.slot_len
            ));
        }
        if addr.max_message < addr.slot_len || addr.max_message > MAX_MESSAGE {
            return err(format!(
                "ADDR with maximum message {} (allowed {}..={MAX_MESSAGE})",
                addr.max_message, addr.slot_len
            ));
        }
        Ok(addr)
    }
}

pub fn encode_u64(value: u64) -> [u8; 8] {
    value.to_be_bytes()
}

pub fn decode_u64(payload: &[u8]) -> Result<u64, ProtocolError> {
    if payload.len() != 8 {
        return err(format!("expected 8 payload bytes, got {}", payload.len()));
    }
    Ok(be_u64(payload, 0))
}

// --- UCX tags -------------------------------------------------------------------------------

pub const KIND_SLOT: u64 = 0;
pub const KIND_BODY: u64 = 2;
const SEQ_BITS: u32 = 30;
pub const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// Mask of every message to one destination (used to discard what was never read).
pub const DEST_MASK: u64 = 0xFFFF_FFFF_0000_0000;

pub fn make_tag(dest: u32, kind: u64, seq: u64) -> u64 {
    ((dest as u64) << 32) | (kind << SEQ_BITS) | (seq & SEQ_MASK)
}

/// Splits a tag into `(dest id, kind, seq)`.
pub fn split_tag(tag: u64) -> (u32, u64, u64) {
    ((tag >> 32) as u32, (tag >> SEQ_BITS) & 3, tag & SEQ_MASK)
}

pub fn encode_credit(dest: u32, consumed: u64) -> [u8; CREDIT_HEADER_LEN] {
    let mut out = [0u8; CREDIT_HEADER_LEN];
    out[0..4].copy_from_slice(&dest.to_be_bytes());
    out[4..12].copy_from_slice(&consumed.to_be_bytes());
    out
}

pub fn decode_credit(header: &[u8]) -> Result<(u32, u64), ProtocolError> {
    if header.len() != CREDIT_HEADER_LEN {
        return err(format!("credit message with a {}-byte header", header.len()));
    }
    Ok((be_u32(header, 0), be_u64(header, 4)))
}

/// 64-bit FNV-1a of a UCX worker address: how a goodbye names its sender.
pub fn worker_digest(address: &[u8]) -> u64 {
    address.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3))
}

pub fn encode_goodbye(address: &[u8]) -> [u8; GOODBYE_HEADER_LEN] {
    worker_digest(address).to_be_bytes()
}

pub fn decode_goodbye(header: &[u8]) -> Result<u64, ProtocolError> {
    if header.len() != GOODBYE_HEADER_LEN {
        return err(format!("goodbye message with a {}-byte header", header.len()));
    }
    Ok(be_u64(header, 0))
}

/// A probe message: `(dest id, kind, token)`.
pub fn encode_probe(dest: u32, kind: u8, token: u64) -> [u8; PROBE_HEADER_LEN] {
    let mut out = [0u8; PROBE_HEADER_LEN];
    out[0..4].copy_from_slice(&dest.to_be_bytes());
    out[4] = kind;
    out[8..16].copy_from_slice(&token.to_be_bytes());
    out
}

pub fn decode_probe(header: &[u8]) -> Result<(u32, u8, u64), ProtocolError> {
    if header.len() != PROBE_HEADER_LEN {
        return err(format!("probe message with a {}-byte header", header.len()));
    }
    let kind = header[4];
    if kind != PROBE_PING && kind != PROBE_PONG {
        return err(format!("probe message of kind {kind}"));
    }
    if header[5..8] != [0, 0, 0] {
        return err("probe message with non-zero reserved bytes");
    }
    Ok((be_u32(header, 0), kind, be_u64(header, 8)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodbye_names_the_worker_by_a_stable_digest() {
        // FNV-1a reference values: the digest must not change between builds or versions.
        assert_eq!(worker_digest(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(worker_digest(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(worker_digest(b"foobar"), 0x8594_4171_f739_67e8);
        let address = [0x11u8, 0x22, 0x33, 0x44, 0x55];
        assert_eq!(decode_goodbye(&encode_goodbye(&address)).unwrap(), worker_digest(&address));
        assert!(decode_goodbye(&[0u8; 7]).is_err());
        assert!(decode_goodbye(&[0u8; 9]).is_err());
    }

    #[test]
    fn header_round_trip_and_validation() {
        let h = encode_header(FrameType::Data, 1234);
        assert_eq!(decode_header(&h).unwrap(), FrameHeader { kind: FrameType::Data, length: 1234 });
        assert!(decode_header(&encode_header(FrameType::Data, 0)).is_err());
        assert!(decode_header(&encode_header(FrameType::Data, MAX_DATA_FRAME + 1)).is_err());
        assert!(decode_header(&encode_header(FrameType::Switch, 1)).is_err());
        assert!(decode_header(&encode_header(FrameType::Fin, 7)).is_err());
        let mut bad = encode_header(FrameType::Hello, 8);
        bad[2] = 1;
        assert!(decode_header(&bad).is_err());
        let mut unknown = encode_header(FrameType::Hello, 8);
        unknown[0] = 99;
        assert!(decode_header(&unknown).unwrap_err().0.contains("unknown frame type 99"));
    }

    #[test]
    fn hello_round_trip_and_validation() {
        let identity = Identity { host: 0x0123_4567_89ab_cdef, namespaces: 7, process: u64::MAX - 1 };
        let ours = Hello::ours(true, true, Role::Server, 42, identity);
        assert_eq!(ours.capabilities, CAP_UCX | CAP_AUTH);
        assert_eq!(Hello::decode(&ours.encode()).unwrap(), ours);
        assert_eq!(ours.encode()[8], 2, "role byte of a server");
        assert_eq!(ours.encode()[20..28], 0x0123_4567_89ab_cdefu64.to_be_bytes());
        assert!(ours.shares_version());
        let future = Hello { version: 7, min_version: 5, ..ours };
        assert!(!Hello::decode(&future.encode()).unwrap().shares_version());
        let old = Hello { version: 1, min_version: 1, ..ours };
        assert!(!Hello::decode(&old.encode()).unwrap().shares_version());
        let inverted = Hello { version: 2, min_version: 3, ..ours };
        assert!(Hello::decode(&inverted.encode()).is_err());
        let mut no_role = ours.encode();
        no_role[8] = 0;
        assert!(Hello::decode(&no_role).unwrap_err().0.contains("role 0"));
        let mut reserved = ours.encode();
        reserved[10] = 1;
        assert!(Hello::decode(&reserved).is_err());
        assert!(Hello::decode(&[0; HELLO_LEN - 1]).is_err());
        assert!(Hello::decode(&[0; 8]).is_err());
        assert_eq!(Role::Client.peer(), Role::Server);
        assert_ne!(Role::Client.mark(), Role::Server.mark());
    }

    #[test]
    fn probe_header() {
        let h = encode_probe(9, PROBE_PONG, u64::MAX);
        assert_eq!(decode_probe(&h).unwrap(), (9, PROBE_PONG, u64::MAX));
        assert!(decode_probe(&h[..15]).is_err());
        assert!(decode_probe(&encode_probe(9, 3, 0)).is_err());
        let mut reserved = encode_probe(9, PROBE_PING, 1);
        reserved[6] = 1;
        assert!(decode_probe(&reserved).is_err());
    }

    #[test]
    fn addr_round_trip_and_validation() {
        let addr = Addr { tag_id: 9, slots: 8, slot_len: 16384, max_message: 1 << 20, worker_address: vec![1, 2, 3] };
        assert_eq!(Addr::decode(&addr.encode()).unwrap(), addr);
        let mut truncated = addr.encode();
        truncated.pop();
        assert!(Addr::decode(&truncated).unwrap_err().0.contains("address bytes"));
        for bad in [
            Addr { tag_id: 0, ..addr.clone() },
            Addr { slots: 0, ..addr.clone() },
            Addr { slots: MAX_SLOTS + 1, ..addr.clone() },
            Addr { slot_len: 1, ..addr.clone() },
            Addr { max_message: 100, ..addr.clone() },
        ] {
            assert!(Addr::decode(&bad.encode()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tags() {
        let tag = make_tag(0xDEAD_BEEF, KIND_BODY, (1 << 30) + 5);
        assert_eq!(split_tag(tag), (0xDEAD_BEEF, KIND_BODY, 5));
        assert_eq!(tag & DEST_MASK, make_tag(0xDEAD_BEEF, KIND_SLOT, 0));
        assert_ne!(make_tag(3, KIND_SLOT, 7), make_tag(3, KIND_BODY, 7));
        assert_ne!(make_tag(3, KIND_SLOT, 7), make_tag(4, KIND_SLOT, 7));
    }

    #[test]
    fn credit_header() {
        let h = encode_credit(42, 1 << 40);
        assert_eq!(decode_credit(&h).unwrap(), (42, 1 << 40));
        assert!(decode_credit(&h[..11]).is_err());
    }
}
