//! The TCP half of a connection's byte stream: reading the peer's stream the way the
//! [`Negotiation`] says (raw bytes, urgent marks, frames) and writing this side's urgent byte and
//! control bytes, through a [`Wire`]. The kernel socket is the wire of a connection; the tests use
//! an in-memory model of TCP with urgent data (`sim`), so the rules about marks are checked
//! without sockets.
//!
//! Urgent marks and ordinary reads (Linux, `SO_OOBINLINE` off): a read stops before a mark once
//! it has read something, and a read that starts at a mark skips the urgent byte and goes on. So
//! while a mark may come, reads are *strict*: look whether the read position is at a mark first,
//! and read no more than the bytes before the mark (`SIOCINQ` counts exactly those). A mark that
//! arrives after that look lies behind the bytes counted, so the read cannot cross it.

use std::io;
use std::time::Instant;

use super::error::Error;
use super::iov::Cursor;
use super::negotiation::{Negotiation, Next, Watch, WriteMode};
use super::protocol::{self, FrameType};
use crate::net::socket::{Socket, MAX_PARTS};

/// Most raw bytes read ahead of the application: to reach an urgent mark, or held back until
/// the peer authenticated.
pub const INBOX_LIMIT: usize = 256 * 1024;

/// Largest single receive into the inbox.
const FILL_MAX: usize = 64 * 1024;

/// An emptied inbox keeps a buffer up to this size; a larger one is freed.
const KEEP_CAPACITY: usize = 4096;

/// A TCP connection's kernel side, as the stream logic uses it.
pub trait Wire {
    /// An ordinary receive. `Ok(0)`: end of stream; `WouldBlock`: nothing now.
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Whether a byte (`Ok(true)`) or the end of the stream (`Ok(false)`) is there, without
    /// taking anything; `WouldBlock` if neither.
    fn peek(&self) -> io::Result<bool>;
    /// The unread urgent byte: `Ok(None)` if there is none (never sent, already read, or
    /// passed), `WouldBlock` if it is announced but has not arrived, `NotConnected` if the
    /// connection was reset (the bytes before the reset stay readable, the urgent byte does not).
    fn recv_urgent(&self) -> io::Result<Option<u8>>;
    /// What the receive side holds, without taking anything.
    fn look(&self) -> io::Result<Look>;
    /// Whether the read position is at an urgent mark.
    fn at_mark(&self) -> io::Result<bool>;
    /// How many bytes can be read before the next mark (all available bytes without one).
    fn before_mark(&self) -> io::Result<usize>;
    fn send(&self, buf: &[u8]) -> io::Result<usize>;
    /// Sends the parts in order (one system call, at most [`MAX_PARTS`] of them); returns how
    /// many bytes were taken.
    fn send_vectored(&self, parts: &[&[u8]]) -> io::Result<usize>;
    /// Sends one urgent byte; `Ok(false)` if the socket cannot take it now.
    fn send_urgent(&self, byte: u8) -> io::Result<bool>;
}

/// What a look at the receive side of a connection finds ([`Wire::look`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// No byte, no urgent byte, no end of the stream, no failure.
    Nothing,
    /// Ordinary bytes at the read position, and no urgent byte that was not read or passed.
    Ordinary,
    /// Anything else: an urgent byte, the end of the stream, a failure.
    Other,
}

/// Raw bytes read from the socket ahead of the application, delivered before anything else.
#[derive(Default)]
pub struct Inbox {
    bytes: Vec<u8>,
    start: usize,
}

impl Inbox {
    pub fn is_empty(&self) -> bool {
        self.start == self.bytes.len()
    }

    pub fn len(&self) -> usize {
        self.bytes.len() - self.start
    }

    fn room(&self) -> usize {
        INBOX_LIMIT.saturating_sub(self.len())
    }

