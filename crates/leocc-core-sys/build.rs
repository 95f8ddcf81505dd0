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
    write_params_fields(&core.join("leocc.h"));
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

/// Writes `OUT_DIR/params_fields.rs`: `params_struct! { FIELD, ... }` with the fields of
/// `LEOCC_PARAMS(X)` in core/leocc.h in their order, so that the Rust mirror of
/// `struct leocc_params` (src/ffi.rs) is generated from the one parameter table. A row is a
/// line of the macro that starts with `X(`, its first argument the field's name.
fn write_params_fields(header: &std::path::Path) {
    let text = std::fs::read_to_string(header).unwrap_or_else(|e| panic!("{}: {e}", header.display()));
    let mut lines = text.lines().skip_while(|l| !l.starts_with("#define LEOCC_PARAMS(X)"));
    let mut fields = Vec::new();
    // The macro's lines run while they end with a backslash.
    for line in lines.by_ref().skip(1) {
        if let Some(row) = line.trim_start().strip_prefix("X(") {
            let name = row.split(',').next().unwrap_or("").trim();
            assert!(
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}: LEOCC_PARAMS row without a field name: {line}",
                header.display()
            );
            fields.push(name.to_string());
        }
        if !line.trim_end().ends_with('\\') {
            break;
        }
    }
    assert!(!fields.is_empty(), "{}: no LEOCC_PARAMS(X) rows found", header.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("params_fields.rs");
    let body = format!("params_struct! {{\n{}}}\n", fields.iter().map(|f| format!("    {f},\n")).collect::<String>());
    std::fs::write(&out, body).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
