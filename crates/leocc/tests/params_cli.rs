//! LeoCC's parameters are refused outside the core's range table (issue 34 item 5), on both
//! ways in: the simulator's `--param` and `leocc kernel params --set` (checked before the
//! pinned map is read or written, so this needs neither root nor a loaded leocc).
use std::process::Command;

fn leocc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leocc"))
}

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `leocc args` and returns its stderr, asserting that it failed.
fn refused(args: &[&str]) -> String {
    let o = leocc().args(args).current_dir(root()).output().expect("run leocc");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "leocc {args:?} accepted it: {}{err}", String::from_utf8_lossy(&o.stdout));
    err
}

#[test]
fn sim_refuses_out_of_range_leocc_parameters_naming_the_range() {
    for (setting, range) in [("leocc.min_cwnd=4294967295", "2..=1000"), ("leocc.min_cwnd=0", "2..=1000"), ("leocc.startup_gain=0", "1536..=4096")] {
        let err = refused(&["sim", "--trace", "traces/fiber-30s.trace", "--cc", "leocc", "--duration", "1", "--param", setting]);
        let name = setting.trim_start_matches("leocc.").split('=').next().unwrap();
        assert!(err.contains(&format!("'{name}'")) && err.contains(range), "{setting}: {err}");
    }
}

#[test]
fn sim_runs_leocc_at_the_ends_of_a_range() {
    for setting in ["leocc.min_cwnd=2", "leocc.min_cwnd=1000"] {
        let o = leocc()
            .args(["sim", "--trace", "traces/fiber-30s.trace", "--cc", "leocc", "--duration", "1", "--param", setting])
            .current_dir(root())
            .output()
            .expect("run leocc sim");
        assert!(o.status.success(), "{setting}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn kernel_params_set_refuses_out_of_range_values_before_touching_the_map() {
    let err = refused(&["kernel", "params", "--set", "leocc.min_cwnd=4294967295"]);
    assert!(err.contains("'min_cwnd' = 4294967295 is out of range: it must be in 2..=1000"), "{err}");
    let err = refused(&["kernel", "params", "--set", "leocc.rtt_win_us=0"]);
    assert!(err.contains("'rtt_win_us'") && err.contains("1000..=60000000"), "{err}");
}

#[test]
fn both_ways_in_name_a_mistyped_parameter_and_its_likely_meaning() {
    let err = refused(&["kernel", "params", "--set", "leocc.cycle_lenn=4"]);
    assert!(err.contains("unknown LeoCC parameter 'cycle_lenn' (did you mean cycle_len?)"), "{err}");
    let err = refused(&["sim", "--trace", "traces/fiber-30s.trace", "--cc", "leocc", "--duration", "1", "--param", "leocc.cycle_lenn=4"]);
    assert!(err.contains("unknown LeoCC parameter 'cycle_lenn' (did you mean cycle_len?)"), "{err}");
    let err = refused(&["kernel", "params", "--set", "leocc.cycle_len=six"]);
    assert!(err.contains("'cycle_len' = 'six' is not an integer: it must be in 4..=64"), "{err}");
}

/// docs/algorithm.md's parameter table is what `leocc kernel params --markdown` prints (the
/// way the README's results are checked); needs neither root nor a loaded leocc.
#[test]
fn kernel_params_markdown_is_the_docs_table() {
    let o = leocc().args(["kernel", "params", "--markdown"]).current_dir(root()).output().expect("run leocc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = std::fs::read_to_string(root().join("docs/algorithm.md")).expect("docs/algorithm.md");
    let (begin, end) = ("<!-- params:begin -->\n", "<!-- params:end -->");
    let section = &doc[doc.find(begin).expect("params:begin") + begin.len()..doc.find(end).expect("params:end")];
    assert_eq!(section, String::from_utf8(o.stdout).unwrap(), "docs/algorithm.md is stale: run scripts/update-docs-params.sh");
}

#[test]
fn list_cc_prints_the_registry_and_every_listed_simulator_control_runs() {
    let o = leocc().args(["sim", "--list-cc"]).output().expect("run leocc");
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for c in leocc_base::controls::CONTROLS {
        let line = out.lines().find(|l| l.split_whitespace().next() == Some(c.name)).unwrap_or_else(|| panic!("{} not listed:\n{out}", c.name));
        let engines = line.split("  ").map(str::trim).find(|s| s.starts_with("sim") || s.starts_with("kernel") || s.starts_with("quic")).unwrap_or("");
        assert_eq!(engines.contains("kernel"), c.kernel, "{line}");
        assert_eq!(engines.contains("quic"), c.quic.is_some(), "{line}");
        if c.sim {
            let o = leocc()
                .args(["sim", "--trace", "traces/fiber-30s.trace", "--cc", c.name, "--duration", "1", "--quiet"])
                .current_dir(root())
                .output()
                .expect("run leocc");
            assert!(o.status.success(), "{}: {}", c.name, String::from_utf8_lossy(&o.stderr));
        }
    }
}
