//! The README's results section is generated, never hand-edited: it must equal what
//! `leocc report results/main --markdown` prints from the committed results file.

use std::path::Path;
use std::process::Command;

const BEGIN: &str = "<!-- results:begin -->\n";
const END: &str = "<!-- results:end -->";

#[test]
fn readme_results_match_the_committed_results_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let start = readme.find(BEGIN).expect("README has a results:begin marker") + BEGIN.len();
    let end = readme.find(END).expect("README has a results:end marker");
    let section = &readme[start..end];
    let out = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["report", "results/main", "--markdown"])
        .current_dir(&root)
        .output()
        .expect("run leocc report");
    assert!(out.status.success(), "leocc report failed: {}", String::from_utf8_lossy(&out.stderr));
    let generated = String::from_utf8(out.stdout).unwrap();
    assert_eq!(section, generated, "README results are stale: run scripts/update-readme-results.sh");
}
