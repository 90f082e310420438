//! Generates the C header of the JNI exports and lets the library find the UCX libraries that
//! are shipped next to it.

use std::env;
use std::path::PathBuf;

fn main() {
    // Load libucp & co. from the directory the library itself was loaded from.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
    // ucx/logging.rs and ucx/mod.rs call libucs (log handler, signal handlers) directly; the
    // bindings link libucp only.
    println!("cargo:rustc-link-lib=dylib=ucs");
    println!("cargo:rerun-if-changed=src/jni");
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=HADRONIO_HEADER_DIR");

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("native/cbindgen.toml is valid");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("hadronio.h");
    match cbindgen::Builder::new().with_crate(&crate_dir).with_config(config).generate() {
        Ok(bindings) => {
            bindings.write_to_file(&out);
            if let Some(dir) = env::var_os("HADRONIO_HEADER_DIR") {
                let dir = PathBuf::from(dir);
                let _ = std::fs::create_dir_all(&dir);
                bindings.write_to_file(dir.join("hadronio.h"));
            }
        }
        Err(e) => println!("cargo:warning=cbindgen could not generate the header: {e}"),
    }
}
