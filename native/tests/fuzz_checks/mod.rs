//! Checks shared by the cargo-fuzz targets (`native/fuzz/fuzz_targets/*.rs`, which include this
//! file with `#[path]`) and the stable corpus replay test (`native/tests/fuzz_corpus.rs`).
//!
//! Every check takes arbitrary bytes, feeds them to the wire-format decoders of
//! `hadronio::core::protocol` (or, for [`stream`], to a real connection over loopback TCP, or for
//! [`negotiation`], to two negotiations over simulated TCP) and asserts what the protocol
//! documentation promises: a decoder accepts exactly the inputs the documented bounds allow, an
//! accepted value re-encodes to the same bytes, a frame sequence is taken or refused as the
//! connection's parser does, and the parser never delivers a byte that was not application data
//! (raw bytes before the peer's mark or after its RAW, DATA payloads). A violated promise panics,
//! which libFuzzer reports as a crash.
//!
//! The expected results are computed here from the documentation (the frame table in
//! `protocol.rs`), not from `protocol.rs`'s own tables, so that a change of the wire format
//! shows up as a failing corpus replay until this file is updated with it.

#![allow(dead_code)]

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hadronio::config::settings;
use hadronio::config::Settings;
use hadronio::core::conn::{Conn, OPT_SO_LINGER};
use hadronio::core::credits::TxCredits;
use hadronio::core::error::Status;
use hadronio::core::iov::Region;
use hadronio::core::listener::Listener;
use hadronio::core::negotiation::TcpReason;
use hadronio::core::protocol::{self, Addr, Hello, FRAME_HEADER_LEN, MAGIC};

/// The targets, by the names of their corpus directories and fuzz target files.
pub const TARGETS: [(&str, fn(&[u8])); 7] = [
    ("frame_header", frame_header),
    ("hello", hello),
    ("addr", addr),
    ("control_frames", control_frames),
    ("tags_credits", tags_credits),
    ("stream", stream),
    ("negotiation", negotiation),
];

// --- the documented wire format --------------------------------------------------------------

const T_HELLO: u8 = 1;
const T_ADDR: u8 = 2;
const T_DATA: u8 = 3;
const T_SWITCH: u8 = 4;
const T_FIN: u8 = 5;
const T_CREDIT: u8 = 6;
const T_AUTH: u8 = 7;
const T_RAW: u8 = 8;

/// The urgent bytes of the negotiation.
const OFFER: u8 = 0x00;
const ACCEPT: u8 = 0xA1;
const MARK_CLIENT: u8 = 0xA2;
const MARK_SERVER: u8 = 0xA3;

/// Allowed payload lengths of a frame type, from the frame table of the protocol documentation.
fn documented_length_range(kind: u8) -> Option<(usize, usize)> {
    match kind {
        // Versions and capabilities (8 bytes), role and reserved (4), nonce, host, namespaces
        // and process (8 bytes each).
        T_HELLO => Some((44, 44)),
        // 20 bytes of fields and a worker address of at least one byte.
        T_ADDR => Some((21, protocol::MAX_CONTROL_FRAME)),
        T_DATA => Some((1, protocol::MAX_DATA_FRAME)),
        T_SWITCH | T_RAW => Some((0, 0)),
        T_FIN | T_CREDIT => Some((8, 8)),
        // A 16-byte challenge or a 32-byte proof.
        T_AUTH => Some((16, 32)),
        _ => None,
    }
}

fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

// --- single decoders -------------------------------------------------------------------------

/// `decode_header` on the first 8 bytes: accepted exactly when the type is known, flags and
/// reserved bytes are zero and the length is within the type's bounds; an accepted header
/// re-encodes to the same bytes.
pub fn frame_header(data: &[u8]) {
    let Some(bytes) = data.get(..FRAME_HEADER_LEN) else { return };
    let bytes: [u8; FRAME_HEADER_LEN] = bytes.try_into().unwrap();
    check_header(&bytes);
}

