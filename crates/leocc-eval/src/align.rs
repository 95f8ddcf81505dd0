//! Simulator runs that replay the stretch of the trace an emulator run of the same cell and seed
//! replayed. The emulator's flows start later than asked by the tools' own setup (process
//! start, iperf3's control connection: 0.85 s on a 128 ms path), so a simulator run of the same
//! cell started at the asked time meets the trace's features (an RTT band, a capacity step, a
//! reconfiguration) at other moments of its flows' lives. `leocc bench fidelity` and `leocc
//! eval --engine sim` into a folder that holds emulator runs both move each simulator run's
//! flows to where the emulator run of its cell and seed started its own (`data_start_s`).

use crate::matrix::{Engine, RunSpec};
use crate::results::Record;
use leocc_sim::FlowSpec;

/// A key's cell: the key without its engine and seed (`emu|d8|single|cubic|2|d30|q150ms|l-`
/// and `sim|d8|single|cubic|1|d30|q150ms|l-` are one cell).
pub fn cell_of(key: &str) -> String {
    key.split('|')
        .enumerate()
        .filter(|&(i, _)| i != 0 && i != 4)
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join("|")
}

/// `flows` (the `--flows` syntax, within `duration_s`) with flow i moved to start at
/// `start_us(i, flow)` and keep its length, written back in that syntax; also the end of the
/// last flow, s.
pub fn move_flows(
    flows: &str,
    duration_s: f64,
    mut start_us: impl FnMut(usize, &FlowSpec) -> Option<u64>,
) -> Option<(String, f64)> {
    let specs = crate::emu_quic::parse_flows(flows, "cubic", (duration_s * 1e6).round() as u64).ok()?;
    // Whole milliseconds, written as seconds (`us_as_ms` of a count of ms): `0.37`, `30`.
    let secs = |us: u64| leocc_base::text::us_as_ms(us / 1000);
    let mut parts = Vec::new();
    let mut end_us = 0;
    for (i, f) in specs.iter().enumerate() {
        let s = start_us(i, f)?;
        let stop = s + (f.stop_us - f.start_us);
        end_us = end_us.max(stop);
        parts.push(format!("{}@{}-{}", f.cc, secs(s), secs(stop)));
    }
    Some((parts.join(","), end_us as f64 / 1e6))
}

/// A simulator run moved to where the emulator run of the same cell and seed sent: flow i
/// starts at that run's flows[i].`data_start_s` (trace time) and keeps its length, and the run
/// lasts until the last flow stops. None (the spec as it is) when `records` hold no such
/// emulator run with those starts, or for an emulator spec.
pub fn aligned(spec: &RunSpec, records: &[Record]) -> Option<RunSpec> {
    if spec.engine != Engine::Sim {
        return None;
    }
    let cell = cell_of(&spec.key);
    let run = records.iter().rev().find(|r| {
        r.str("engine") == "emu"
            && cell_of(r.str("key")) == cell
            && r.num("seed") == Some(spec.seed as f64)
    })?;
    let (flows, end) = move_flows(&spec.flows, spec.duration_s, |i, _| {
        let s = run.flows().get(i)?.get("data_start_s")?.as_f64()?;
        Some((s * 1e6).round() as u64)
    })?;
    Some(RunSpec {
        flows,
        duration_s: end.max(spec.duration_s),
        ..spec.clone()
    })
}

