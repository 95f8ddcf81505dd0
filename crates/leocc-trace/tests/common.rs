//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The real traces folder, or `None` (after printing why the test skips) when absent.
pub fn real(folder: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/real").join(folder);
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("SKIP: {} is absent; this test needs the real traces", p.display());
        None
    }
}

/// A fresh empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leocc-trace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