fn check_header(bytes: &[u8; FRAME_HEADER_LEN]) -> Option<protocol::FrameHeader> {
    let length = be32(bytes, 4) as usize;
    let valid = bytes[1..4] == [0, 0, 0]
        && documented_length_range(bytes[0]).is_some_and(|(min, max)| (min..=max).contains(&length));
    match protocol::decode_header(bytes) {
        Ok(header) => {
            assert!(valid, "decode_header accepted an invalid header {bytes:02x?} as {header:?}");
            assert_eq!(header.kind as u8, bytes[0], "{bytes:02x?}");
            assert_eq!(header.length, length, "{bytes:02x?}");
            assert_eq!(&protocol::encode_header(header.kind, header.length), bytes, "header round trip");
            Some(header)
        }
        Err(e) => {
            assert!(!valid, "decode_header refused a valid header {bytes:02x?}: {e}");
            assert!(!e.0.is_empty());
            None
        }
    }
}

/// `Hello::decode`: accepted exactly for 44 bytes with a role of 1 or 2, zero reserved bytes and
/// a well-formed version range (whether it overlaps ours is decided afterwards); an accepted
/// HELLO re-encodes to the same bytes.
pub fn hello(data: &[u8]) {
    let _ = check_hello(data);
}

fn check_hello(payload: &[u8]) -> Option<Hello> {
    let valid = payload.len() == 44 && {
        let (version, min_version) = (be16(payload, 0), be16(payload, 2));
        min_version <= version && (payload[8] == 1 || payload[8] == 2) && payload[9..12] == [0, 0, 0]
    };
    match Hello::decode(payload) {
        Ok(hello) => {
            assert!(valid, "Hello::decode accepted {payload:02x?} as {hello:?}");
            assert_eq!(&hello.encode()[..], payload, "HELLO round trip");
            let (version, min_version) = (be16(payload, 0), be16(payload, 2));
            let shared = version >= protocol::MIN_VERSION && min_version <= protocol::VERSION;
            assert_eq!(hello.shares_version(), shared, "{hello:?}");
            Some(hello)
        }
        Err(e) => {
            assert!(!valid, "Hello::decode refused a valid HELLO {payload:02x?}: {e}");
            None
        }
    }
}

/// `Addr::decode`: accepted exactly when the address length field matches the carried bytes (at
/// least one) and every field is within its documented bounds; an accepted ADDR re-encodes to
/// the same bytes.
pub fn addr(data: &[u8]) {
    let _ = check_addr(data);
}

fn check_addr(payload: &[u8]) -> Option<Addr> {
    let valid = payload.len() > 20 && {
        let (tag_id, slots, slot_len, max_message) = (be32(payload, 0), be32(payload, 4), be32(payload, 8), be32(payload, 12));
        be32(payload, 16) as usize == payload.len() - 20
            && tag_id != 0
            && (1..=protocol::MAX_SLOTS).contains(&slots)
            && (protocol::MIN_SLOT_LEN..=protocol::MAX_SLOT_LEN).contains(&slot_len)
            && (slot_len..=protocol::MAX_MESSAGE).contains(&max_message)
    };
    match Addr::decode(payload) {
        Ok(addr) => {
            assert!(valid, "Addr::decode accepted {payload:02x?} as {addr:?}");
            assert_eq!(addr.encode(), payload, "ADDR round trip");
            assert_eq!(addr.worker_address.len(), payload.len() - 20);
            Some(addr)
        }
        Err(e) => {
            assert!(!valid, "Addr::decode refused a valid ADDR {payload:02x?}: {e}");
            None
        }
    }
}

// --- frame sequences -------------------------------------------------------------------------

/// How a peer's TCP stream ends for the side that reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The peer's stream ended while it was raw (a plain peer, or after its RAW): a plain end
    /// of stream.
    Raw,
    /// The bytes ran out while they carried frames (at or inside a frame). With a FIN before:
    /// end of stream; without: the connection was reset.
    Eof,
    /// A protocol violation: the connection fails with this message.
    Error(String),
}

/// What the parser of a connection makes of the bytes a peer sent after its mark.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Stream bytes delivered to the application, in order.
    pub data: Vec<u8>,
    /// The peer's FIN (its UCX message count), if one was taken.
    pub fin: Option<u64>,
    pub end: End,
    /// Complete frames taken.
    pub frames: usize,
}

