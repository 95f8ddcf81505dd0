//! The Python binding of leocc: traces (load, generate, summarise, save) and the simulator, with
//! results as JSON text and time series as columns for the pure-Python layer
//! (python/src/leocc/__init__.py) to turn into pandas DataFrames. Nothing here is a second
//! implementation: every call goes to leocc-trace and leocc-sim, the crates the CLI uses.
//!
//! The simulation releases the GIL, so Python threads (or a Ray task per run) run in parallel.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use leocc_sim::{parse_flows, QueueLimit, Scenario};
use leocc_trace::gen::{self, Profile};
use leocc_trace::{stats, Dir};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

/// Bin of [`Trace::series`] when none is given, ms: the 100 ms of `leocc trace stat`.
const DEFAULT_BIN_MS: u64 = 100;

fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn parse_dir(direction: Option<&str>, trace: &leocc_trace::Trace) -> PyResult<Dir> {
    match direction {
        None => Ok(trace.meta.direction.primary()),
        Some("down") => Ok(Dir::Down),
        Some("up") => Ok(Dir::Up),
        Some(other) => Err(value_error(format!("direction {other:?}: expected \"up\" or \"down\""))),
    }
}

/// A LEO path trace (capacity, delay and loss per direction, reconfigurations).
#[pyclass(frozen, module = "leocc._native")]
pub struct Trace {
    inner: Arc<leocc_trace::Trace>,
    path: Option<PathBuf>,
}

#[pymethods]
impl Trace {
    /// Loads a trace: our format, a mahimahi capacity file, or a mahimahi/LeoReplayer folder.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Trace> {
        let t = leocc_trace::Trace::load(&path).map_err(|e| if e.line == 0 && !path.exists() { PyOSError::new_err(e.to_string()) } else { value_error(e) })?;
        Ok(Trace { inner: Arc::new(t), path: Some(path) })
    }

    /// Generates a synthetic trace with ground truth (profiles as `leocc trace gen`).
    #[staticmethod]
    #[pyo3(signature = (profile, duration_s = 60.0, seed = 1))]
    fn generate(profile: &str, duration_s: f64, seed: u64) -> PyResult<Trace> {
        let p = Profile::parse(profile).ok_or_else(|| {
            let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
            value_error(format!("unknown profile {profile:?}; choose one of {}", names.join(", ")))
        })?;
        if !(1.0..=86_400.0).contains(&duration_s) {
            return Err(value_error(format!("duration_s {duration_s} must be in [1, 86400]")));
        }
        let command = format!("leocc.Trace.generate({profile:?}, {duration_s}, {seed})");
        let t = gen::generate(p, (duration_s * 1000.0) as u64, seed, &command).map_err(value_error)?;
        Ok(Trace { inner: Arc::new(t), path: None })
    }

    /// Writes the trace in our format (atomically).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(|e| PyOSError::new_err(e.to_string()))
    }

    /// The trace's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.meta.name.clone()
    }

    /// Length of one loop, s.
    #[getter]
    fn duration_s(&self) -> f64 {
        self.inner.duration_us() as f64 / 1e6
    }

    /// The file it was loaded from, if any.
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.path.clone()
    }

    /// Ground-truth reconfiguration times, s (empty when unknown).
    #[getter]
    fn reconfigurations_s(&self) -> Vec<f64> {
        self.inner.reconfigurations_us().iter().map(|&t| t as f64 / 1e6).collect()
    }

    /// `leocc trace stat --json` of one direction, as JSON text.
    #[pyo3(signature = (direction = None))]
    fn stats_json(&self, direction: Option<&str>) -> PyResult<String> {
        let d = parse_dir(direction, &self.inner)?;
        serde_json::to_string(&stats::stats(&self.inner, d)).map_err(value_error)
    }

    /// Capacity (Mbit/s) and one-way delay (ms) per `bin_ms`, as columns `t_s`,
    /// `capacity_mbps`, `owd_ms`.
    #[pyo3(signature = (direction = None, bin_ms = DEFAULT_BIN_MS))]
    fn series(&self, direction: Option<&str>, bin_ms: u64) -> PyResult<BTreeMap<&'static str, Vec<f64>>> {
        let d = parse_dir(direction, &self.inner)?;
        if bin_ms == 0 {
            return Err(value_error("bin_ms must be positive"));
        }
        let cap = self.inner.capacity(d).ok_or_else(|| value_error(format!("the trace has no {} capacity", d.as_str())))?;
        let bin_us = bin_ms * 1000;
        let period = self.inner.duration_us().max(1);
        let bins = period.div_ceil(bin_us) as usize;
        let mut bytes = vec![0u64; bins];
        for &t in cap.times_us() {
            if let Some(b) = bytes.get_mut((t / bin_us) as usize) {
                *b += u64::from(leocc_trace::OPPORTUNITY_BYTES);
            }
        }
        let link = self.inner.link(d);
        let mut cols = BTreeMap::new();
        cols.insert("t_s", (0..bins).map(|b| (b as u64 * bin_us) as f64 / 1e6).collect());
        cols.insert("capacity_mbps", bytes.iter().map(|&by| by as f64 * 8.0 / bin_us as f64).collect());
        cols.insert("owd_ms", (0..bins).map(|b| link.delay_us(b as u64 * bin_us) as f64 / 1000.0).collect());
        Ok(cols)
    }

    fn __repr__(&self) -> String {
        format!("<leocc.Trace {:?}, {:.1} s>", self.inner.meta.name, self.duration_s())
    }
}

