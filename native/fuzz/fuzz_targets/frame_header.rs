//! decode_header on the first 8 bytes: accepted exactly within the documented bounds, round trip.
//! The check is `fuzz_checks::frame_header` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::frame_header(data));
