//! `leocc eval` end to end on the simulator: the matrix runs for both default buffers (500
//! packets and 150 ms), results.jsonl holds one object per run with the run's identity and
//! queue, report.html is written with its plots, and a rerun resumes (finished runs skipped, a
//! run lost to an interruption run again).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn eval(out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--engine", "sim", "--trace", "traces/starlink-up-60s.trace", "--cc", "leocc,cubic"])
        .args(["--scenario", "single,vs-bbr", "--runs", "2", "--duration", "8", "-o"])
        .arg(out)
        .current_dir(root())
        .output()
        .expect("run leocc eval")
}

fn lines(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn eval_runs_the_matrix_writes_the_report_and_resumes() {
    let out = std::env::temp_dir().join(format!("leocc-eval-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = eval(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results = out.join("results.jsonl");
    let recs = lines(&results);
    // ((leocc, cubic) x 2 seeds + one leocc+bbr pair x 2 seeds) x 2 buffers
    assert_eq!(recs.len(), 12);
    for r in &recs {
        for f in ["key", "engine", "trace", "scenario", "label", "throughput_mbps", "rtt_p95_ms", "owd_p95_ms", "utilization", "jain", "queue", "queue_bytes", "queue_ms"] {
            assert!(r.get(f).is_some(), "field {f} missing in {r}");
        }
    }
    // The runs' time series were folded into one Parquet part, each run readable from it.
    let store = leocc_eval::tsstore::Store::open(&out).unwrap();
    assert_eq!(store.parts().len(), 1);
    for r in &recs {
        let rows = store.read(r["key"].as_str().unwrap(), r["timeseries"].as_str().unwrap()).unwrap();
        assert!(rows.len() >= 70, "{} has {} rows", r["key"], rows.len());
    }
    let csvs = std::fs::read_dir(out.join("ts")).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "csv")).count();
    assert_eq!(csvs, 0, "folded CSVs are removed");
    for (q, n) in [("500", 6), ("150ms", 6)] {
        assert_eq!(recs.iter().filter(|r| r["queue"] == q).count(), n, "runs with queue {q}");
    }
    // 500 packets are 750 kB; 150 ms is 150 ms of this trace's mean uplink capacity.
    let shallow = recs.iter().find(|r| r["queue"] == "500").unwrap();
    assert_eq!(shallow["queue_bytes"], 750_000);
    let deep = recs.iter().find(|r| r["queue"] == "150ms").unwrap();
    assert!((deep["queue_ms"].as_f64().unwrap() - 150.0).abs() < 0.1, "{deep}");
    let (rd, rs) = (deep["rtt_p95_ms"].as_f64().unwrap(), shallow["rtt_p95_ms"].as_f64().unwrap());
    assert!(rd > 0.0 && rs > 0.0);
    let pair = recs.iter().find(|r| r["label"] == "leocc+bbr").unwrap();
    assert_eq!(pair["flows"].as_array().unwrap().len(), 2);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("starlink-up-60s") && html.contains("Jain"));
    assert!(html.contains("buffer 500 pkts") && html.contains("buffer 150ms"), "a section per buffer");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("leocc") && stdout.contains("cubic"), "{stdout}");

    // Interrupted: the last run's line is torn. The rerun skips eleven runs and redoes one.
    let text = std::fs::read_to_string(&results).unwrap();
    let keep = text.trim_end().rfind('\n').unwrap() + 1;
    std::fs::write(&results, format!("{}{{\"key\": \"tor", &text[..keep])).unwrap();
    let o = eval(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("11 of 12 runs already"), "{err}");
    assert!(err.contains("[1/1]"), "{err}");
    std::fs::remove_dir_all(&out).unwrap();
}

