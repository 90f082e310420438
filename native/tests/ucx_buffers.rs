//! The buffers UCX uses after a call returned (`ucx::SendBuffer`, `RecvBuffer`, `SlotRing`),
//! between two real workers of one process: messages land in the slots they were posted for, and
//! a buffer dropped while its receive waits stays with its worker, which the message that comes
//! later is then written into.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use hadronio::ucx::{Completion, Context, ContextOptions, Endpoint, RecvBuffer, SendBuffer, SlotOwner, SlotRing, Wake, Worker};

/// Counts its wake-ups; owns `slots` completions that wake it.
struct Owner {
    slots: Box<[Completion]>,
    wakes: AtomicUsize,
}

impl Owner {
    fn new(slots: usize) -> Arc<Owner> {
        Arc::new_cyclic(|weak: &Weak<Owner>| {
            let me: *const dyn Wake = weak.as_ptr();
            Owner { slots: (0..slots).map(|_| Completion::new(me, true)).collect(), wakes: AtomicUsize::new(0) }
        })
    }
}

impl Wake for Owner {
    fn wake(&self) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

impl SlotOwner for Owner {
    fn slots(&self) -> &[Completion] {
        &self.slots
    }
}

/// Two workers of one context and an endpoint from the first to the second.
fn pair() -> (Arc<Worker>, Arc<Worker>, Endpoint) {
    let context = Context::new(&ContextOptions { longest: 0, shared_memory: true, retransmit_for: None }).unwrap();
    let sender = Worker::new(&context).unwrap();
    let receiver = Worker::new(&context).unwrap();
    let ep = Endpoint::connect(&sender, receiver.address(), Arc::new(|_| {})).unwrap();
    (sender, receiver, ep)
}

/// Progresses both workers until `done`, at most 10 s.
fn progress_until(workers: &[&Arc<Worker>], done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "the messages did not arrive within 10 s");
        for worker in workers {
            worker.lock().progress();
        }
    }
}

fn send(sender: &Arc<Worker>, ep: &Endpoint, tag: u64, bytes: &[u8]) -> SendBuffer {
    let mut buffer = SendBuffer::new(sender, Owner::new(0), bytes.len(), false);
    buffer.filling().extend_from_slice(bytes);
    buffer.send(ep, &sender.lock(), tag).unwrap();
    buffer
}

#[test]
fn messages_land_in_the_slots_they_were_posted_for() {
    let (sender, receiver, ep) = pair();
    let owner = Owner::new(4);
    let mut ring = SlotRing::new(&receiver, owner.clone(), 256).unwrap();
    for slot in 0..4 {
        ring.post(&receiver.lock(), slot, 100 + slot as u64).unwrap();
        assert_eq!(ring.received(slot), None);
    }
    // In another order than the slots'.
    let buffers: Vec<SendBuffer> = [2u64, 0, 3, 1].iter().map(|&i| send(&sender, &ep, 100 + i, &vec![i as u8; 10 + i as usize])).collect();
    progress_until(&[&sender, &receiver], || (0..4).all(|slot| ring.received(slot).is_some()) && buffers.iter().all(SendBuffer::sent));
    for slot in 0..4 {
        assert_eq!(ring.received(slot).unwrap(), vec![slot as u8; 10 + slot].as_slice());
    }
    assert!(owner.wakes.load(Ordering::SeqCst) >= 1);
    // A slot posted again takes the next message with its new tag.
    ring.post(&receiver.lock(), 1, 200).unwrap();
    let again = send(&sender, &ep, 200, b"again");
    progress_until(&[&sender, &receiver], || ring.received(1).is_some() && again.sent());
    assert_eq!(ring.received(1).unwrap(), b"again");
    assert!(ring.release(&receiver.lock()));
}

#[test]
fn a_receive_dropped_while_it_waits_stays_with_its_worker() {
    let (sender, receiver, ep) = pair();
    let mut buffer = RecvBuffer::new(&receiver, Owner::new(0));
    buffer.recv(&receiver.lock(), 7, 4096).unwrap();
    assert!(buffer.in_flight());
    assert!(!receiver.keeps_memory());
    drop(buffer);
    assert!(receiver.keeps_memory(), "the worker took the buffer UCX may still write");
    let sent = send(&sender, &ep, 7, &[5u8; 3000]);
    progress_until(&[&sender, &receiver], || sent.sent());
    for _ in 0..100 {
        receiver.lock().progress();
    }
    assert_eq!(receiver.lock().probe_length(7), None, "the kept receive took the message");
}

#[test]
fn a_receive_buffer_holds_what_came_and_is_used_again() {
    let (sender, receiver, ep) = pair();
    let mut buffer = RecvBuffer::new(&receiver, Owner::new(0));
    for (round, len) in [(1u64, 40usize), (2, 9000), (3, 1)].into_iter() {
        buffer.recv(&receiver.lock(), round, 16 * 1024).unwrap();
        assert!(buffer.received().is_empty(), "nothing to read while it receives");
        let sent = send(&sender, &ep, round, &vec![round as u8; len]);
        progress_until(&[&sender, &receiver], || buffer.is_done() && sent.sent());
        assert_eq!(buffer.received(), vec![round as u8; len].as_slice());
        assert!(buffer.release(&receiver.lock()));
    }
    assert!(!receiver.keeps_memory());
}
