//! How a connection has failed, if it has: one value that every operation asks, so that a read,
//! a write and a close agree on what the application sees.

use crate::core::error::Error;

#[derive(Default)]
pub(super) enum Failure {
    #[default]
    None,
    /// Writing to the socket failed (the peer closed or reset): later writes fail with it, and
    /// what the peer sent before can still be read.
    Output(Error),
    /// A plain stream's socket failed (a reset) while only the protocol was read: the next read
    /// that finds no bytes reports it once, as the kernel's channel would at that point. Writes
    /// fail with `output` if one failed before.
    Input { error: Error, output: Option<Error> },
    /// The connection failed for good: every operation reports it.
    Fatal(Error),
}

impl Failure {
    pub(super) fn is_fatal(&self) -> bool {
        matches!(self, Failure::Fatal(_))
    }

    pub(super) fn fatal(&self) -> Option<&Error> {
        match self {
            Failure::Fatal(error) => Some(error),
            _ => None,
        }
    }

    /// Fails the connection for good with `error`; true if it had not failed so before (a first
    /// cause is kept).
    pub(super) fn set_fatal(&mut self, error: Error) -> bool {
        if self.is_fatal() {
            return false;
        }
        *self = Failure::Fatal(error);
        true
    }

    /// The error later writes fail with, if writing failed or the connection did.
    pub(super) fn output(&self) -> Option<&Error> {
        match self {
            Failure::None => None,
            Failure::Output(error) | Failure::Fatal(error) => Some(error),
            Failure::Input { output, .. } => output.as_ref(),
        }
    }

    pub(super) fn writes_failed(&self) -> bool {
        self.output().is_some()
    }

    /// Writing failed: keeps the first such error (`error` is made only if there is none).
    pub(super) fn fail_output(&mut self, error: impl FnOnce() -> Error) {
        match self {
            Failure::None => *self = Failure::Output(error()),
            Failure::Input { output: output @ None, .. } => *output = Some(error()),
            Failure::Output(_) | Failure::Input { .. } | Failure::Fatal(_) => {}
        }
    }

    /// A read of the socket failed: the next read that finds no bytes reports `error`.
    pub(super) fn fail_input(&mut self, error: Error) {
        match std::mem::take(self) {
            Failure::None => *self = Failure::Input { error, output: None },
            Failure::Output(output) => *self = Failure::Input { error, output: Some(output) },
            kept @ (Failure::Input { .. } | Failure::Fatal(_)) => *self = kept,
        }
    }

    pub(super) fn input_pending(&self) -> bool {
        matches!(self, Failure::Input { .. })
    }

    /// The read error still to report, once.
    pub(super) fn take_input(&mut self) -> Option<Error> {
        match std::mem::take(self) {
            Failure::Input { error, output } => {
                *self = output.map_or(Failure::None, Failure::Output);
                Some(error)
            }
            other => {
                *self = other;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Status;

    fn error(text: &'static str) -> Error {
        Error::new(Status::Reset, text)
    }

    #[test]
    fn a_failed_write_fails_later_writes_and_leaves_reads_alone() {
        let mut failure = Failure::default();
        failure.fail_output(|| error("first"));
        failure.fail_output(|| error("second"));
        assert_eq!(failure.output().map(|e| &*e.message), Some("first"));
        assert!(!failure.is_fatal());
        assert!(failure.take_input().is_none());
    }

    #[test]
    fn a_failed_read_is_reported_once_and_keeps_the_write_error() {
        let mut failure = Failure::default();
        failure.fail_output(|| error("write"));
        failure.fail_input(error("read"));
        assert!(failure.input_pending());
        assert_eq!(failure.take_input().map(|e| e.message.into_owned()), Some("read".to_string()));
        assert!(failure.take_input().is_none());
        assert_eq!(failure.output().map(|e| &*e.message), Some("write"));
    }

    #[test]
    fn the_first_fatal_error_stays_and_fails_writes() {
        let mut failure = Failure::default();
        failure.fail_input(error("read"));
        assert!(failure.set_fatal(error("fatal")));
        assert!(!failure.set_fatal(error("later")));
        assert_eq!(failure.fatal().map(|e| &*e.message), Some("fatal"));
        assert_eq!(failure.output().map(|e| &*e.message), Some("fatal"));
        failure.fail_input(error("read again"));
        assert!(!failure.input_pending());
    }
}