/// The state of the negotiation's parser that decides which frame may come next (no shared
/// secret configured, this side able to use UCX).
#[derive(Default)]
struct Model {
    /// This side sent ADDR: the peer may SWITCH.
    link: bool,
    hello: bool,
    addr: bool,
    switched: bool,
    raw: bool,
    /// The peer's HELLO is not a peer's (its role is ours): only DATA, RAW and FIN count.
    reflected: bool,
    fin: Option<u64>,
    data: Vec<u8>,
    frames: usize,
    /// Every frame taken, re-encoded from its decoded value.
    reencoded: Vec<u8>,
}

impl Model {
    fn end(self, end: End) -> Outcome {
        Outcome { data: self.data, fin: self.fin, end, frames: self.frames }
    }

    /// A complete control frame, checked in the order the negotiation checks it. `peer_role`:
    /// the role byte a genuine peer's HELLO carries.
    fn on_frame(&mut self, kind: u8, payload: &[u8], peer_role: u8) -> Result<Vec<u8>, String> {
        if self.reflected {
            return match kind {
                T_RAW => {
                    self.raw = true;
                    Ok(Vec::new())
                }
                T_FIN => {
                    self.fin = Some(0);
                    Ok(payload.to_vec())
                }
                _ => Ok(payload.to_vec()),
            };
        }
        match kind {
            T_HELLO => {
                let decoded = Hello::decode(payload);
                let checked = check_hello(payload);
                let hello = decoded.map_err(|e| e.0)?;
                assert_eq!(Some(hello), checked);
                if self.hello {
                    return Err("second HELLO".into());
                }
                self.hello = true;
                if payload[8] != peer_role {
                    self.reflected = true;
                } else if hello.capabilities & protocol::CAP_AUTH != 0 {
                    return Err("the peer requires a shared secret".into());
                }
                Ok(hello.encode().to_vec())
            }
            T_AUTH => Err("AUTH without a shared secret".into()),
            T_ADDR => {
                if !self.hello || self.addr {
                    return Err("ADDR out of order".into());
                }
                self.addr = true;
                let decoded = Addr::decode(payload);
                let checked = check_addr(payload);
                let addr = decoded.map_err(|e| e.0)?;
                assert_eq!(Some(&addr), checked.as_ref());
                Ok(addr.encode())
            }
            T_SWITCH => {
                if self.switched || self.raw || self.fin.is_some() {
                    return Err("SWITCH out of order".into());
                }
                if !self.link {
                    return Err("SWITCH before this side sent ADDR".into());
                }
                self.switched = true;
                Ok(Vec::new())
            }
            T_RAW => {
                if self.switched || self.raw || self.fin.is_some() {
                    return Err("RAW out of order".into());
                }
                self.raw = true;
                Ok(Vec::new())
            }
            T_FIN => {
                if self.fin.is_some() {
                    return Err("second FIN".into());
                }
                let messages = protocol::decode_u64(payload).map_err(|e| e.0)?;
                assert_eq!(&protocol::encode_u64(messages)[..], payload);
                if !self.switched && messages != 0 {
                    return Err("FIN counts UCX messages but the peer never switched".into());
                }
                self.fin = Some(messages);
                Ok(payload.to_vec())
            }
            // CREDIT is never sent; anything else was refused by the header already.
            _ => Err(format!("unexpected frame type {kind}")),
        }
    }
}

