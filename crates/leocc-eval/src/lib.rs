//! The evaluation harness behind `leocc eval` and `leocc demo`.
//!
//! A [`matrix::Matrix`] expands into [`matrix::RunSpec`]s: one per engine, trace, scenario,
//! control set and seed. Each run is executed as a child `leocc sim --json` (or `leocc emu`)
//! process, so a crash or a hang in one run never takes the matrix down, and both cores are used
//! by running two children at once. Every finished run appends one JSON object to
//! `DIR/results.jsonl`; a rerun of the same matrix skips the runs whose key is already there,
//! which is how an interrupted matrix resumes. The report ([`report`]) is made from that file
//! alone (plus the runs' time series in `DIR/ts/`, Parquet parts once a batch ends: [`tsstore`]),
//! so any tool that reads JSON lines and Parquet can redo it. Means, confidence intervals and
//! the noise verdicts of comparisons are in [`stats`], shared by the report and `leocc bench
//! fidelity`. Triggered starts (`--start-when`) read a trace as the daemon would see it
//! ([`when`]).

pub mod ablation;
pub mod align;
pub mod across;
pub mod detector;
pub mod emu_engine;
pub mod emu_quic;
pub mod experiment;
pub mod fidelity;
pub mod kernel_state;
pub mod leotp;
pub mod matrix;
pub mod pathdelay;
pub mod ray;
pub mod report;
pub mod results;
pub mod robust;
pub mod runner;
pub mod starts;
pub mod stats;
pub mod sweep;
pub mod tsstore;
pub mod video;
pub mod when;
