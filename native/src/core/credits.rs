//! Credit accounting of the UCX half of a connection.
//!
//! A receiver posts `slots` receive buffers and so grants the sender `slots` credits: the sender
//! may have at most that many messages in flight that the receiver has not consumed. The receiver
//! counts consumed messages and reports the count back in a credit message; every report frees
//! that many credits at the sender. Counts are absolute
//! (monotonic 64-bit), so reports are idempotent and may arrive in any order.

use super::error::{Error, Result, Status};

/// The sender's side: how many more messages may go out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxCredits {
    slots: u64,
    sent: u64,
    peer_consumed: u64,
}

impl TxCredits {
    pub fn new(slots: u32) -> TxCredits {
        TxCredits { slots: slots as u64, sent: 0, peer_consumed: 0 }
    }

    /// Messages that may be sent now.
    pub fn available(&self) -> u64 {
        (self.slots + self.peer_consumed).saturating_sub(self.sent)
    }

    /// Messages sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Highest consumed count the peer reported.
    pub fn peer_consumed(&self) -> u64 {
        self.peer_consumed
    }

    /// Records one message sent; the caller checked `available() > 0`.
    pub fn on_sent(&mut self) {
        debug_assert!(self.available() > 0);
        self.sent += 1;
    }

    /// Takes a consumed count reported by the peer. A count above what was sent is a protocol
    /// violation; an older (smaller) count is ignored.
    pub fn on_consumed(&mut self, consumed: u64) -> Result<()> {
        if consumed > self.sent {
            return Err(Error::new(
                Status::Protocol,
                format!(
                    "hadroNIO protocol error: peer returned credits for {consumed} messages, only {} were sent",
                    self.sent
                ),
            ));
        }
        self.peer_consumed = self.peer_consumed.max(consumed);
        Ok(())
    }
}

/// The receiver's side: what was consumed and what the peer was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxCredits {
    consumed: u64,
    reported: u64,
    report_every: u64,
}

impl RxCredits {
    /// Reports go out after half the slots were consumed (every message for tiny rings).
    pub fn new(slots: u32) -> RxCredits {
        RxCredits { consumed: 0, reported: 0, report_every: (slots as u64 / 2).max(1) }
    }

    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    pub fn on_consumed(&mut self) {
        self.consumed += 1;
    }

    /// Whether a report should go out now. Below the threshold the sender still holds at least
    /// `slots - report_every` credits, so it never stalls on a report that waits; a sender that
    /// used them all waits for messages the reader has not consumed yet.
    pub fn should_report(&self) -> bool {
        self.consumed - self.reported >= self.report_every
    }

    pub fn unreported(&self) -> bool {
        self.consumed > self.reported
    }

    /// The peer now knows the current count (a report went out).
    pub fn on_reported(&mut self) {
        self.reported = self.consumed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_never_exceeds_the_granted_slots() {
        let mut tx = TxCredits::new(3);
        for _ in 0..3 {
            assert!(tx.available() > 0);
            tx.on_sent();
        }
        assert_eq!(tx.available(), 0);
        tx.on_consumed(2).unwrap();
        assert_eq!(tx.available(), 2);
        // Reports are absolute: an older one changes nothing.
        tx.on_consumed(1).unwrap();
        assert_eq!(tx.available(), 2);
        tx.on_sent();
        tx.on_sent();
        assert_eq!(tx.available(), 0);
        assert_eq!(tx.sent(), 5);
    }

    #[test]
    fn reports_beyond_what_was_sent_are_rejected() {
        let mut tx = TxCredits::new(4);
        tx.on_sent();
        let error = tx.on_consumed(2).unwrap_err();
        assert_eq!(error.status, Status::Protocol);
        assert_eq!(tx.peer_consumed(), 0);
    }

    #[test]
    fn receiver_reports_every_half() {
        let mut rx = RxCredits::new(8);
        assert!(!rx.should_report());
        for _ in 0..3 {
            rx.on_consumed();
            assert!(!rx.should_report());
        }
        assert!(rx.unreported());
        rx.on_consumed();
        assert!(rx.should_report());
        rx.on_reported();
        assert!(!rx.unreported());
        assert!(!rx.should_report());
        let mut tiny = RxCredits::new(2);
        tiny.on_consumed();
        assert!(tiny.should_report());
    }

    #[test]
    fn credits_cycle_without_loss_over_many_rounds() {
        // A sender and a receiver exchanging messages through 4 slots, the receiver reporting as
        // it would: never more than 4 unconsumed messages in flight, nothing stalls.
        let mut tx = TxCredits::new(4);
        let mut rx = RxCredits::new(4);
        let mut in_flight = 0u64;
        for round in 0..10_000u64 {
            while tx.available() > 0 && (round % 3 != 0 || in_flight == 0) {
                tx.on_sent();
                in_flight += 1;
                assert!(in_flight <= 4);
            }
            rx.on_consumed();
            in_flight -= 1;
            if rx.should_report() {
                tx.on_consumed(rx.consumed()).unwrap();
                rx.on_reported();
            }
        }
        assert_eq!(tx.sent() - rx.consumed(), in_flight);
    }
}
