//! `leocc probe` end to end through the command line, inside `leocc emu` (root only; skips
//! otherwise): `leocc trace gen` makes a 40 s Starlink trace with ground truth, `leocc emu`
//! replays it, and `leocc probe --pop $LEOCC_POP --duration ... --log F` runs as the emulator's
//! command. The emulator's event log gives the wall-clock time of trace time zero, which puts
//! the daemon's logged wall times on trace time; detections are scored against
//! `Trace::reconfigurations_us`.

use std::path::Path;
use std::process::Command;

use leocc_probe::replay::{score, Detection};
use leocc_probe::replay::MATCH_TOLERANCE_US;

const BIN: &str = env!("CARGO_BIN_EXE_leocc");

fn skip_reason() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, TUN, raw sockets)");
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("needs /dev/net/tun");
    }
    None
}

/// A fresh folder for one test, holding a 40 s generated Starlink downlink with ground truth
/// (`starlink.trace`, seed `seed`); returns the folder and the trace.
fn folder_with_trace(tag: &str, seed: u32) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("leocc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("starlink.trace");
    let seed = seed.to_string();
    run(Command::new(BIN).args(["trace", "gen", "--profile", "starlink-down", "--duration", "40", "--seed", &seed, "-o"]).arg(&trace));
    (dir, trace)
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().expect("spawn leocc");
    assert!(o.status.success(), "{cmd:?}: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn probe_inside_emu_detects_generated_reconfigurations() {
    if let Some(why) = skip_reason() {
        println!("SKIP probe_inside_emu_detects_generated_reconfigurations: {why}");
        return;
    }
    let (dir, trace_path) = folder_with_trace("probe-cli", 1);
    let events = dir.join("events.jsonl");
    let emu_log = dir.join("emu");
    // The daemon stops 0.3 s before the 40 s trace would loop.
    let probe = format!(
        "exec {BIN} probe --pop \"$LEOCC_POP\" --duration 39.7 --log {} --run-dir {} --no-kernel --quiet",
        events.display(),
        dir.join("run").display()
    );
    let out = run(Command::new(BIN).args(["emu", "--trace"]).arg(&trace_path).arg("--log").arg(&emu_log).args(["--", "sh", "-c", &probe]));
    assert!(out.contains("probing PoP 100.64.0.1"), "{out}");

    let header = std::fs::read_to_string(dir.join("emu.up")).unwrap();
    let base_ms: i64 = header
        .lines()
        .find_map(|l| l.strip_prefix("# base timestamp: "))
        .expect("emulator log header")
        .trim()
        .parse()
        .unwrap();
    let to_trace_us = |wall_s: f64| (wall_s * 1e6) as i64 - base_ms * 1000;
    let dets: Vec<Detection> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "reconfig")
        .map(|v| Detection { start_ns: to_trace_us(v["wall"].as_f64().unwrap()), detect_ns: to_trace_us(v["detect_wall"].as_f64().unwrap()) })
        .collect();
    let trace = leocc_trace::Trace::load(&trace_path).unwrap();
    let truth: Vec<i64> = trace.reconfigurations_us().iter().map(|&t| t as i64).collect();
    assert!(truth.len() >= 2, "{truth:?}");
    let s = score(&dets, &truth, MATCH_TOLERANCE_US);
    println!("leocc probe inside leocc emu: truth {}, detections {}, matched {}, delays {:?} us", s.truth, s.detections, s.matched, s.delays_ns);
    assert!(s.precision >= 0.99 && s.recall >= 0.99, "{s:#?}");
    // Detection follows the outage (45-130 ms) by about one RTT.
    assert!(s.delays_ns.iter().all(|&d| d > 40_000 && d < 500_000), "{:?}", s.delays_ns);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `leocc probe --metrics`: what it serves passes Debian's `promtool check metrics`, and a real
/// Prometheus scraping it every second (both inside the emulated terminal's namespace, next to
/// the daemon) holds the daemon's reconfigurations and `up == 1`.
#[test]
fn probe_metrics_pass_promtool_and_a_real_prometheus_scrapes_them() {
    if let Some(why) = skip_reason() {
        println!("SKIP probe_metrics_pass_promtool_and_a_real_prometheus_scrapes_them: {why}");
        return;
    }
    for tool in ["promtool", "prometheus"] {
        if Command::new(tool).arg("--version").output().is_err() {
            println!("SKIP probe_metrics_pass_promtool_and_a_real_prometheus_scrapes_them: no {tool} (scripts/setup.sh --all installs Debian's prometheus)");
            return;
        }
    }
    let (dir, trace_path) = folder_with_trace("probe-metrics", 2);
    let d = dir.display();
    let script = format!(
        r#"set -e
{BIN} probe --pop "$LEOCC_POP" --duration 26 --run-dir {d}/run --no-kernel --quiet --metrics 127.0.0.1:9464 > {d}/probe.log 2>&1 &
P=$!
printf 'global: {{scrape_interval: 1s}}\nscrape_configs: [{{job_name: leocc-probe, static_configs: [{{targets: ["127.0.0.1:9464"]}}]}}]\n' > {d}/prom.yml
prometheus --config.file={d}/prom.yml --storage.tsdb.path={d}/tsdb --web.listen-address=127.0.0.1:9090 > {d}/prom.log 2>&1 &
Q=$!
sleep 22
exec 3<>/dev/tcp/127.0.0.1/9464
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
cat <&3 > {d}/scrape.http
sed '1,/^\r$/d' {d}/scrape.http > {d}/metrics.txt
promtool check metrics < {d}/metrics.txt > {d}/promtool.out 2>&1 || echo "promtool exit $?" >> {d}/promtool.out
promtool query instant http://127.0.0.1:9090 'leocc_probe_reconfigurations_total' > {d}/query.out 2>&1
promtool query instant http://127.0.0.1:9090 'up{{job="leocc-probe"}}' >> {d}/query.out 2>&1
kill $Q
wait $P
"#
    );
    run(Command::new(BIN).args(["emu", "--trace"]).arg(&trace_path).args(["--", "bash", "-c", &script]));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let metrics = read("metrics.txt");
    assert!(metrics.contains("# TYPE leocc_probe_rtt_seconds histogram"), "{}", read("scrape.http"));
    let lint = read("promtool.out");
    assert!(lint.trim().is_empty(), "promtool check metrics: {lint}");
    let query = read("query.out");
    // `promtool query instant` prints `NAME{labels} => VALUE @[TIME]` per series.
    let value = |name: &str| -> f64 {
        let line = query.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in the query output: {query}\n{}", read("prom.log")));
        line.split("=>").nth(1).unwrap().split('@').next().unwrap().trim().parse().unwrap()
    };
    assert_eq!(value("up{"), 1.0, "Prometheus scraped the daemon");
    assert!(value("leocc_probe_reconfigurations_total") >= 1.0, "the trace's reconfigurations reached Prometheus: {query}");
    let _ = std::fs::remove_dir_all(&dir);
}
