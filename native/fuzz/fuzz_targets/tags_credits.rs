//! UCX tags, counter unwrapping, credit messages and the sender's credit accounting.
//! The check is `fuzz_checks::tags_credits` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::tags_credits(data));
