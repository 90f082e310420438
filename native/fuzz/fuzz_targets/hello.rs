//! Hello::decode: accepted exactly for a well-formed version range overlapping ours, round trip.
//! The check is `fuzz_checks::hello` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::hello(data));
