//! `leocc trace plot`: capacity per 100 ms and one-way delay over time, reconfigurations
//! marked (ground truth and detected), as SVG; PNG through headless Chromium when asked.

use std::path::Path;
use std::process::Command;

use crate::error::TraceError;
use crate::model::{Dir, Measured, Trace};
use crate::stats::{capacity_bins_mbps, delay_samples_us, detect_reconfigurations, CAPACITY_BIN_US};
use leocc_plot::{stack, Axis, Chart, Marker, MarkerKind, Series, Style};

/// At most this many points per series; longer series are averaged into buckets.
const MAX_POINTS: usize = 3000;
/// Colours (matplotlib's defaults, readable on white and for most colour-blind readers).
const COLOR_DOWN: &str = "#1f77b4";
const COLOR_UP: &str = "#ff7f0e";
const COLOR_TERR: &str = "#2ca02c";
const COLOR_TRUTH: &str = "#d62728";
const COLOR_DETECTED: &str = "#9467bd";
const DASH_TRUTH: &str = "6,4";
const DASH_DETECTED: &str = "2,3";
/// Size of the whole figure, px.
const WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 335;
/// Chromium, for PNG output.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Averages consecutive points so that at most [`MAX_POINTS`] remain.
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let k = points.len().div_ceil(MAX_POINTS).max(1);
    if k == 1 {
        return points;
    }
    points.chunks(k).map(|c| (c[0].0, c.iter().map(|p| p.1).sum::<f64>() / c.len() as f64)).collect()
}

/// The figure for `trace` as SVG: capacity per 100 ms above one-way delay, sharing the time
/// axis, with ground-truth and detected reconfigurations marked in both.
pub fn figure(trace: &Trace) -> String {
    let dirs: Vec<Dir> = match trace.meta.direction {
        Measured::Both => vec![Dir::Down, Dir::Up],
        m => vec![m.primary()],
    };
    let color = |d: Dir| if d == Dir::Down { COLOR_DOWN } else { COLOR_UP };
    let bin_s = CAPACITY_BIN_US as f64 / 1e6;
    let x_axis = Axis::new("time (s)").range(0.0, trace.duration_us() as f64 / 1e6);
    let mut cap = Chart::new("", x_axis.clone(), Axis::new("capacity per 100 ms (Mbit/s)"));
    let mut owd = Chart::new("", x_axis, Axis::new("one-way delay (ms)"));
    for c in [&mut cap, &mut owd] {
        c.width = WIDTH;
        c.height = PANEL_HEIGHT;
    }
    for &d in &dirs {
        let bins = capacity_bins_mbps(&trace.link(d));
        let pts = bins.iter().enumerate().map(|(i, &v)| (i as f64 * bin_s, v)).collect();
        cap.series.push(Series::new(format!("{} capacity", d.as_str()), color(d), Style::Line, thin(pts)));
        let pts = delay_samples_us(trace, d).into_iter().map(|(t, v)| (t as f64 / 1e6, v as f64 / 1000.0)).collect();
        owd.series.push(Series::new(format!("{} delay", d.as_str()), color(d), Style::Line, thin(pts)));
    }
    if let Some(t) = trace.terrestrial() {
        let bins = capacity_bins_mbps(&t);
        let pts = bins.iter().enumerate().map(|(i, &v)| (i as f64 * bin_s, v)).collect();
        cap.series.push(Series::new("terrestrial capacity", COLOR_TERR, Style::Line, thin(pts)));
    }
    let mut kinds = Vec::new();
    let mut marks = Vec::new();
    if !trace.reconfigurations.is_empty() {
        kinds.push(MarkerKind { name: "reconfiguration (ground truth)".into(), color: COLOR_TRUTH.into(), dash: DASH_TRUTH.into() });
        marks.extend(trace.reconfigurations.iter().map(|&r| Marker::new(r as f64 / 1e6, COLOR_TRUTH, DASH_TRUTH)));
    }
    let detected = detect_reconfigurations(trace, dirs[0]);
    if !detected.is_empty() {
        kinds.push(MarkerKind { name: "reconfiguration (detected)".into(), color: COLOR_DETECTED.into(), dash: DASH_DETECTED.into() });
        marks.extend(detected.iter().map(|&r| Marker::new(r as f64 / 1e6, COLOR_DETECTED, DASH_DETECTED)));
    }
    for c in [&mut cap, &mut owd] {
        c.markers = marks.clone();
        c.marker_kinds = kinds.clone();
    }
    stack(&format!("trace {}", trace.meta.name), &[cap, owd])
}

/// Writes the plot to `out`: SVG, or PNG (rendered by headless Chromium) for a `.png` name.
pub fn plot(trace: &Trace, out: &Path) -> Result<(), TraceError> {
    let svg = figure(trace);
    let is_png = out.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !is_png {
        return crate::write_atomic(out, svg.as_bytes());
    }
    let tmp = std::env::temp_dir().join(format!("leocc-plot-{}.svg", std::process::id()));
    crate::write_atomic(&tmp, svg.as_bytes())?;
    let result = svg_to_png(&tmp, out, WIDTH, 30 + 2 * PANEL_HEIGHT);
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Renders an SVG file to PNG with headless Chromium.
pub fn svg_to_png(svg: &Path, png: &Path, width: u32, height: u32) -> Result<(), TraceError> {
    if !Path::new(CHROMIUM).exists() {
        return Err(TraceError::whole(png, format!("PNG output needs {CHROMIUM}; write .svg instead")));
    }
    let abs = |p: &Path| std::path::absolute(p).map_err(|e| TraceError::io(p, &e));
    let (svg_abs, png_abs) = (abs(svg)?, abs(png)?);
    let status = Command::new(CHROMIUM)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--screenshot={}", png_abs.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("file://{}", svg_abs.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| TraceError::io(CHROMIUM, &e))?;
    if !status.success() || !png_abs.exists() {
        return Err(TraceError::whole(png, format!("chromium failed to render the PNG ({status})")));
    }
    Ok(())
}
