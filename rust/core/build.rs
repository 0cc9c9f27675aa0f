//! Compiles `csrc/shim.c`: plain-function wrappers around the Valgrind
//! client-request macros of the vendored `csrc/valgrind.h` and
//! `csrc/callgrind.h` (Valgrind 3.19.0, BSD-style licence), so building
//! perflab never needs Valgrind's headers installed.

fn main() {
    println!("cargo:rerun-if-changed=csrc");
    cc::Build::new()
        .file("csrc/shim.c")
        .include("csrc")
        .warnings(false)
        .compile("perflab_valgrind_shim");
}