/// Parses the frames that follow the magic, as the negotiation does, checking each header and
/// payload with the decoder checks above. `link`: this side sent ADDR, so SWITCH is allowed;
/// `peer_role`: the role byte of a genuine peer's HELLO. Bytes after a RAW frame are raw stream
/// bytes.
pub fn parse_frames(bytes: &[u8], link: bool, peer_role: u8) -> Outcome {
    let mut model = Model { link, ..Model::default() };
    let mut pos = 0;
    let end = loop {
        if model.raw {
            model.data.extend_from_slice(&bytes[pos..]);
            model.reencoded.extend_from_slice(&bytes[pos..]);
            pos = bytes.len();
            break End::Raw;
        }
        let Some(header_bytes) = bytes.get(pos..pos + FRAME_HEADER_LEN) else { break End::Eof };
        let header_bytes: [u8; FRAME_HEADER_LEN] = header_bytes.try_into().unwrap();
        let checked = check_header(&header_bytes);
        let header = match protocol::decode_header(&header_bytes) {
            Ok(header) => header,
            Err(e) => break End::Error(e.0),
        };
        assert_eq!(Some(header), checked);
        let kind = header.kind as u8;
        let body = &bytes[pos + FRAME_HEADER_LEN..];
        if kind == T_DATA {
            if model.switched || model.fin.is_some() {
                break End::Error("DATA after SWITCH, RAW or FIN".into());
            }
            let n = header.length.min(body.len());
            model.data.extend_from_slice(&body[..n]);
            if n < header.length {
                break End::Eof;
            }
            protocol::put_frame(&mut model.reencoded, header.kind, &body[..n]);
        } else {
            let Some(payload) = body.get(..header.length) else { break End::Eof };
            match model.on_frame(kind, payload, peer_role) {
                Ok(reencoded) => protocol::put_frame(&mut model.reencoded, header.kind, &reencoded),
                Err(message) => break End::Error(message),
            }
        }
        pos += FRAME_HEADER_LEN + header.length;
        model.frames += 1;
    };
    // The frames taken are exactly the bytes they came from: nothing skipped, nothing invented.
    assert_eq!(model.reencoded.len(), pos);
    assert!(model.reencoded == bytes[..pos], "re-encoded frames differ from their input");
    model.end(end)
}

/// The outcome for a side reading what a peer sent after its mark: the magic, then frames.
pub fn expect_framed(stream: &[u8], link: bool, peer_role: u8) -> Outcome {
    let n = stream.len().min(MAGIC.len());
    if stream[..n] != MAGIC[..n] {
        return Outcome { data: Vec::new(), fin: None, end: End::Error("not the hadroNIO greeting".into()), frames: 0 };
    }
    if n < MAGIC.len() {
        return Outcome { data: Vec::new(), fin: None, end: End::Eof, frames: 0 };
    }
    parse_frames(&stream[MAGIC.len()..], link, peer_role)
}

/// Frame sequences: `[context][frames after the magic]`, context bit 0 = this side sent ADDR,
/// bit 1 = this side is the client (the peer's HELLO must say server). Each frame goes through
/// header validation and then the payload decoder of its type; the frames taken must re-encode
/// to the input, application bytes come only from DATA frames and from after RAW.
pub fn control_frames(data: &[u8]) {
    let Some((&context, bytes)) = data.split_first() else { return };
    let link = context & 1 != 0;
    let peer_role = if context & 2 != 0 { 2 } else { 1 };
    let outcome = parse_frames(bytes, link, peer_role);
    assert!(outcome.data.len() <= bytes.len());
    if outcome.fin.is_some_and(|m| m != 0) {
        assert!(link, "a FIN counting UCX messages without a switch: {outcome:?}");
    }
    // The same bytes behind the magic read the same.
    let mut stream = MAGIC.to_vec();
    stream.extend_from_slice(bytes);
    let framed = expect_framed(&stream, link, peer_role);
    assert_eq!((&framed.data, framed.fin, &framed.end), (&outcome.data, outcome.fin, &outcome.end));
}

// --- UCX tags and credits --------------------------------------------------------------------

/// Reads fuzz bytes as numbers; zeros once the input is exhausted.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }

    fn u64(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        let taken = self.take(8);
        bytes[..taken.len()].copy_from_slice(taken);
        u64::from_be_bytes(bytes)
    }
}

