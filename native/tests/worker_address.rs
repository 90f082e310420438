//! A peer's UCX worker address is untrusted input (it arrives in ADDR): forged, truncated and
//! corrupted addresses must make endpoint creation fail or succeed, never abort the process or
//! read outside the buffer (UCX parses an address without knowing its length).
//!
//! Only the `self` transport is enabled, so that no corrupted address can make UCX reach out to
//! a network address or another process's shared memory.

use std::sync::Arc;

use hadronio::ucx::{check_worker_address, Context, ContextOptions, Endpoint, Worker};

/// xorshift64*: reproducible mutations without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn try_connect(worker: &std::sync::Arc<Worker>, address: &[u8]) -> Result<(), String> {
    let result = Endpoint::connect(worker, address, Arc::new(|_| {}));
    for _ in 0..4 {
        worker.lock().progress();
    }
    result.map(drop).map_err(|e| e.to_string())
}

#[test]
fn forged_worker_addresses_never_abort() {
    // (UCX logs many of the refused addresses as errors; the test only cares that none aborts.)
    std::env::set_var("UCX_TLS", "self");
    let context = Context::new(&ContextOptions { longest: 0, shared_memory: true, retransmit_for: None }).unwrap();
    let worker = Worker::new(&context).unwrap();
    let real = worker.address().to_vec();
    assert!(check_worker_address(&real).is_ok());
    let own = try_connect(&worker, &real);
    println!("the worker's own address: {own:?}");

    // The version UCX asserts on (its first byte's low 4 bits must encode version 1 or 2).
    for version in 2..16u8 {
        let mut forged = real.clone();
        forged[0] = (forged[0] & 0xf0) | version;
        assert!(check_worker_address(&forged).is_err(), "version {version}");
        assert!(try_connect(&worker, &forged).unwrap_err().contains("worker address"));
    }
    assert!(check_worker_address(&[]).is_err());
    assert!(check_worker_address(&real[..1]).is_err());

    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5D);
    let mut accepted = 0;
    // Every truncation of the real address.
    for len in 0..real.len() {
        accepted += try_connect(&worker, &real[..len]).is_ok() as usize;
    }
    // Corrupted bytes, maybe truncated as well.
    for _ in 0..3000 {
        let mut forged = real.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(forged.len());
            forged[at] = if rng.next() & 1 == 0 { forged[at] ^ (1 << rng.below(8)) } else { rng.next() as u8 };
        }
        if rng.next() % 3 == 0 {
            forged.truncate(rng.below(forged.len() + 1));
        }
        accepted += try_connect(&worker, &forged).is_ok() as usize;
    }
    // Random bytes of any length, with a version UCX knows.
    for _ in 0..1000 {
        let mut forged: Vec<u8> = (0..rng.below(300)).map(|_| rng.next() as u8).collect();
        if let Some(first) = forged.first_mut() {
            *first &= 0xf1;
        }
        accepted += try_connect(&worker, &forged).is_ok() as usize;
    }
    // Endpoints that were created are closed when dropped; the worker still works afterwards.
    assert_eq!(try_connect(&worker, &real), own);
    println!("{accepted} forged addresses were accepted by UCX (and closed again)");
}
