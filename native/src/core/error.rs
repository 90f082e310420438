//! Errors of the core and their status codes.
//!
//! Hot-path exports return `>= 0` for a count and a negative [`Status`] code otherwise; the Java
//! side maps each code to the JDK exception it stands for.
//! KEEP IN SYNC: java/src/main/java/dev/hadronio/internal/Status.java

use std::borrow::Cow;
use std::fmt;
use std::io;

use super::protocol::ProtocolError;

/// Negative return codes of the hot-path exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    /// End of stream (reads only).
    Eof = -1,
    /// The channel was closed (`ClosedChannelException`, or `AsynchronousCloseException` when it
    /// happened during the call).
    Closed = -2,
    NotConnected = -3,
    /// The peer vanished or reset the connection (`IOException`).
    Reset = -4,
    /// Writing to a peer that has closed (`IOException: Broken pipe`).
    BrokenPipe = -5,
    /// A timeout set on the socket adaptor expired (`SocketTimeoutException`).
    TimedOut = -6,
    /// The connection was refused (`ConnectException`).
    Refused = -7,
    /// The peer violated the protocol (`IOException`).
    Protocol = -8,
    /// Output was shut down (`ClosedChannelException`).
    OutputShutdown = -9,
    /// Any other I/O error (`IOException`; the message says which).
    Io = -10,
    /// A zero or stale handle (`IllegalStateException`).
    BadHandle = -11,
    /// An invalid argument (`IllegalArgumentException`).
    Invalid = -12,
    /// A connection attempt is still pending (`ConnectionPendingException`).
    Pending = -13,
    /// Internal error, e.g. a caught panic (`Error`).
    Internal = -14,
    /// The local address is in use or not available (`BindException`).
    Bind = -15,
}

impl Status {
    pub const ALL: [Status; 15] = [
        Status::Eof,
        Status::Closed,
        Status::NotConnected,
        Status::Reset,
        Status::BrokenPipe,
        Status::TimedOut,
        Status::Refused,
        Status::Protocol,
        Status::OutputShutdown,
        Status::Io,
        Status::BadHandle,
        Status::Invalid,
        Status::Pending,
        Status::Internal,
        Status::Bind,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Eof => "EOF",
            Status::Closed => "CLOSED",
            Status::NotConnected => "NOT_CONNECTED",
            Status::Reset => "RESET",
            Status::BrokenPipe => "BROKEN_PIPE",
            Status::TimedOut => "TIMED_OUT",
            Status::Refused => "REFUSED",
            Status::Protocol => "PROTOCOL",
            Status::OutputShutdown => "OUTPUT_SHUTDOWN",
            Status::Io => "IO",
            Status::BadHandle => "BAD_HANDLE",
            Status::Invalid => "INVALID",
            Status::Pending => "PENDING",
            Status::Internal => "INTERNAL",
            Status::Bind => "BIND",
        }
    }
}

/// An error with its status and a message for the exception. (A fixed message is not copied: an
/// end of stream is an error that every connection meets.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: Cow<'static, str>,
}

impl Error {
    pub fn new(status: Status, message: impl Into<Cow<'static, str>>) -> Error {
        Error { status, message: message.into() }
    }

    pub fn closed() -> Error {
        Error::new(Status::Closed, "channel is closed")
    }

    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Error {
        Error::new(Status::Invalid, message)
    }

    /// Maps an OS error from a socket call, naming what was being done.
    pub fn io(context: &str, error: &io::Error) -> Error {
        let status = match error.raw_os_error() {
            Some(libc::ECONNREFUSED) => Status::Refused,
            Some(libc::ECONNRESET) | Some(libc::ECONNABORTED) => Status::Reset,
            Some(libc::EPIPE) => Status::BrokenPipe,
            Some(libc::ETIMEDOUT) => Status::TimedOut,
            Some(libc::EADDRINUSE) | Some(libc::EADDRNOTAVAIL) | Some(libc::EACCES) if context == "bind" => Status::Bind,
            _ => Status::Io,
        };
        let text = match error.raw_os_error() {
            Some(libc::ECONNREFUSED) => "Connection refused".to_string(),
            Some(libc::ECONNRESET) => "Connection reset by peer".to_string(),
            Some(libc::EPIPE) => "Broken pipe".to_string(),
            _ => strip_os_error(error),
        };
        if context.is_empty() || status == Status::Bind || status == Status::Refused {
            Error::new(status, text)
        } else {
            Error::new(status, format!("{text} ({context})"))
        }
    }
}

/// `io::Error`'s display adds "(os error N)"; the JDK's messages do not.
fn strip_os_error(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<ProtocolError> for Error {
    fn from(error: ProtocolError) -> Error {
        Error::new(Status::Protocol, error.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_negative() {
        let mut codes: Vec<i32> = Status::ALL.iter().map(|s| s.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), Status::ALL.len());
        assert!(codes.iter().all(|&c| c < 0));
        for (i, status) in Status::ALL.iter().enumerate() {
            assert_eq!(status.code(), -(i as i32) - 1, "{}", status.name());
        }
    }

    #[test]
    fn os_errors_map_to_statuses() {
        let refused = Error::io("connect", &io::Error::from_raw_os_error(libc::ECONNREFUSED));
        assert_eq!(refused.status, Status::Refused);
        assert_eq!(refused.message, "Connection refused");
        let other = Error::io("", &io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(other.status, Status::Io);
        assert!(!other.message.contains("os error"));
    }
}