    /// Receives up to `max` bytes from `wire` into the inbox. The bytes land in a buffer of the
    /// thread first, so that the inbox holds only what arrived: a connection that reads a few
    /// bytes now and then keeps no large buffer.
    fn fill<W: Wire>(&mut self, wire: &W, max: usize) -> io::Result<usize> {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; FILL_MAX]);
        }
        if self.start > 0 && self.start == self.bytes.len() {
            self.clear();
        }
        let want = max.min(self.room()).min(FILL_MAX);
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let result = wire.recv(&mut scratch[..want]);
            if let Ok(got) = result {
                self.bytes.extend_from_slice(&scratch[..got]);
            }
            result
        })
    }

    /// Moves bytes into `dst`; returns how many.
    fn drain_into(&mut self, dst: &mut Cursor<'_>) -> usize {
        let n = dst.fill_from(&self.bytes[self.start..]);
        self.start += n;
        if self.start == self.bytes.len() {
            self.clear();
        }
        n
    }

    /// Drops what is held (input shut down, connection failed, or all of it delivered); a large
    /// buffer goes back to the allocator.
    pub fn clear(&mut self) {
        if self.bytes.capacity() > KEEP_CAPACITY {
            self.bytes = Vec::new();
        } else {
            self.bytes.clear();
        }
        self.start = 0;
    }
}

/// The reading side's state kept between calls.
#[derive(Default)]
pub struct RxState {
    pub inbox: Inbox,
    /// Our urgent byte may go only once reads passed the peer's mark at the read position.
    pub pass_due: bool,
    /// The peer's TCP stream ended.
    pub eof: bool,
    /// It ended with a reset, not a FIN: never a clean end, even of a raw stream.
    pub reset: bool,
}

impl RxState {
    /// A read found the end of the peer's TCP stream; an error if that fails the negotiation.
    pub fn ended(&mut self, neg: &mut Negotiation) -> crate::core::error::Result<()> {
        self.eof = true;
        neg.on_eof()
    }
}

/// What a read did.
#[derive(Default, Debug)]
pub struct Read {
    /// Bytes delivered to the application.
    pub delivered: usize,
    /// It stopped because the socket had nothing more (the next edge of readiness matters).
    pub blocked: bool,
}

/// Why reading failed.
#[derive(Debug)]
pub enum Failure {
    /// The socket failed (reset, timed out, ...).
    Io(io::Error),
    /// The peer broke the protocol, or authentication failed.
    Negotiation(Error),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::Negotiation(error)
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Failure {
        Failure::Io(error)
    }
}