/// Tags (`split_tag`/`make_tag`), credit and goodbye messages and the sender's credit
/// accounting, driven by a sequence of operations. A genuine (possibly stale) consumed count
/// never moves the count backwards; a forged one is refused beyond what was sent and never raises
/// the credits above the slots. The tags of the receives posted at any moment are distinct.
pub fn tags_credits(data: &[u8]) {
    let mut input = Bytes(data);
    let slots = 1 + input.u8().unwrap_or(0) as u32 % 64;
    let mut tx = TxCredits::new(slots);
    let mut consumed = 0u64;
    let mut reports: Vec<u64> = vec![0];
    while let Some(op) = input.u8() {
        match op % 6 {
            0 => {
                // Send as much as the credits allow, up to a limit.
                for _ in 0..input.u8().unwrap_or(0) {
                    if tx.available() == 0 {
                        break;
                    }
                    tx.on_sent();
                }
                assert!(tx.sent() <= tx.peer_consumed() + slots as u64);
            }
            1 => {
                // The receiver consumes messages and will report the new count.
                consumed = (consumed + input.u8().unwrap_or(0) as u64).min(tx.sent());
                reports.push(consumed);
            }
            2 => {
                // A genuine report, maybe an old one (credit messages may overtake each other).
                let back = input.u8().unwrap_or(0) as usize % reports.len();
                let reported = reports[reports.len() - 1 - back];
                let known = tx.peer_consumed();
                tx.on_consumed(reported).unwrap();
                assert_eq!(tx.peer_consumed(), reported.max(known));
            }
            3 => {
                // A forged report.
                let claimed = input.u64();
                let before = tx;
                match tx.on_consumed(claimed) {
                    Ok(()) => assert!(claimed <= before.sent()),
                    Err(e) => {
                        assert!(claimed > before.sent());
                        assert_eq!(e.status, Status::Protocol);
                        assert_eq!(tx, before, "a refused report changed the credits");
                    }
                }
                // A peer may claim more than it consumed, up to what was sent.
                consumed = consumed.max(tx.peer_consumed());
                reports.push(consumed);
            }
            4 => {
                // A credit active message with a header of any length.
                let len = input.u8().unwrap_or(0) as usize % 16;
                let header = input.take(len);
                match protocol::decode_credit(header) {
                    Ok((dest, count)) => {
                        assert_eq!(header.len(), protocol::CREDIT_HEADER_LEN);
                        assert_eq!(&protocol::encode_credit(dest, count)[..], header);
                    }
                    Err(_) => assert_ne!(header.len(), protocol::CREDIT_HEADER_LEN),
                }
                // The same bytes as a goodbye active message.
                match protocol::decode_goodbye(header) {
                    Ok(digest) => {
                        assert_eq!(header.len(), protocol::GOODBYE_HEADER_LEN);
                        assert_eq!(&digest.to_be_bytes()[..], header);
                    }
                    Err(_) => assert_ne!(header.len(), protocol::GOODBYE_HEADER_LEN),
                }
            }
            _ => {
                // Tags: a round trip through split_tag, and the receives posted at one moment
                // (slot messages `from .. from + slots`, a BODY) all have different tags.
                let tag = input.u64();
                let (dest, kind, seq) = protocol::split_tag(tag);
                assert!(kind <= 3 && seq <= protocol::SEQ_MASK);
                assert_eq!(protocol::make_tag(dest, kind, seq), tag);
                let from = input.u64();
                let mut posted: Vec<u64> =
                    (0..slots as u64).map(|k| protocol::make_tag(dest, protocol::KIND_SLOT, from.wrapping_add(k))).collect();
                posted.push(protocol::make_tag(dest, protocol::KIND_BODY, from));
                let count = posted.len();
                posted.sort_unstable();
                posted.dedup();
                assert_eq!(posted.len(), count, "posted receives share a tag");
                assert!(posted.iter().all(|t| t & protocol::DEST_MASK == (dest as u64) << 32));
            }
        }
        assert!(tx.available() <= slots as u64);
        assert!(tx.peer_consumed() <= tx.sent());
    }
}

// --- the real parser over loopback TCP -------------------------------------------------------

/// A small deterministic generator for piece and buffer sizes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick(&mut self, choices: &[usize]) -> usize {
        choices[(self.next() % choices.len() as u64) as usize]
    }
}