/// A simulator eval into a folder that holds emulator runs of the same cells and seeds starts
/// each run's flows where the emulator run's did (its `data_start_s`), so that both engines'
/// rows replay the same stretch of the trace; cells without an emulator run stay as asked.
#[test]
fn simulator_eval_starts_where_the_folders_emulator_runs_did() {
    let out = std::env::temp_dir().join(format!("leocc-eval-align-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let run = |cc: &str| {
        Command::new(env!("CARGO_BIN_EXE_leocc"))
            .args(["eval", "--engine", "sim", "--trace", "traces/starlink-down-60s.trace", "--cc", cc])
            .args(["--queue", "150ms", "--runs", "1", "--duration", "5", "-o"])
            .arg(&out)
            .current_dir(root())
            .output()
            .expect("run leocc eval")
    };
    // An emulator run of the cubic cell, seed 1, whose flow began 0.85 s into the trace (what
    // `leocc eval --engine emu` records; its metrics do not matter here).
    let key = "emu|starlink-down-60s|single|cubic|1|d5|q150ms|l-";
    let emu = serde_json::json!({"key": key, "engine": "emu", "trace": "starlink-down-60s",
        "scenario": "single", "label": "cubic", "seed": 1, "queue": "150ms",
        "flows": [{"cc": "cubic", "data_start_s": 0.85}]});
    std::fs::write(out.join("results.jsonl"), format!("{emu}\n")).unwrap();
    let o = run("cubic,bbr");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 simulator runs start their flows where the emulator run"), "{err}");
    let recs = lines(&out.join("results.jsonl"));
    let sim = |label: &str| recs.iter().find(|r| r["engine"] == "sim" && r["label"] == label).unwrap().clone();
    assert_eq!(sim("cubic")["flows_spec"], "cubic@0.85-5.85", "moved to the emulator's start");
    assert_eq!(sim("cubic")["key"], key.replacen("emu", "sim", 1), "and keeps its identity");
    assert_eq!(sim("bbr")["flows_spec"], "bbr@0-5", "no emulator run of this cell: as asked");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn eval_runs_once_per_queue_discipline_and_the_report_names_it() {
    let out = std::env::temp_dir().join(format!("leocc-eval-qdisc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--engine", "sim", "--trace", "traces/starlink-up-60s.trace", "--cc", "cubic,bbr"])
        .args(["--queue", "150ms", "--qdisc", "droptail,codel", "--duration", "8", "-o"])
        .arg(&out)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = lines(&out.join("results.jsonl"));
    assert_eq!(recs.len(), 4);
    for q in ["droptail", "codel"] {
        assert_eq!(recs.iter().filter(|r| r["qdisc"] == q).count(), 2, "runs with qdisc {q}");
    }
    for r in &recs {
        assert_eq!(r["key"].as_str().unwrap().ends_with("|codel"), r["qdisc"] == "codel", "{}", r["key"]);
    }
    let md = Command::new(env!("CARGO_BIN_EXE_leocc")).args(["report", "--markdown"]).arg(&out).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| sim |")).collect();
    assert_eq!(rows.len(), 4, "{md}");
    assert_eq!(rows.iter().filter(|l| l.contains("150ms (1.0 MB), codel |")).count(), 2, "{md}");
    assert_eq!(rows.iter().filter(|l| l.contains("150ms (1.0 MB) |")).count(), 2, "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("buffer 150ms (1.0 MB), codel"), "a section per discipline");
    std::fs::remove_dir_all(&out).unwrap();
}

/// `--dry-run` lists the runs the real command makes (the first test's matrix: 12), one line
/// each under its experiment, and runs and writes nothing.
#[test]
fn eval_dry_run_lists_every_run_and_runs_none() {
    let out = std::env::temp_dir().join(format!("leocc-eval-dry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--dry-run", "--engine", "sim", "--trace", "traces/starlink-up-60s.trace", "--cc", "leocc,cubic"])
        .args(["--scenario", "single,vs-bbr,leotp", "--runs", "2", "--duration", "8", "-o"])
        .arg(&out)
        .current_dir(root())
        .output()
        .expect("run leocc eval --dry-run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let runs: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    assert!(text.contains("matrix: 12 runs") && text.contains("leotp: "), "{text}");
    assert!(runs.contains(&"  sim starlink-up-60s buffer 150ms vs-bbr leocc+bbr seed 2"), "{text}");
    assert!(runs.iter().any(|r| r.starts_with("  leotp headline leotp hops 6")), "{text}");
    assert!(text.ends_with(&format!("{} runs in all; none run (--dry-run)\n", runs.len())), "{text}");
    assert!(!out.exists(), "a dry run writes nothing");
}

/// An emulator dry run checks what every run would check first, without loading anything: with
/// no iperf3 on PATH it refuses instead of listing runs that cannot start; with it, it lists.
#[test]
fn eval_emu_dry_run_checks_the_emulator_first() {
    let dry = |path: &std::ffi::OsStr| {
        Command::new(env!("CARGO_BIN_EXE_leocc"))
            .args(["eval", "--dry-run", "--engine", "emu", "--trace", "traces/starlink-up-60s.trace", "--cc", "cubic"])
            .args(["-o", "/nonexistent/leocc-dry-run"])
            .env("PATH", path)
            .current_dir(root())
            .output()
            .expect("run leocc eval --dry-run --engine emu")
    };
    // SAFETY: geteuid has no preconditions.
    let root_user = unsafe { libc::geteuid() } == 0;
    let empty = std::env::temp_dir().join(format!("leocc-eval-nopath-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let o = dry(empty.as_os_str());
    let err = String::from_utf8_lossy(&o.stderr);
    let why = if root_user { "iperf3 not found" } else { "needs root" };
    assert!(!o.status.success() && err.contains(why), "{err}");
    assert!(o.stdout.is_empty(), "a refused dry run lists nothing");
    std::fs::remove_dir_all(&empty).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    if root_user && std::env::split_paths(&path).any(|d| d.join("iperf3").is_file()) {
        let o = dry(&path);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("none run (--dry-run)"));
    }
}

#[test]
fn eval_rejects_a_bad_trace_before_running_anything() {
    let dir = std::env::temp_dir().join(format!("leocc-eval-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, "5\n3\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--trace"])
        .arg(&bad)
        .arg("-o")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.trace:2"), "{err}");
    assert!(!dir.join("out/results.jsonl").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eval_rejects_typos_in_controls_traces_and_sweeps_before_running_anything() {
    let dir = std::env::temp_dir().join(format!("leocc-eval-typo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cases: [(&[&str], &str); 3] = [
        (&["--cc", "leocc,cubci", "--trace", "traces/starlink-up-60s.trace"], "did you mean cubic?"),
        (&["--cc", "leocc", "--trace", "traces/starlink-up-60.trace"], "did you mean traces/starlink-up-60s.trace?"),
        (&["--sweep", "cubic.betta=0.5,0.7", "--trace", "traces/starlink-up-60s.trace"], "did you mean beta?"),
    ];
    for (args, hint) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
            .arg("eval")
            .args(args)
            .args(["--duration", "5", "-o"])
            .arg(&dir)
            .current_dir(root())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
        // Up front: no run started, and no error about options the user never typed.
        assert!(!err.contains("--flows") && !err.contains("ran,"), "{args:?}: {err}");
        assert!(!dir.join("results.jsonl").exists(), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh output folder for an emulator test, or None (with a SKIP line) when the emulator
/// cannot run here: it needs root and the kernel's BTF.
fn emulator_out(tag: &str) -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("SKIP: the emulator engine needs root and kernel BTF");
        return None;
    }
    let out = std::env::temp_dir().join(format!("leocc-eval-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    Some(out)
}

/// The emulator engine: kernel cubic and LeoCC (BPF) through the emulated link for a few
/// seconds each, measured into the same fields as the simulator.
#[test]
fn eval_emulator_engine_runs_kernel_tcp() {
    let Some(out) = emulator_out("emu") else { return };
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--engine", "emu", "--trace", "traces/starlink-up-60s.trace", "--cc", "cubic,leocc", "--duration", "6", "--queue", "500", "-o"])
        .arg(&out)
        .current_dir(root())
        .output()
        .expect("run leocc eval --engine emu");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = lines(&out.join("results.jsonl"));
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["engine"], "emu");
        let thr = r["throughput_mbps"].as_f64().unwrap();
        let util = r["utilization"].as_f64().unwrap();
        let rtt = r["rtt_p50_ms"].as_f64().unwrap();
        // The uplink trace offers about 45 Mbit/s at about 20 ms base RTT.
        assert!(thr > 1.0 && util <= 1.05, "{r}");
        assert!((15.0..1000.0).contains(&rtt), "{r}");
        // Where the flow's data began in trace time: after its configured start (0 s) by the
        // tools' setup and the handshake, well inside the run.
        let start = r["flows"][0]["data_start_s"].as_f64().unwrap();
        assert!((0.02..3.0).contains(&start), "data_start_s {start}: {r}");
    }
    let leocc = recs.iter().find(|r| r["label"] == "leocc").unwrap();
    assert!(leocc["utilization"].as_f64().unwrap() > 0.5, "LeoCC should fill most of the uplink: {leocc}");

    // A kernel LeoCC flow's time series carries the model's own state, as the simulator's does.
    let ts = out.join("leocc-ts.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["emu-run", "--trace", "traces/starlink-up-60s.trace", "--flows", "leocc@0-4", "--duration", "4", "--queue", "500", "--timeseries"])
        .arg(&ts)
        .current_dir(root())
        .output()
        .expect("run leocc emu-run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&ts).unwrap();
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name} column: {header:?}"));
    let (t, state, pacing) = (col("t_s"), col("state"), col("pacing_mbps"));
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split(',').collect()).filter(|c: &Vec<&str>| c[t].parse::<f64>().unwrap() > 1.5).collect();
    assert!(rows.len() >= 15, "{text}");
    let with_state = rows.iter().filter(|c| c[state].starts_with("mode=") && c[state].contains(";competing=")).count();
    assert!(with_state * 10 >= rows.len() * 9, "{with_state} of {} rows carry the kernel's state:\n{text}", rows.len());
    assert!(rows.iter().any(|c| c[state].starts_with("mode=2;")), "the flow reached cruise:\n{text}");
    assert!(rows.iter().any(|c| c[pacing].parse::<f64>().is_ok_and(|p| p > 1.0)), "{text}");
    std::fs::remove_dir_all(&out).unwrap();
}

/// An emulator sweep sets the BPF LeoCC's parameters for its runs and returns them to the
/// defaults: a window floor of 1,000 packets (the largest the core's range table allows) on a
/// ~150-packet BDP fills the 500-packet queue.
#[test]
fn eval_emulator_sweep_sets_and_resets_the_kernels_leocc_parameters() {
    let Some(out) = emulator_out("emu-sweep") else { return };
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--engine", "emu", "--trace", "traces/starlink-up-60s.trace", "--sweep", "leocc.min_cwnd=1000"])
        .args(["--no-fairness", "--duration", "6", "--queue", "500", "-o"])
        .arg(&out)
        .current_dir(root())
        .output()
        .expect("run leocc eval --engine emu --sweep");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = lines(&out.join("results.jsonl"));
    // The mean, not the p95: the defaults' bursts reach the full queue (112 ms here) at the
    // p95 too, so both p95s can sit at the queue's limit; the floor keeps it full all the time.
    let mean_rtt = |label: &str| recs.iter().find(|r| r["label"] == label).unwrap_or_else(|| panic!("no {label} in {recs:?}"))["rtt_avg_ms"].as_f64().unwrap();
    let (defaults, floored) = (mean_rtt("leocc"), mean_rtt("leocc{min_cwnd=1000}"));
    assert!(floored > defaults + 40.0, "mean RTT {floored:.1} ms with min_cwnd=1000, {defaults:.1} ms with the defaults");
    // The floor keeps 1,000 packets in flight where ~650 fit (BDP and queue): a good part of
    // what it sends is retransmitted. Throughput counts what left the bottleneck, so it cannot
    // exceed the link (the old count, received + retransmitted, gave 2.4 in 20 s runs of this).
    // Utilisation is over the opportunities from the flow's first to its last departure; only
    // the first packet can have used an earlier one (carry-over of at most 1500 bytes, 4e-5 of
    // 6 s at ~45 Mbit/s), hence the 1e-3.
    for r in &recs {
        let util = r["utilization"].as_f64().unwrap();
        assert!(util <= 1.0 + 1e-3 && util > 0.3, "{r}");
        let f = &r["flows"][0];
        let (thr, good) = (f["throughput_mbps"].as_f64().unwrap(), f["goodput_mbps"].as_f64().unwrap());
        // The receiver's payload (1448 of every 1500 bytes) all crossed the bottleneck.
        assert!(good > 0.0 && good <= thr * 1448.0 / 1500.0 + 1e-9, "goodput {good} throughput {thr}: {r}");
        // The flow's connection is nearly all that left the bottleneck in its direction; the
        // rest is iperf3's control connection (a few kB).
        let (conn, all) = (f["bottleneck_bytes"].as_u64().unwrap(), r["bottleneck_departed_bytes"].as_u64().unwrap());
        assert!(conn <= all && all - conn < 100_000, "connection {conn} of {all} departed bytes: {r}");
    }
    let floored_rec = recs.iter().find(|r| r["label"] == "leocc{min_cwnd=1000}").unwrap();
    // With 2,000 packets this was > 0.2; 1,000 overfill the ~650 by about a third (not run
    // since the change: needs the emulator).
    assert!(floored_rec["retrans_rate"].as_f64().unwrap() > 0.1, "the floor should make the sender retransmit a lot: {floored_rec}");
    assert!(out.join("sweep.html").exists());
    {
        // Under the lock emulator runs hold while they load LeoCC and set and reset its
        // parameters (other tests run them in parallel; one may have reloaded LeoCC since).
        let _lock = leocc_kernel::lab::GlobalLock::acquire().unwrap();
        if Path::new(leocc_kernel::params::PARAMS_PIN).exists() {
            assert_eq!(leocc_kernel::params::read_params().unwrap(), None, "the sweep left parameters set");
        }
    }
    // Another kernel control has no parameters to sweep.
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--engine", "emu", "--trace", "traces/starlink-up-60s.trace", "--sweep", "bbr.probe_rtt_interval_ms=1000", "-o"])
        .arg(out.join("bbr"))
        .current_dir(root())
        .output()
        .unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("only LeoCC (BPF) takes parameters"));
    std::fs::remove_dir_all(&out).unwrap();
}

/// SIGINT to eval's process alone (not its group, as `kill -INT PID` does) must not leave its
/// `leocc sim` children running: they die with it.
#[test]
fn sigint_to_eval_alone_leaves_no_sim_running() {
    use leocc_emu::owned::{descendants, processes};
    let out = std::env::temp_dir().join(format!("leocc-eval-sigint-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["eval", "--engine", "sim", "--trace", "traces/starlink-up-60s.trace", "--cc", "cubic"])
        .args(["--scenario", "single", "--runs", "1", "--duration", "36000", "-o"])
        .arg(&out)
        .current_dir(root())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = std::time::Instant::now();
    while descendants(pid).is_empty() && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let sims = descendants(pid);
    assert!(!sims.is_empty(), "eval started no child");
    // SAFETY: signalling our own child, alone.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    child.wait().unwrap();
    let left = || -> Vec<u32> { processes().into_iter().map(|p| p.pid).filter(|p| sims.contains(p)).collect() };
    let start = std::time::Instant::now();
    while !left().is_empty() && start.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let still = left();
    for p in &still {
        // SAFETY: cleaning up after a failed assertion; these are our grandchildren.
        unsafe { libc::kill(*p as i32, libc::SIGKILL) };
    }
    assert!(still.is_empty(), "sim children outlived eval: {still:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// LEOTP's evaluation on a real 6-hop chain: every protocol's one-way delay comes from the
/// chain's two end captures, and for LEOTP it agrees with the producer's own timestamps
/// (two independent measurements of the same segments).
#[test]
fn leotp_eval_measures_every_protocols_delay_on_the_path() {
    let Some(out) = emulator_out("leotp") else { return };
    let o = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(["leotp", "eval", "--experiment", "headline", "--no-leocc", "--duration", "4", "--out"])
        .arg(&out)
        .output()
        .expect("run leocc leotp eval");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = lines(&out.join("results.jsonl"));
    assert_eq!(recs.iter().map(|r| r["variant"].as_str().unwrap()).collect::<Vec<_>>(), ["leotp", "cubic", "bbr"]);
    for r in &recs {
        let delivered = r["delivered_pkts"].as_u64().unwrap();
        let owd = r["owd_mean_ms"].as_f64().unwrap();
        // The ISL chain's one-way propagation delay is at least 2 x 1.8 + 4 x 4.5 ms.
        assert!(delivered > 50 && (21.0..2000.0).contains(&owd), "{r}");
        assert!(r["path_unmatched_pkts"].as_u64().unwrap() * 100 <= delivered, "{r}");
        assert!(r["sender_traffic_ratio"].as_f64().unwrap() >= 1.0, "{r}");
    }
    let leotp = &recs[0];
    let (path, producer) = (leotp["owd_mean_ms"].as_f64().unwrap(), leotp["owd_endpoint_mean_ms"].as_f64().unwrap());
    assert!((path - producer).abs() < 0.2 * path + 5.0, "capture says {path} ms, producer timestamps {producer} ms");
    // 1.5 % loss on each of 6 hops: some segments are recovered, and they arrive later.
    assert!(leotp["retx_pkts"].as_u64().unwrap() > 0, "{leotp}");
    assert!(leotp["retx_owd_mean_ms"].as_f64().unwrap() > path, "{leotp}");
    assert!(out.join("summary.md").exists());
    std::fs::remove_dir_all(&out).unwrap();
}