fn blocked(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Receives into the first chunk of `dst` (at most `max` bytes).
fn recv_into<W: Wire>(wire: &W, dst: &mut Cursor<'_>, max: usize) -> io::Result<usize> {
    let Some(buf) = dst.chunk_mut(max) else { return Ok(0) };
    let n = wire.recv(buf)?;
    dst.advance(n);
    Ok(n)
}

fn has_room(dst: &Option<&mut Cursor<'_>>) -> bool {
    dst.as_ref().is_some_and(|d| d.remaining() > 0)
}

/// Reads the peer's stream as far as it goes now: raw bytes and DATA payloads into `dst` (or
/// into the inbox while they are held back or a mark must be reached), control frames into the
/// negotiation. Without `dst` it only makes the protocol progress. `now` is asked for the time
/// only where the protocol looks at it: a plain connection's ordinary reads never do.
pub fn read<W: Wire>(
    neg: &mut Negotiation,
    wire: &W,
    rx: &mut RxState,
    mut dst: Option<&mut Cursor<'_>>,
    now: &dyn Fn() -> Instant,
) -> Result<Read, Failure> {
    let mut read = Read::default();
    loop {
        if rx.pass_due && !pass(neg, wire, rx)? {
            return Ok(read);
        }
        if neg.deliverable() && !rx.inbox.is_empty() {
            if let Some(dst) = dst.as_deref_mut().filter(|d| d.remaining() > 0) {
                read.delivered += rx.inbox.drain_into(dst);
                continue;
            }
        }
        if rx.eof || neg.error().is_some() {
            return Ok(read);
        }
        let step = match neg.next() {
            Next::Raw(watch) => raw(neg, wire, rx, &mut dst, watch, now),
            Next::Control(n) => control(neg, wire, n, now()),
            Next::Data(n) => data(neg, wire, rx, &mut dst, n),
        };
        match step {
            Ok(Step::Progress(n)) => read.delivered += n,
            Ok(Step::Delivered(n, short)) => {
                // One receive per call, as the kernel's channels do; a short one drained the
                // socket (a later arrival is a new edge).
                read.delivered += n;
                read.blocked = short;
                return Ok(read);
            }
            Ok(Step::Stop) => return Ok(read),
            Ok(Step::Eof) => rx.ended(neg)?,
            Err(Failure::Io(e)) if blocked(&e) => {
                read.blocked = true;
                return Ok(read);
            }
            Err(Failure::Io(e)) => {
                neg.on_reset()?;
                return Err(Failure::Io(e));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads up to `n` control bytes for the negotiation.
fn control<W: Wire>(neg: &mut Negotiation, wire: &W, n: usize, now: Instant) -> Result<Step, Failure> {
    let mut buf = [0u8; 512];
    let k = n.min(buf.len());
    match wire.recv(&mut buf[..k]) {
        Ok(0) => Ok(Step::Eof),
        Ok(m) => {
            neg.on_control(&buf[..m], now)?;
            Ok(Step::Progress(0))
        }
        Err(e) => Err(Failure::Io(e)),
    }
}

/// Reads up to `n` bytes of a DATA frame: into the application's memory, or held in the inbox
/// while the peer has not authenticated.
fn data<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &mut RxState, dst: &mut Option<&mut Cursor<'_>>, n: usize) -> Result<Step, Failure> {
    if neg.deliverable() && rx.inbox.is_empty() && has_room(dst) {
        let dst = dst.as_deref_mut().ok_or_else(|| io::Error::other("no destination"));
        let want = dst.as_ref().map_or(0, |d| d.chunk(n).map_or(0, |(_, len)| len));
        match dst.and_then(|d| recv_into(wire, d, n)) {
            Ok(0) => Ok(Step::Eof),
            // A whole frame: go on with the next one, so that what arrived together is read
            // together (as the kernel would read a stream).
            Ok(m) if m == n => {
                neg.on_data(m);
                Ok(Step::Progress(m))
            }
            Ok(m) => {
                neg.on_data(m);
                Ok(Step::Delivered(m, m < want))
            }
            Err(e) => Err(Failure::Io(e)),
        }
    } else if !neg.deliverable() && rx.inbox.room() > 0 {
        // DATA of a peer that has not authenticated yet: held.
        match rx.inbox.fill(wire, n) {
            Ok(0) => Ok(Step::Eof),
            Ok(m) => {
                neg.on_data(m);
                Ok(Step::Progress(0))
            }
            Err(e) => Err(Failure::Io(e)),
        }
    } else {
        Ok(Step::Stop)
    }
}

enum Step {
    /// Something happened; `n` bytes went to the application.
    Progress(usize),
    /// `n` bytes went from the socket straight to the application, `true` if fewer than asked.
    Delivered(usize, bool),
    /// Nothing more to do without an application buffer or room.
    Stop,
    Eof,
}

/// One step on the raw stream.
fn raw<W: Wire>(
    neg: &mut Negotiation,
    wire: &W,
    rx: &mut RxState,
    dst: &mut Option<&mut Cursor<'_>>,
    watch: Watch,
    now: &dyn Fn() -> Instant,
) -> Result<Step, Failure> {
    // While a client looks for the answer to its offer, its reads are strict too: a read that
    // started right at the ACCEPT would skip it.
    let strict = watch.strict() || (watch == Watch::Accept && neg.looking(now()));
    if !strict {
        return ordinary(neg, wire, rx, dst);
    }
    // A server's first look, before it read any byte, costs one system call where the client
    // sent no offer (the common case of a plain client): ordinary bytes and no urgent byte mean
    // that the first byte is not an offer (it would have arrived first), and nothing at all means
    // nothing to look at yet (the look below would find no byte and no mark either). An urgent
    // byte, the end of the stream or a failure take the full look.
    if watch == Watch::Offer {
        match wire.look()? {
            Look::Nothing => return Err(Failure::Io(io::ErrorKind::WouldBlock.into())),
            Look::Ordinary if neg.on_ordinary_start() => return Ok(Step::Progress(0)),
            Look::Ordinary | Look::Other => {}
        }
    }
    // A look that finds nothing costs one system call, as a read of the kernel's channels does:
    // a peek, which passes over an urgent byte at the read position (urgent bytes are not
    // inline), so what it finds is at the position or behind a mark there (the look at the
    // mark tells them apart). Where a peer's mark is due, a mark whose byte is all that came
    // waits for the bytes behind it (the peer sends its frames right after its mark; their
    // arrival is a new edge). An offer or an answer may be all that comes for a while (the
    // other side may wait for it): there the mark is looked at anyway.
    let something = match wire.peek() {
        Err(e) if blocked(&e) && watch == Watch::Mark => return Err(Failure::Io(e)),
        Err(e) if blocked(&e) => None,
        other => Some(other?),
    };
    // Bytes before a mark mean that the read position is not at one (`SIOCINQ` counts none
    // there), so the look at the mark is needed only when there are none.
    let limit = if something == Some(true) { wire.before_mark()? } else { 0 };
    if limit == 0 && wire.at_mark()? {
        take_mark(neg, wire, rx, watch, now())?;
        return Ok(Step::Progress(0));
    }
    let Some(something) = something else { return Err(Failure::Io(io::ErrorKind::WouldBlock.into())) };
    if !something {
        return Ok(Step::Eof);
    }
    if limit == 0 {
        // A mark arrived since the look: the next look finds it.
        return Ok(Step::Progress(0));
    }
    if watch == Watch::Offer && neg.on_ordinary_start() {
        // Bytes before any mark at offset 0: the client's first byte is not an offer. From here
        // on its bytes are read as they come, whoever reads them.
        return Ok(Step::Progress(0));
    }
    let to_app = neg.deliverable() && rx.inbox.is_empty() && has_room(dst);
    let n = if to_app {
        let Some(dst) = dst.as_deref_mut() else { return Ok(Step::Stop) };
        recv_into(wire, dst, limit)?
    } else if rx.inbox.room() > 0 && pulls(watch) {
        rx.inbox.fill(wire, limit)?
    } else {
        if pulls(watch) {
            // The bytes held before the peer's mark fill what this side holds.
            neg.on_held_full()?;
        }
        return Ok(Step::Stop);
    };
    if n == 0 {
        return Ok(Step::Eof);
    }
    neg.on_raw(n);
    if !to_app {
        return Ok(Step::Progress(0));
    }
    // Every byte before the mark (or every byte, without one) was read: the socket holds nothing
    // more unless a mark is at the read position now. Left readable, it would be reported so
    // again without a byte to read.
    let drained = n == limit && !wire.at_mark()?;
    Ok(Step::Delivered(n, drained))
}

/// A raw read where no mark matters: straight into the application's memory, when its bytes may
/// be delivered and none wait before them.
fn ordinary<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &RxState, dst: &mut Option<&mut Cursor<'_>>) -> Result<Step, Failure> {
    if !neg.deliverable() || !rx.inbox.is_empty() {
        return Ok(Step::Stop);
    }
    let Some(dst) = dst.as_deref_mut().filter(|d| d.remaining() > 0) else { return Ok(Step::Stop) };
    let want = dst.chunk(usize::MAX).map_or(0, |(_, len)| len);
    match recv_into(wire, dst, usize::MAX)? {
        0 => Ok(Step::Eof),
        n => {
            neg.on_raw(n);
            Ok(Step::Delivered(n, n < want))
        }
    }
}

/// The read position is at an urgent mark: its byte goes to the negotiation, and the mark is to
/// be read past where the protocol says so.
fn take_mark<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &mut RxState, watch: Watch, now: Instant) -> Result<(), Failure> {
    let urgent = match wire.recv_urgent() {
        // Reset: the byte at the mark cannot be read any more. Where the peer's mark is due it is
        // that (the protocol allows no other), and the frames after it must not pass as raw
        // bytes; elsewhere the stream stays raw whatever the byte was.
        Err(e) if e.kind() == io::ErrorKind::NotConnected => (watch == Watch::Mark).then(|| neg.peer_mark()),
        other => other?,
    };
    match urgent {
        Some(byte) => {
            neg.on_mark(byte, true, now)?;
            rx.pass_due = rx.pass_due || neg.must_pass_mark();
        }
        None => {
            // A mark whose byte was read before: the ACCEPT we were reading towards, or one that
            // did not count (a client's own offer coming back). Read past it.
            if watch == Watch::Reach {
                neg.on_mark_reached(now);
            }
            rx.pass_due = true;
        }
    }
    Ok(())
}

/// Whether raw bytes are read ahead into the inbox to make the protocol progress: to reach the
/// ACCEPT's offset or the peer's mark (an application that does not read would otherwise hold
/// the upgrade up). Before an offer, nothing is read ahead: the first byte decides.
fn pulls(watch: Watch) -> bool {
    matches!(watch, Watch::Reach | Watch::Mark)
}

/// Reads past the peer's mark at the read position (into the inbox: the bytes after it are
/// raw, since the peer's next mark can only follow our urgent byte). False if the inbox has no
/// room yet. The stream may end right behind the mark: the negotiation learns of it as of any
/// end.
fn pass<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &mut RxState) -> Result<bool, Failure> {
    if rx.inbox.room() == 0 {
        return Ok(false);
    }
    match rx.inbox.fill(wire, INBOX_LIMIT) {
        Ok(0) => rx.ended(neg)?,
        Ok(n) => neg.on_raw(n),
        Err(e) if blocked(&e) => {}
        Err(e) => return Err(Failure::Io(e)),
    }
    rx.pass_due = false;
    Ok(true)
}

/// Writes the negotiation's urgent byte and control bytes. Returns whether everything went out
/// (`false`: the socket is full, or the urgent byte waits for a mark to be passed).
pub fn flush<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &RxState) -> io::Result<bool> {
    if let Some(byte) = neg.urgent() {
        if rx.pass_due || !wire.send_urgent(byte)? {
            return Ok(false);
        }
        neg.urgent_sent();
    }
    while !neg.out().is_empty() {
        match wire.send(neg.out()) {
            Ok(n) => {
                neg.out().drain(..n);
            }
            Err(e) if blocked(&e) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Most bytes a write keeps back while the peer has not authenticated (as the kernel's send
/// buffer would take them).
pub const HOLD_LIMIT: usize = 64 * 1024;

/// The writing side's state kept between calls.
#[derive(Default)]
pub struct TxState {
    /// Bytes written while [`WriteMode::Hold`]: sent raw or in DATA frames once that ends.
    pub early: Vec<u8>,
}

/// Writes application bytes from `src` the way [`Negotiation::write_mode`] says, except over
/// UCX (the caller's link does that): raw onto the socket, kept back, or in DATA frames after
/// the queued control bytes. Takes what the socket (or the hold) takes now; `src` tells how much.
pub fn write<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &RxState, tx: &mut TxState, src: &mut Cursor<'_>) -> io::Result<()> {
    let mode = neg.write_mode();
    if mode != WriteMode::Hold && !tx.early.is_empty() && !release(neg, wire, rx, tx)? {
        return Ok(());
    }
    match mode {
        WriteMode::Ucx => Ok(()),
        WriteMode::Hold => {
            while tx.early.len() < HOLD_LIMIT {
                let Some(bytes) = src.chunk_bytes(HOLD_LIMIT - tx.early.len()) else { break };
                tx.early.extend_from_slice(bytes);
                src.advance(bytes.len());
            }
            Ok(())
        }
        WriteMode::Raw => {
            // The offer must be the stream's first byte; an answer or mark may wait for a pass.
            if !flush(neg, wire, rx)? && neg.urgent() == Some(protocol::URGENT_OFFER) {
                return Ok(());
            }
            // A gathering write goes out in one system call, as the kernel's own channels send
            // it: one segment where the buffers fit, not one per buffer.
            while src.remaining() > 0 {
                let mut parts: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
                let count = src.gather(&mut parts);
                let total: usize = parts[..count].iter().map(|p| p.len()).sum();
                match wire.send_vectored(&parts[..count]) {
                    Ok(n) => {
                        src.advance(n);
                        if n < total {
                            return Ok(());
                        }
                    }
                    Err(e) if blocked(&e) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
        WriteMode::Frames => {
            if !flush(neg, wire, rx)? {
                return Ok(());
            }
            while let Some(payload) = src.chunk_bytes(protocol::MAX_DATA_FRAME) {
                let len = payload.len();
                let header = protocol::encode_header(FrameType::Data, len);
                match wire.send_vectored(&[&header, payload]) {
                    Ok(sent) => {
                        if sent < header.len() + len {
                            // The frame counts as written; its unsent tail goes first next time.
                            let out = neg.out();
                            if sent < header.len() {
                                out.extend_from_slice(&header[sent..]);
                                out.extend_from_slice(payload);
                            } else {
                                out.extend_from_slice(&payload[sent - header.len()..]);
                            }
                            src.advance(len);
                            return Ok(());
                        }
                        src.advance(len);
                    }
                    Err(e) if blocked(&e) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
    }
}

/// Sends the bytes kept back while the peer had not authenticated, now that it did (in DATA
/// frames) or turned out to be plain (raw). False if they could not all go yet.
pub fn release<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &RxState, tx: &mut TxState) -> io::Result<bool> {
    match neg.write_mode() {
        WriteMode::Hold => Ok(false),
        WriteMode::Frames | WriteMode::Ucx => {
            let early = std::mem::take(&mut tx.early);
            for chunk in early.chunks(protocol::MAX_DATA_FRAME) {
                protocol::put_frame(neg.out(), FrameType::Data, chunk);
            }
            flush(neg, wire, rx)
        }
        WriteMode::Raw => {
            if !flush(neg, wire, rx)? && neg.urgent() == Some(protocol::URGENT_OFFER) {
                return Ok(false);
            }
            while !tx.early.is_empty() {
                match wire.send(&tx.early) {
                    Ok(n) => {
                        tx.early.drain(..n);
                    }
                    Err(e) if blocked(&e) => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
            Ok(true)
        }
    }
}

/// The socket reported urgent data: an ACCEPT (position free) is taken now; for a mark at a
/// position, strict reads find it.
pub fn urgent<W: Wire>(neg: &mut Negotiation, wire: &W, rx: &mut RxState, now: Instant) -> Result<(), Failure> {
    if let Next::Raw(Watch::Accept) = neg.next() {
        match wire.recv_urgent() {
            Ok(Some(byte)) => {
                let at_mark = wire.at_mark()?;
                neg.on_mark(byte, at_mark, now)?;
                rx.pass_due = rx.pass_due || (at_mark && neg.must_pass_mark());
            }
            Ok(None) => {}
            Err(e) if blocked(&e) || e.kind() == io::ErrorKind::NotConnected => {}
            Err(e) => return Err(Failure::Io(e)),
        }
    }
    Ok(())
}

impl Wire for Socket {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Socket::recv(self, buf, false)
    }

    fn peek(&self) -> io::Result<bool> {
        let mut byte = [0u8; 1];
        Socket::recv(self, &mut byte, true).map(|n| n > 0)
    }

    fn recv_urgent(&self) -> io::Result<Option<u8>> {
        Socket::recv_urgent(self)
    }

    fn look(&self) -> io::Result<Look> {
        // Without an unread urgent byte (`POLLPRI`), `POLLIN` means an ordinary byte at the read
        // position: at an urgent byte the kernel reports it only with a byte behind it.
        Ok(match self.receive_events()? {
            0 => Look::Nothing,
            libc::POLLIN => Look::Ordinary,
            _ => Look::Other,
        })
    }

    fn at_mark(&self) -> io::Result<bool> {
        Socket::at_mark(self)
    }

    fn before_mark(&self) -> io::Result<usize> {
        Socket::before_mark(self)
    }

    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        Socket::send(self, buf)
    }

    fn send_vectored(&self, parts: &[&[u8]]) -> io::Result<usize> {
        Socket::send_vectored(self, parts)
    }

    fn send_urgent(&self, byte: u8) -> io::Result<bool> {
        Socket::send_urgent(self, byte)
    }
}

#[cfg(any(test, feature = "sim"))]
pub mod sim;

#[cfg(test)]
mod tests;