/// Runs the simulator once; returns (the result as `leocc sim --json` prints it, the time series
/// as columns). `flows` is a number of flows of `cc` or a list like "cubic@0-60,leocc@20-80";
/// `params` are "CC.NAME=VALUE" settings.
#[pyfunction]
#[pyo3(signature = (trace, cc = "leocc", flows = None, duration_s = None, seed = 1, queue = "500", loss = 0.0, direction = None, params = Vec::new(), timeseries = true))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    trace: &Trace,
    cc: &str,
    flows: Option<&str>,
    duration_s: Option<f64>,
    seed: u64,
    queue: &str,
    loss: f64,
    direction: Option<&str>,
    params: Vec<String>,
    timeseries: bool,
) -> PyResult<(String, BTreeMap<&'static str, Vec<f64>>, Vec<String>)> {
    let duration_us = match duration_s {
        Some(d) if d > 0.0 && d <= 1e6 => (d * 1e6) as u64,
        Some(d) => return Err(value_error(format!("duration_s {d} must be in (0, 1e6]"))),
        None => trace.inner.duration_us(),
    };
    let named = flows.filter(|f| f.trim().parse::<u32>().is_err());
    let specs = parse_flows(flows.unwrap_or("1"), if named.is_some() { "" } else { cc }, duration_us).map_err(value_error)?;
    for f in &specs {
        if !leocc_sim::cc::known(&f.cc) {
            return Err(value_error(format!("unknown congestion control {:?} (known: {})", f.cc, leocc_sim::cc::names().join(", "))));
        }
    }
    let cc_params = params
        .iter()
        .map(|p| leocc_sim::cc::parse_setting(p).map_err(|e| value_error(format!("param {p:?}: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let name = trace.path.as_ref().map_or_else(|| trace.inner.meta.name.clone(), |p| p.display().to_string());
    let mut sc = Scenario::new(trace.inner.clone(), &name, &specs[0].cc, duration_us);
    sc.flows = specs;
    sc.seed = seed;
    sc.queue = queue.parse::<QueueLimit>().map_err(value_error)?;
    sc.loss = loss;
    sc.data_dir = parse_dir(direction, &trace.inner)?;
    sc.cc_params = cc_params;
    sc.timeseries = timeseries;
    let r = py.allow_threads(|| leocc_sim::run(&sc)).map_err(value_error)?;
    let mut cols: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let ts = &r.timeseries;
    cols.insert("t_s", ts.iter().map(|x| x.t_s).collect());
    cols.insert("flow", ts.iter().map(|x| x.flow as f64).collect());
    cols.insert("throughput_mbps", ts.iter().map(|x| x.throughput_mbps).collect());
    cols.insert("rtt_ms", ts.iter().map(|x| x.rtt_ms).collect());
    cols.insert("cwnd", ts.iter().map(|x| x.cwnd as f64).collect());
    cols.insert("pacing_mbps", ts.iter().map(|x| x.pacing_mbps).collect());
    cols.insert("inflight", ts.iter().map(|x| x.inflight as f64).collect());
    let flow_cc = ts.iter().map(|x| r.flows[x.flow].cc.clone()).collect();
    let mut summary = serde_json::to_value(&r).map_err(value_error)?;
    if let Some(o) = summary.as_object_mut() {
        o.remove("timeseries");
    }
    Ok((summary.to_string(), cols, flow_cc))
}

/// The names of the simulator's controls.
#[pyfunction]
fn controls() -> Vec<&'static str> {
    leocc_sim::cc::names()
}

/// The parameters of a control: (name, default, min, max, integer, description).
#[pyfunction]
fn list_params(cc: &str) -> PyResult<Vec<(&'static str, f64, f64, f64, bool, &'static str)>> {
    leocc_sim::cc::list_params(cc)
        .map(|v| v.into_iter().map(|p| (p.name, p.default, p.min, p.max, p.integer, p.doc)).collect())
        .map_err(value_error)
}

/// The native module; python/src/leocc/__init__.py is the API users import.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trace>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(controls, m)?)?;
    m.add_function(wrap_pyfunction!(list_params, m)?)?;
    m.add("RESULTS_SCHEMA", leocc_base::record::SCHEMA)?;
    Ok(())
}
