//! [context][frames after the magic]: header validation, then the payload decoder of each frame's type, in the order the connection's parser takes them.
//! The check is `fuzz_checks::control_frames` in native/tests/fuzz_checks/mod.rs.

#![no_main]

#[path = "../../tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::control_frames(data));
