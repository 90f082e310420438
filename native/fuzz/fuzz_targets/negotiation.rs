//! [seed][config][lengths]: two negotiations (or one and a plain peer) over simulated TCP with urgent data: every application reads exactly what the other wrote.
//! The check is `fuzz_checks::negotiation` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::negotiation(data));
