//! QUIC flows in the emulator engine: a control named `quic:NAME` (NAME one of
//! `leocc_quic::cc::names`) runs `leocc quic serve` on the sending side and `leocc quic get` on
//! the receiving side instead of iperf3, beside kernel TCP flows. `get` prints iperf3-like
//! JSON, so the engine measures both alike: throughput from the emulator's bottleneck (the
//! server's UDP 5-tuple there), goodput from `get`'s received bytes, the retransmission rate
//! from the sender's lost and sent packets ([`sent_packets`]).
//!
//! For `quic:leocc` the detector runs with a private run directory and the server subscribes
//! to its socket (`leocc_probe::subscribe`): the QUIC path of the signal, not the kernel map.

use std::path::Path;
use std::process::Command;

use leocc_sim::FlowSpec;
use serde_json::Value;

/// Prefix that marks a QUIC control.
pub const PREFIX: &str = "quic:";

/// The quinn-side name of a `quic:NAME` control, or None for a kernel control.
pub fn quic_name(cc: &str) -> Option<&str> {
    cc.strip_prefix(PREFIX)
}

/// Checks a QUIC control's name.
pub fn check(cc: &str) -> Result<(), String> {
    match quic_name(cc) {
        Some(n) => leocc_quic::Cc::parse(n).map(|_| ()),
        None => Ok(()),
    }
}

/// `leocc_sim::parse_flows` accepting `quic:NAME` controls: each item is parsed with a kernel
/// stand-in name (the grammar of counts and times is the simulator's), then renamed.
pub fn parse_flows(
    spec: &str,
    default_cc: &str,
    duration_us: u64,
) -> Result<Vec<FlowSpec>, String> {
    if spec.trim().parse::<u32>().is_ok() {
        return leocc_sim::parse_flows(spec, default_cc, duration_us);
    }
    let mut out = Vec::new();
    for item in spec.split(',') {
        let (head, times) = match item.split_once('@') {
            Some((h, t)) => (h, Some(t)),
            None => (item, None),
        };
        let (count, name) = match head.split_once('*') {
            Some((k, n)) => (Some(k), n.trim()),
            None => (None, head.trim()),
        };
        if quic_name(name).is_none() {
            out.extend(leocc_sim::parse_flows(item, default_cc, duration_us)?);
            continue;
        }
        check(name).map_err(|e| format!("--flows item '{item}': {e}"))?;
        let stand_in = format!(
            "{}cubic{}",
            count.map_or(String::new(), |k| format!("{k}*")),
            times.map_or(String::new(), |t| format!("@{t}"))
        );
        for mut f in leocc_sim::parse_flows(&stand_in, default_cc, duration_us)? {
            f.cc = name.to_string();
            out.push(f);
        }
    }
    Ok(out)
}

/// Arguments of the server (the sender) of one QUIC flow lasting `seconds`: the server's
/// `--max-duration` is the flow's length plus [`MAX_DURATION_SLACK_S`], so a long run is
/// never cut by the server's default limit.
pub fn serve_args(
    cmd: &mut Command,
    cc: &str,
    listen: &str,
    cert: &Path,
    events_socket: &Path,
    seconds: f64,
) {
    let name = quic_name(cc).unwrap_or(cc);
    cmd.args([
        "quic", "serve", "--once", "--listen", listen, "--cc", name, "--cert",
    ])
    .arg(cert)
    .args(["--events", "socket", "--events-socket"])
    .arg(events_socket)
    .args([
        "--max-duration",
        &(seconds.ceil() + MAX_DURATION_SLACK_S).to_string(),
    ]);
}

/// Seconds the server allows beyond the flow's length (the client's clock starts later).
pub const MAX_DURATION_SLACK_S: f64 = 5.0;

/// Arguments of the client (the receiver, which prints the JSON) of one QUIC flow.
pub fn get_args(cmd: &mut Command, server: &str, cert: &Path, seconds: f64, interval_s: f64) {
    cmd.args(["quic", "get", server, "-J", "--cert"])
        .arg(cert)
        .args(["-t", &seconds.to_string(), "-i", &interval_s.to_string()]);
}

/// Packets the QUIC sender sent (to rate its losses), None for iperf3 output.
pub fn sent_packets(out: &Value) -> Option<f64> {
    out["end"]["sum_sent"]["sent_packets"].as_f64()
}

/// Sender CPU seconds per delivered MB, None for iperf3 output.
pub fn cpu_s_per_mb(out: &Value) -> Option<f64> {
    out["end"]["cpu"]["sender_s_per_mb"].as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quic_controls_parse_beside_kernel_ones() {
        let f = parse_flows(
            "quic:leocc@0-10,cubic@0-10,2*quic:bbr@5-10",
            "cubic",
            10_000_000,
        )
        .unwrap();
        let ccs: Vec<&str> = f.iter().map(|f| f.cc.as_str()).collect();
        assert_eq!(ccs, ["quic:leocc", "cubic", "quic:bbr", "quic:bbr"]);
        assert_eq!((f[2].start_us, f[2].stop_us), (5_000_000, 10_000_000));
        assert!(parse_flows("quic:vegas@0-10", "cubic", 10_000_000)
            .unwrap_err()
            .contains("vegas"));
        assert!(parse_flows("quic:leocc@x-10", "cubic", 10_000_000).is_err());
    }
}
