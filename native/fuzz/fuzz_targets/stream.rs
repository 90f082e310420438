//! [config][bytes] sent by a raw TCP peer to a real Conn over loopback: delivered bytes and end of stream must match the protocol model.
//! The check is `fuzz_checks::stream` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::stream(data));