struct Harness {
    listener: Arc<Listener>,
    listener_addr: SocketAddr,
    raw: TcpListener,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        // Inputs whose FIN announces UCX messages that never come end after the liveness bound:
        // keep it short so that each takes a moment, not seconds.
        Settings::install(Settings { liveness_ms: 200, ..Settings::default() });
        let listener = Listener::open(settings()).unwrap();
        listener.bind(&"127.0.0.1:0".parse().unwrap(), 64).unwrap();
        let listener_addr = listener.local_addr().unwrap().unwrap();
        let raw = TcpListener::bind("127.0.0.1:0").unwrap();
        Harness { listener, listener_addr, raw }
    })
}

/// What the connection did, as seen by the application.
struct Observed {
    data: Vec<u8>,
    /// The status that ended reading (or the first failed write); `None`: still waiting.
    end: Option<Status>,
    message: String,
}

impl Observed {
    fn read(&mut self, conn: &Conn, size: usize) -> bool {
        let mut buf = vec![0u8; size];
        let regions = [Region::of(&mut buf)];
        match conn.read(&regions, false, None) {
            Ok(n) => {
                assert!(n <= size, "read {n} bytes into {size}");
                self.data.extend_from_slice(&buf[..n]);
                n > 0
            }
            Err(e) => {
                self.end = Some(e.status);
                self.message = e.message.into_owned();
                false
            }
        }
    }

    fn write(&mut self, conn: &Conn, size: usize) {
        let mut buf = vec![0x5a; size];
        let regions = [Region::of(&mut buf)];
        match conn.write(&regions, false) {
            Ok(n) => assert!(n <= size),
            Err(e) => {
                self.end = Some(e.status);
                self.message = e.message.into_owned();
            }
        }
    }
}

/// Urgent data on a raw socket: `Some(byte)` if one is there to read.
fn recv_urgent(peer: &TcpStream) -> Option<u8> {
    let mut byte = 0u8;
    // SAFETY: reads at most one byte into a local.
    let n = unsafe { libc::recv(peer.as_raw_fd(), &mut byte as *mut u8 as *mut libc::c_void, 1, libc::MSG_OOB | libc::MSG_DONTWAIT) };
    (n == 1).then_some(byte)
}

fn send_urgent(peer: &TcpStream, byte: u8) {
    // SAFETY: sends one byte from a local.
    let n = unsafe { libc::send(peer.as_raw_fd(), &byte as *const u8 as *const libc::c_void, 1, libc::MSG_OOB) };
    assert_eq!(n, 1, "sending urgent data");
}

/// Drives `conn` with reads until the raw peer finds the urgent byte `wanted` (a hadroNIO side
/// answers within a few reads).
fn await_urgent(conn: &Conn, peer: &TcpStream, seen: &mut Observed, wanted: u8) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(byte) = recv_urgent(peer) {
            if byte == wanted {
                return;
            }
        }
        assert!(Instant::now() < deadline, "the connection never sent urgent byte {wanted:#04x}");
        seen.read(conn, 64);
        std::thread::yield_now();
    }
}

