//! Every bundled trace is reproducible: the command in its `source` line (also listed in
//! traces/README.md) regenerates identical bytes.

use std::path::PathBuf;

use leocc_trace::gen::{self, Profile};
use leocc_trace::{format, Trace};

/// Reads `--name value` from a command line.
fn arg<'a>(cmd: &'a str, name: &str) -> &'a str {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let i = words.iter().position(|w| *w == name).unwrap_or_else(|| panic!("{name} missing in {cmd:?}"));
    words[i + 1]
}

#[test]
fn bundled_traces_regenerate_byte_identical() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "trace") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let t = Trace::load(&path).unwrap();
        let cmd = t.meta.source.clone();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(readme.contains(&format!("{cmd} -o traces/{file}")), "traces/README.md does not list `{cmd} -o traces/{file}`");
        let profile = Profile::parse(arg(&cmd, "--profile")).unwrap();
        let secs: u64 = arg(&cmd, "--duration").parse().unwrap();
        let seed: u64 = arg(&cmd, "--seed").parse().unwrap();
        let again = gen::generate(profile, secs * 1000, seed, &cmd).unwrap();
        assert!(format::render(&again).as_bytes() == bytes.as_slice(), "{file} differs from its regeneration");
        assert!(bytes.len() < 1_000_000, "{file} is {} bytes; bundled traces stay under 1 MB", bytes.len());
        n += 1;
    }
    assert_eq!(n, 6, "expected the six bundled traces");
}
