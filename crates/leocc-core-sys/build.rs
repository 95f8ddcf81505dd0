//! Compiles core/leocc.c (the one source of the LeoCC algorithm) into a static library.
use std::path::PathBuf;

fn main() {
    // The manifest directory at run time (not env!(), which would freeze the path of whichever
    // checkout first built this script), and rerun-if-changed paths relative to the package, so
    // that two checkouts sharing a target directory never reuse each other's core object.
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let core = manifest.join("../../core");
    for file in ["leocc.c", "leocc.h", "leocc_types.h"] {
        println!("cargo:rerun-if-changed=../../core/{file}");
    }
    cc::Build::new()
        .file(core.join("leocc.c"))
        .include(&core)
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .opt_level(2)
        .compile("leocc_core");
}