/// `[config][bytes]`: a raw TCP peer talks to a real `Conn`, which accepted the connection
/// (config bit 6 clear) or made it (bit 6 set). With config bit 7 the peer speaks hadroNIO's
/// urgent handshake (its offer or answer, then its mark after the connection's) and the bytes
/// follow the magic after its mark; without, it is a plain peer and the bytes are its stream.
/// The bytes go in pieces between non-blocking reads of varying size and, with bit 5, small
/// writes; then the peer closes its socket and the connection is read to its end. What the
/// connection delivers and how it ends must match the model: a plain peer's bytes exactly, then
/// end of stream; for a hadroNIO peer every DATA byte (and every raw byte after RAW) in order and
/// nothing else, end of stream after a FIN, a reset without one, a protocol error (after a
/// prefix of the data) for a violation, and never a hang.
pub fn stream(data: &[u8]) {
    let Some((&config, body)) = data.split_first() else { return };
    let client_role = config & 0x40 != 0;
    let writes = config & 0x20 != 0;
    let hadronio = config & 0x80 != 0;
    let peer_role = if client_role { 2 } else { 1 };
    let mut bytes = Vec::with_capacity(body.len() + MAGIC.len());
    if hadronio {
        bytes.extend_from_slice(&MAGIC);
    }
    bytes.extend_from_slice(body);
    let plain = Outcome { data: body.to_vec(), fin: None, end: End::Raw, frames: 0 };
    let expected = if hadronio { expect_framed(&bytes, false, peer_role) } else { plain.clone() };
    // A write may bind the connection to a hub, which then sends ADDR (after a genuine HELLO):
    // from then on a SWITCH is in order, so either parse may be the right one.
    // (A connection in the client role writes once to offer, see below.)
    let bound = ((writes || client_role) && hadronio).then(|| expect_framed(&bytes, true, peer_role));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((config as u64) << 32 | body.len() as u64));

    let harness = harness();
    let (conn, mut peer) = if client_role {
        let conn = Conn::open(settings()).unwrap();
        assert!(conn.connect(&harness.raw.local_addr().unwrap(), true, Some(Duration::from_secs(5))).unwrap());
        let (peer, _) = harness.raw.accept().unwrap();
        (conn, peer)
    } else {
        let peer = TcpStream::connect(harness.listener_addr).unwrap();
        let conn = harness.listener.accept(true, Some(Duration::from_secs(5))).unwrap().unwrap();
        (conn, peer)
    };
    peer.set_nodelay(true).unwrap();

    let mut seen = Observed { data: Vec::new(), end: None, message: String::new() };
    if hadronio {
        if client_role {
            // A client offers with its first write; answer, wait for its mark, then mark our own
            // stream.
            seen.write(&conn, 1);
            send_urgent(&peer, ACCEPT);
            await_urgent(&conn, &peer, &mut seen, MARK_CLIENT);
            send_urgent(&peer, MARK_SERVER);
        } else {
            send_urgent(&peer, OFFER);
            await_urgent(&conn, &peer, &mut seen, ACCEPT);
            send_urgent(&peer, MARK_CLIENT);
        }
    }
    let mut sent = 0;
    while sent < bytes.len() && seen.end.is_none() {
        let piece = rng.pick(&[1, 2, 3, 5, 8, 13, 64, 512, 4096, usize::MAX]).min(bytes.len() - sent);
        peer.write_all(&bytes[sent..sent + piece]).unwrap();
        sent += piece;
        seen.read(&conn, rng.pick(&[1, 2, 7, 64, 4096, 70_000]));
        if writes && seen.end.is_none() && rng.next() % 4 == 0 {
            seen.write(&conn, rng.pick(&[1, 16, 100]));
        }
    }
    peer.shutdown(Shutdown::Write).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.end.is_none() {
        if !seen.read(&conn, rng.pick(&[1, 7, 64, 4096, 70_000])) && seen.end.is_none() {
            if Instant::now() >= deadline {
                break;
            }
            std::thread::yield_now();
        }
    }
    let _ = conn.set_option(OPT_SO_LINGER, 0);
    conn.close();
    drop(peer);

    let context = || {
        format!(
            "config {config:#04x}, {} bytes {:02x?}\nexpected {expected:?}\ngot {:?} ({}) after {} bytes {:02x?}",
            bytes.len(),
            &bytes[..bytes.len().min(64)],
            seen.end,
            seen.message,
            seen.data.len(),
            &seen.data[..seen.data.len().min(64)]
        )
    };
    let agrees = |expected: &Outcome| {
        let everything = seen.data == expected.data;
        let prefix = expected.data.starts_with(&seen.data);
        match (&expected.end, seen.end) {
            (End::Raw, Some(Status::Eof)) => everything,
            (End::Eof, Some(Status::Eof)) => expected.fin.is_some() && everything,
            // Without a FIN; or with one whose UCX messages never came (none are sent here).
            (End::Eof, Some(Status::Reset)) => expected.fin.map_or(true, |m| m > 0) && everything,
            // Bytes read in the same call as the violation are lost with it; after a FIN the
            // violation may come too late to be seen.
            (End::Error(_), Some(Status::Protocol)) => prefix,
            (End::Error(_), Some(Status::Eof)) => expected.fin.is_some() && everything,
            _ => false,
        }
    };
    let ok = agrees(&expected) || bound.as_ref().is_some_and(|b| agrees(b));
    assert!(ok, "the connection disagrees with the protocol model\n{}\nor, bound: {bound:?}", context());
}

