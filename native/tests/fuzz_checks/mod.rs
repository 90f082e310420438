//! Checks shared by the cargo-fuzz targets (`native/fuzz/fuzz_targets/*.rs`, which include this
//! file with `#[path]`) and the stable corpus replay test (`native/tests/fuzz_corpus.rs`).
//!
//! Every check takes arbitrary bytes, feeds them to the wire-format decoders of
//! `hadronio::core::protocol` (or, for [`stream`], to a real connection over loopback TCP) and
//! asserts what the protocol documentation promises: a decoder accepts exactly the inputs the
//! documented bounds allow, an accepted value re-encodes to the same bytes, a frame sequence is
//! taken or refused as the connection's parser does, and the parser never delivers a byte that
//! was not in a DATA frame. A violated promise panics, which libFuzzer reports as a crash.
//!
//! The expected results are computed here from the documentation (the frame table in
//! `protocol.rs`), not from `protocol.rs`'s own tables, so that a change of the wire format
//! shows up as a failing corpus replay until this file is updated with it.

#![allow(dead_code)]

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hadronio::config::Settings;
use hadronio::core::conn::{Conn, OPT_SO_LINGER};
use hadronio::core::credits::TxCredits;
use hadronio::core::error::Status;
use hadronio::core::iov::Region;
use hadronio::core::listener::Listener;
use hadronio::core::protocol::{self, Addr, Hello, FRAME_HEADER_LEN, MAGIC};

/// The targets, by the names of their corpus directories and fuzz target files.
pub const TARGETS: [(&str, fn(&[u8])); 6] = [
    ("frame_header", frame_header),
    ("hello", hello),
    ("addr", addr),
    ("control_frames", control_frames),
    ("tags_credits", tags_credits),
    ("stream", stream),
];

// --- the documented wire format --------------------------------------------------------------

const T_HELLO: u8 = 1;
const T_ADDR: u8 = 2;
const T_DATA: u8 = 3;
const T_SWITCH: u8 = 4;
const T_FIN: u8 = 5;
const T_CREDIT: u8 = 6;
const T_AUTH: u8 = 7;

