//! Compiles abi.c, which includes bpf/leocc_signal.h with the host compiler and returns the
//! layout, constants and helpers the header defines, so that the tests hold the Rust mirror to
//! the header byte for byte (sizes, offsets, the check and confidence functions) instead of
//! searching the header's text.
use std::path::PathBuf;

fn main() {
    // The manifest directory at run time, so two checkouts sharing a target directory never
    // reuse each other's object (as leocc-core-sys does).
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=abi.c");
    println!("cargo:rerun-if-changed=../../bpf/leocc_signal.h");
    cc::Build::new()
        .file(manifest.join("abi.c"))
        .include(manifest.join("../../bpf"))
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("leocc_signal_abi");
}
