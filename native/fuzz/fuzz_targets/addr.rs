//! Addr::decode: accepted exactly within the documented field bounds, round trip.
//! The check is `fuzz_checks::addr` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::addr(data));
