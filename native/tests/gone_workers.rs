//! No endpoint is created to a worker of this process that is gone. UCX's shared-memory transport
//! finds a worker's receive ring by process id and descriptor number, and a worker created since
//! takes the dead one's numbers: an endpoint from the dead worker's address would map the new
//! worker's ring and write into it. (A process of its own, as every test file: the descriptor
//! numbers it relies on are this process's.)

use std::sync::Arc;

use hadronio::ucx::{Context, ContextOptions, Endpoint, Worker};

#[test]
fn no_endpoint_reaches_a_worker_of_this_process_that_is_gone() {
    let context = Context::new(&ContextOptions { longest: 0, shared_memory: true, retransmit_for: None }).unwrap();
    let client = Worker::new(&context).unwrap();
    let doomed = Worker::new(&context).unwrap();
    let address = doomed.address().to_vec();
    let live = Endpoint::connect(&client, &address, Arc::new(|_| {}));
    assert!(live.is_ok(), "a live worker of this process: {:?}", live.err());
    drop(live);
    drop(doomed);
    // Takes the descriptor numbers the dead worker's segments had.
    let successor = Worker::new(&context).unwrap();
    let error = Endpoint::connect(&client, &address, Arc::new(|_| {})).err().expect("an endpoint to a worker that is gone");
    assert!(error.to_string().contains("gone"), "{error}");
    drop(successor);
}