// --- the negotiation over simulated TCP ------------------------------------------------------

/// `[seed: 8][config][client length][server length]`: two negotiations, or one and a plain peer,
/// run the way connections run them over simulated TCP whose arrival steps and partial sends come
/// from the seed. Config bits 0-1: both hadroNIO, a plain client, a plain server, a plain echo
/// server; bit 2: the client has a secret, bit 3: the server has one, bit 4: they differ; bit 5:
/// the UCX path loses probes; bit 6: the client may not upgrade, bit 7: the server may not.
/// Every application reads exactly the bytes the other one wrote, with one exception: when both
/// would upgrade and their secrets differ, both fail, the server application reads nothing, and
/// neither does a client with a secret (a client without one offers with its first write, so
/// where that came after the server's end, both stay plain instead). Nothing hangs (the runners
/// give up and panic).
pub fn negotiation(data: &[u8]) {
    use hadronio::core::protocol::Role;
    use hadronio::core::stream::sim::{against_plain, pattern, policy, run_pair};

    let mut input = Bytes(data);
    let seed = input.u64();
    let config = input.u8().unwrap_or(0);
    let client_len = input.u8().unwrap_or(0) as usize * 97;
    let server_len = input.u8().unwrap_or(0) as usize * 89;
    let client_secret: Option<&[u8]> = (config & 4 != 0).then_some(b"one");
    let server_secret: Option<&[u8]> = (config & 8 != 0).then_some(if config & 16 != 0 { b"two" } else { b"one" });
    match config & 3 {
        0 => {
            let mut client = policy(Role::Client, client_secret, 11);
            let mut server = policy(Role::Server, server_secret, 22);
            if config & 64 != 0 {
                client.upgrade = Err((TcpReason::Rule, "off".into()));
            }
            if config & 128 != 0 {
                server.upgrade = Err((TcpReason::Rule, "off".into()));
            }
            let both = client.upgrade.is_ok() && server.upgrade.is_ok();
            let (client, server) = run_pair(seed, client, server, (client_len, server_len), config & 32 != 0);
            // A client without a secret offers with its first write: where that came after the
            // server's end (or never), the upgrade never started and both sides stayed plain.
            let never_started = client_secret.is_none()
                && client.failed.is_none()
                && server.failed.is_none()
                && client.neg.path().starts_with("tcp")
                && server.neg.path().starts_with("tcp");
            if both && !never_started && client_secret != server_secret {
                assert!(client.failed.is_some() && server.failed.is_some(), "secrets differ: both fail ({:?}, {:?}; {} / {})", client.failed, server.failed, client.neg.path(), server.neg.path());
                assert!(server.received.is_empty(), "the server application read {} bytes of a peer that failed authentication", server.received.len());
                if client_secret.is_some() {
                    assert!(client.received.is_empty(), "the client application read {} bytes", client.received.len());
                }
            } else {
                assert!(client.failed.is_none() && server.failed.is_none(), "{:?} {:?}", client.failed, server.failed);
                assert!(server.received == pattern(client_len, 1), "the server read {} of {client_len} bytes", server.received.len());
                assert!(client.received == pattern(server_len, 2), "the client read {} of {server_len} bytes", client.received.len());
            }
        }
        kind => {
            let (role, secret, echo) = match kind {
                1 => (Role::Server, server_secret, false),
                2 => (Role::Client, client_secret, false),
                _ => (Role::Client, client_secret, true),
            };
            let peer_data = if echo { Vec::new() } else { pattern(server_len, 9) };
            let (side, peer_got) = against_plain(seed, role, secret, client_len, peer_data.clone(), echo);
            assert!(side.failed.is_none(), "{:?}", side.failed);
            assert!(peer_got == pattern(client_len, 1), "the plain peer read {} of {client_len} bytes", peer_got.len());
            let expected = if echo { pattern(client_len, 1) } else { peer_data };
            assert!(side.received == expected, "the hadroNIO side read {} of {} bytes", side.received.len(), expected.len());
        }
    }
}
