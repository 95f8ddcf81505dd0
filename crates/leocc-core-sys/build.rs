//! Compiles core/leocc.c (the one source of the LeoCC algorithm) into a static library.
use std::path::PathBuf;

fn main() {
    let core = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../core");
    for file in ["leocc.c", "leocc.h", "leocc_types.h"] {
        println!("cargo:rerun-if-changed={}", core.join(file).display());
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
