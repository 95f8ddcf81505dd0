//! `leocc eval --executor ray` on a real Ray cluster that the test starts on loopback (a head
//! with no CPUs and two one-CPU workers, so every run is a task shipped to a worker): it must
//! give the very records and time series the local executor gives, and a rerun must skip every
//! run instead of appending it twice. Also `trace import-dataset` → `eval --traces-from`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn leocc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leocc"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leocc-ray-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The venv scripts/setup.sh makes, with Ray in it.
fn venv_bin(name: &str) -> PathBuf {
    repo().join(".venv/bin").join(name)
}

/// A Ray cluster on 127.0.0.1, stopped (every process of it) when dropped.
struct Cluster {
    address: String,
    temp: PathBuf,
}

impl Cluster {
    fn start(port: u16) -> Cluster {
        let ray = venv_bin("ray");
        assert!(ray.exists(), "{} is missing: run scripts/setup.sh (it installs Ray into .venv)", ray.display());
        let temp = scratch("cluster");
        let address = format!("127.0.0.1:{port}");
        let c = Cluster { address: address.clone(), temp: temp.clone() };
        let start = |extra: &[&str]| {
            let out = Command::new(&ray)
                .args(["start", "--node-ip-address=127.0.0.1", "--disable-usage-stats"])
                .args(extra)
                .env("RAY_USAGE_STATS_ENABLED", "0")
                .output()
                .unwrap();
            assert!(out.status.success(), "ray start {extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        let port_arg = format!("--port={port}");
        let temp_arg = format!("--temp-dir={}", temp.display());
        start(&["--head", &port_arg, "--num-cpus=0", "--include-dashboard=false", &temp_arg]);
        let addr_arg = format!("--address={address}");
        start(&[&addr_arg, "--num-cpus=1"]);
        start(&[&addr_arg, "--num-cpus=1"]);
        c
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(venv_bin("ray")).args(["stop", "--force"]).output();
        let _ = std::fs::remove_dir_all(&self.temp);
    }
}

fn eval(out: &Path, extra: &[&str]) -> String {
    let trace = repo().join("traces/starlink-down-60s.trace");
    let o = leocc()
        .args(["eval", "--trace"])
        .arg(&trace)
        .args(["--cc", "leocc,cubic", "--runs", "2", "--queue", "500", "--duration", "8", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "eval {extra:?} failed: {err}");
    err
}

fn records(dir: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    v.sort_by(|a, b| a["key"].as_str().cmp(&b["key"].as_str()));
    v
}

#[test]
fn ray_executor_gives_the_local_results_and_resumes() {
    let cluster = Cluster::start(6391 + (std::process::id() % 500) as u16);
    let d = scratch("eval");
    let (on_ray, local) = (d.join("ray"), d.join("local"));
    let python = venv_bin("python");
    let ray_args = ["--executor", "ray", "--address", &cluster.address, "--python", python.to_str().unwrap()];
    let log = eval(&on_ray, &ray_args);
    assert!(log.contains("4 ran, 0 already done, 0 failed"), "{log}");
    eval(&local, &[]);
    let (r, l) = (records(&on_ray), records(&local));
    assert_eq!(r.len(), 4);
    assert_eq!(r, l, "the simulator is deterministic: Ray must not change a single field");
    // Both folded their runs' time series into one part, sorted by run: byte for byte equal.
    let part = "ts/part-00000.parquet";
    let (a, b) = (std::fs::read(on_ray.join(part)).unwrap(), std::fs::read(local.join(part)).unwrap());
    assert!(!a.is_empty() && a == b, "the time series differ");
    // A rerun finds every run done: nothing is submitted, nothing appended twice.
    let again = eval(&on_ray, &ray_args);
    assert!(again.contains("0 ran, 4 already done"), "{again}");
    assert_eq!(records(&on_ray).len(), 4);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ray_executor_without_a_cluster_fails_clearly_and_keeps_nothing() {
    let d = scratch("nocluster");
    let python = venv_bin("python");
    let trace = repo().join("traces/starlink-down-60s.trace");
    let o = leocc()
        .args(["eval", "--trace"])
        .arg(&trace)
        .args(["--cc", "cubic", "--duration", "2", "--queue", "500", "--executor", "ray", "--address", "127.0.0.1:9", "--python"])
        .arg(&python)
        .arg("-o")
        .arg(&d)
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("the Ray driver exited"), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("results.jsonl")).unwrap_or_default(), "");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ray_executor_with_a_python_without_ray_fails_up_front_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("noray");
    // A Python without Ray, as the system python3 often is, but the same on every machine.
    let python = d.join("python-without-ray");
    std::fs::write(&python, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'ray'\" >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = d.join("out");
    let o = leocc()
        .args(["eval", "--trace"])
        .arg(repo().join("traces/starlink-down-60s.trace"))
        .args(["--cc", "cubic", "--duration", "2", "--executor", "ray", "--address", "127.0.0.1:9", "--python"])
        .arg(&python)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&python.display().to_string()) && err.contains("No module named 'ray'"), "{err}");
    assert!(err.contains("make test"), "{err}");
    assert!(!err.contains("Ray driver"), "failed before any driver or run: {err}");
    assert!(!out.join("results.jsonl").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn import_dataset_then_eval_from_its_index() {
    let d = scratch("dataset");
    let ds = d.join("ds");
    for (folder, n, seed) in [("A_download", 1, 1), ("A_download", 2, 2), ("B_upload", 1, 3)] {
        let t = d.join(format!("g{seed}.trace"));
        let profile = if folder.ends_with("upload") { "starlink-up" } else { "starlink-down" };
        let ok = leocc().args(["trace", "gen", "--profile", profile, "--duration", "6", "--seed"]).arg(seed.to_string()).arg("-o").arg(&t).output().unwrap();
        assert!(ok.status.success());
        let ex = d.join(format!("ex{seed}"));
        assert!(leocc().args(["trace", "export"]).arg(&t).arg("-o").arg(&ex).output().unwrap().status.success());
        let dir = ds.join(folder).join(n.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::rename(ex.join("bw.txt"), dir.join(format!("bw_{n}.txt"))).unwrap();
        std::fs::rename(ex.join("delay.txt"), dir.join(format!("delay_{n}.txt"))).unwrap();
    }
    std::fs::write(ds.join("A_download/2/bw_2.txt"), "0\n5\nx\n").unwrap();
    let out = d.join("imported");
    let o = leocc().args(["trace", "import-dataset"]).arg(&ds).arg("-o").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("skipped A_download/2") && err.contains("bw_2.txt:3:"), "{err}");
    assert!(err.contains("(2 traces; 1 skipped"), "{err}");
    let ev = d.join("ev");
    let o = leocc()
        .args(["eval", "--traces-from"])
        .arg(out.join("index.csv"))
        .args(["--where", "direction=up", "--cc", "cubic", "--queue", "500", "--duration", "3", "-o"])
        .arg(&ev)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = records(&ev);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["trace"], "B_upload-1");
    let _ = std::fs::remove_dir_all(&d);
}