/// Allowed payload lengths of a frame type, from the frame table of the protocol documentation.
fn documented_length_range(kind: u8) -> Option<(usize, usize)> {
    match kind {
        // Versions and capabilities (8 bytes), host and process (8 bytes each).
        T_HELLO => Some((24, 24)),
        // 20 bytes of fields and a worker address of at least one byte.
        T_ADDR => Some((21, protocol::MAX_CONTROL_FRAME)),
        T_DATA => Some((1, protocol::MAX_DATA_FRAME)),
        T_SWITCH => Some((0, 0)),
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

/// `Hello::decode`: accepted exactly for 24 bytes whose version range is well-formed and overlaps
/// ours; an accepted HELLO re-encodes to the same bytes.
pub fn hello(data: &[u8]) {
    let _ = check_hello(data);
}

fn check_hello(payload: &[u8]) -> Option<Hello> {
    let valid = payload.len() == 24 && {
        let (version, min_version) = (be16(payload, 0), be16(payload, 2));
        min_version <= version && version >= protocol::MIN_VERSION && min_version <= protocol::VERSION
    };
    match Hello::decode(payload) {
        Ok(hello) => {
            assert!(valid, "Hello::decode accepted {payload:02x?} as {hello:?}");
            assert_eq!(&hello.encode()[..], payload, "HELLO round trip");
            // The two version ranges overlap: there is a version both sides speak.
            let low = hello.min_version.max(protocol::MIN_VERSION);
            let high = hello.version.min(protocol::VERSION);
            assert!(low <= high, "{hello:?} shares no version with {}..={}", protocol::MIN_VERSION, protocol::VERSION);
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
    /// Not a hadroNIO peer: the bytes are the stream itself (server side), or a server that
    /// closed before it said anything (client side, no bytes).
    Plain,
    /// The bytes ran out (at or inside a frame). With a FIN before: end of stream; without:
    /// the connection was reset.
    Eof,
    /// A protocol violation: the connection fails with this message.
    Error(String),
}

/// What the parser of a connection makes of the bytes a peer sent before closing its socket.
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

/// The parser state of `Conn` that decides which frame may come next.
#[derive(Default)]
struct Model {
    /// This side has a UCX link and sent ADDR: the peer may SWITCH.
    link: bool,
    hello: bool,
    addr: bool,
    switched: bool,
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

    /// A complete control frame, checked in the order `Conn::on_frame` checks it (no shared
    /// secret configured).
    fn on_frame(&mut self, kind: u8, payload: &[u8]) -> Result<Vec<u8>, String> {
        match kind {
            T_HELLO => {
                if self.hello {
                    return Err("second HELLO".into());
                }
                let decoded = Hello::decode(payload);
                let checked = check_hello(payload);
                let hello = decoded.map_err(|e| e.0)?;
                assert_eq!(Some(hello), checked);
                if hello.capabilities & protocol::CAP_AUTH != 0 {
                    return Err("the peer requires a shared secret".into());
                }
                self.hello = true;
                Ok(hello.encode().to_vec())
            }
            T_ADDR => {
                if !self.hello || self.addr {
                    return Err("ADDR out of order".into());
                }
                let decoded = Addr::decode(payload);
                let checked = check_addr(payload);
                let addr = decoded.map_err(|e| e.0)?;
                assert_eq!(Some(&addr), checked.as_ref());
                self.addr = true;
                Ok(addr.encode())
            }
            T_SWITCH => {
                if self.switched || self.fin.is_some() {
                    return Err("SWITCH out of order".into());
                }
                if !self.hello {
                    return Err("SWITCH before HELLO".into());
                }
                if !self.link {
                    return Err("SWITCH before this side sent ADDR".into());
                }
                self.switched = true;
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
            // CREDIT travels only before an endpoint exists and is not taken on TCP; AUTH only
            // with a shared secret; anything else was refused by the header already.
            _ => Err(format!("unexpected frame type {kind}")),
        }
    }
}

/// Parses the frames that follow the magic, as `Conn::pump` does, checking each header and
/// payload with the decoder checks above. `link`: this side sent ADDR, so SWITCH is allowed.
pub fn parse_frames(bytes: &[u8], link: bool) -> Outcome {
    let mut model = Model { link, ..Model::default() };
    let mut pos = 0;
    let end = loop {
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
                break End::Error("DATA after SWITCH or FIN".into());
            }
            let n = header.length.min(body.len());
            model.data.extend_from_slice(&body[..n]);
            if n < header.length {
                break End::Eof;
            }
            protocol::put_frame(&mut model.reencoded, header.kind, &body[..n]);
        } else {
            let Some(payload) = body.get(..header.length) else { break End::Eof };
            match model.on_frame(kind, payload) {
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

/// The outcome for the side that accepted the connection (a server: it learns from the first
/// bytes whether the peer speaks hadroNIO).
pub fn expect_server(stream: &[u8], link: bool) -> Outcome {
    let plain = |end| Outcome { data: stream.to_vec(), fin: None, end, frames: 0 };
    // Anything but the whole magic (a proper prefix of it included, the peer having closed
    // after it) is a plain TCP stream.
    if stream.len() < MAGIC.len() || stream[..MAGIC.len()] != MAGIC {
        return plain(End::Plain);
    }
    parse_frames(&stream[MAGIC.len()..], link)
}

/// The outcome for the side that connected (a client: the server must answer with the magic).
pub fn expect_client(stream: &[u8], link: bool) -> Outcome {
    if stream.is_empty() {
        // The server closed before it said anything: a plain end of stream.
        return Outcome { data: Vec::new(), fin: None, end: End::Plain, frames: 0 };
    }
    let n = stream.len().min(MAGIC.len());
    if stream[..n] != MAGIC[..n] {
        return Outcome { data: Vec::new(), fin: None, end: End::Error("not a hadroNIO server".into()), frames: 0 };
    }
    if n < MAGIC.len() {
        return Outcome { data: Vec::new(), fin: None, end: End::Eof, frames: 0 };
    }
    parse_frames(&stream[MAGIC.len()..], link)
}

/// Frame sequences: `[context][frames after the magic]`, context bit 0 = this side sent ADDR.
/// Each frame goes through header validation and then the payload decoder of its type; the
/// frames taken must re-encode to the input, DATA bytes come only from DATA frames.
pub fn control_frames(data: &[u8]) {
    let Some((&context, bytes)) = data.split_first() else { return };
    let link = context & 1 != 0;
    let outcome = parse_frames(bytes, link);
    assert!(outcome.data.len() <= bytes.len());
    if outcome.fin.is_some_and(|m| m != 0) {
        assert!(link, "a FIN counting UCX messages without a switch: {outcome:?}");
    }
    // The same bytes behind the magic read the same on both sides.
    let mut stream = MAGIC.to_vec();
    stream.extend_from_slice(bytes);
    let server = expect_server(&stream, link);
    let client = expect_client(&stream, link);
    for other in [&server, &client] {
        assert_eq!((&other.data, other.fin, &other.end), (&outcome.data, outcome.fin, &outcome.end));
    }
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

const WINDOW: u64 = 1 << 29;

/// Tags (`split_tag`/`make_tag`), counter unwrapping, credit and goodbye messages and the sender's
/// credit accounting, driven by a sequence of operations. A genuine (possibly stale) consumed count
/// carried in a tag is always recovered exactly; a forged one never moves the count backwards,
/// never beyond what was sent, and never raises the credits above the slots.
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
                // A genuine report, maybe an old one (messages complete in any order).
                let back = input.u8().unwrap_or(0) as usize % reports.len();
                let reported = reports[reports.len() - 1 - back];
                let dest = input.u64() as u32;
                let kind = if input.u8().unwrap_or(0) & 1 == 0 { protocol::KIND_DATA } else { protocol::KIND_LARGE };
                let tag = protocol::make_tag(dest, kind, reported);
                assert_eq!(protocol::split_tag(tag), (dest, kind, reported & protocol::LOW_MASK));
                assert_eq!(tag & protocol::SLOT_MASK, protocol::slot_tag(dest));
                let known = tx.peer_consumed();
                let unwrapped = protocol::unwrap_counter(known, reported & protocol::LOW_MASK);
                assert_eq!(unwrapped, reported.max(known), "known {known}, reported {reported}");
                tx.on_consumed(unwrapped).unwrap();
                assert_eq!(tx.peer_consumed(), reported.max(known));
            }
            3 => {
                // A forged tag.
                let tag = input.u64();
                let (dest, kind, low) = protocol::split_tag(tag);
                assert!(kind <= 3 && low <= protocol::LOW_MASK);
                assert_eq!(protocol::make_tag(dest, kind, low), tag);
                let known = tx.peer_consumed();
                let unwrapped = protocol::unwrap_counter(known, low);
                assert!(unwrapped >= known && unwrapped - known < WINDOW);
                assert!(unwrapped == known || unwrapped & protocol::LOW_MASK == low);
                let before = tx;
                match tx.on_consumed(unwrapped) {
                    Ok(()) => assert!(unwrapped <= before.sent()),
                    Err(e) => {
                        assert!(unwrapped > before.sent());
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
                // Counter unwrapping far from zero: a value less than 2^29 ahead is recovered,
                // one up to 2^29 behind leaves the count alone. (The count must stay below
                // 2^64 - 2^29: `unwrap_counter` adds without overflow check.)
                let known = input.u64() % (u64::MAX - WINDOW);
                let ahead = input.u64() % WINDOW;
                assert_eq!(protocol::unwrap_counter(known, (known + ahead) & protocol::LOW_MASK), known + ahead);
                let behind = (1 + input.u64() % WINDOW).min(known);
                assert_eq!(protocol::unwrap_counter(known, (known - behind) & protocol::LOW_MASK), known);
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
        let listener = Listener::open().unwrap();
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
        let regions = [Region { addr: buf.as_mut_ptr() as usize, len: buf.len() }];
        match conn.read(&regions, false, None) {
            Ok(n) => {
                assert!(n <= size, "read {n} bytes into {size}");
                self.data.extend_from_slice(&buf[..n]);
                n > 0
            }
            Err(e) => {
                self.end = Some(e.status);
                self.message = e.message;
                false
            }
        }
    }

    fn write(&mut self, conn: &Conn, size: usize) {
        let mut buf = vec![0x5a; size];
        let regions = [Region { addr: buf.as_mut_ptr() as usize, len: buf.len() }];
        match conn.write(&regions, false) {
            Ok(n) => assert!(n <= size),
            Err(e) => {
                self.end = Some(e.status);
                self.message = e.message;
            }
        }
    }
}

/// `[config][bytes]`: a raw TCP peer sends the bytes (the magic first if config bit 7 is set) to
/// a real `Conn`, which accepted the connection (config bit 6 clear) or made it (bit 6 set),
/// in pieces between non-blocking reads of varying size and, with bit 5, small writes; then it
/// closes its socket and the connection is read to its end. What the connection delivers and
/// how it ends must match [`expect_server`]/[`expect_client`]: every DATA byte in order and
/// nothing else, end of stream after a FIN, a reset without one, a protocol error (after a
/// prefix of the data) for a violation, and never a hang.
pub fn stream(data: &[u8]) {
    let Some((&config, body)) = data.split_first() else { return };
    let client_role = config & 0x40 != 0;
    let writes = config & 0x20 != 0;
    let mut bytes = Vec::with_capacity(body.len() + MAGIC.len());
    if config & 0x80 != 0 {
        bytes.extend_from_slice(&MAGIC);
    }
    bytes.extend_from_slice(body);
    let expected = if client_role { expect_client(&bytes, false) } else { expect_server(&bytes, false) };
    // A write binds the connection to a hub, which sends ADDR (once the magic came): from then
    // on a SWITCH is in order, so either parse may be the right one.
    let bound = writes.then(|| if client_role { expect_client(&bytes, true) } else { expect_server(&bytes, true) });
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((config as u64) << 32 | body.len() as u64));

    let harness = harness();
    let (conn, mut peer) = if client_role {
        let conn = Conn::open().unwrap();
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
            (End::Plain, Some(Status::Eof)) => everything,
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
