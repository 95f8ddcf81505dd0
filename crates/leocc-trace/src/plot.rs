//! `leocc trace plot`: capacity per 100 ms and one-way delay over time, reconfigurations
//! marked (ground truth and detected), as SVG; PNG or PDF through headless Chromium when asked.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use leocc_base::FileError;
use crate::model::{Dir, Measured, Trace};
use leocc_base::out::{check_pdf, check_png, OutFile};
use crate::stats::{capacity_bin_count, capacity_bins_mbps, delay_sample_count, delay_samples_us, detect_reconfigurations, CAPACITY_BIN_US};
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

/// Averages consecutive points of a series of `n` so that at most [`MAX_POINTS`] remain,
/// without holding the whole series (a days-long period has millions of bins).
fn thin(n: u64, points: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let k = n.div_ceil(MAX_POINTS as u64).max(1);
    let mut out = Vec::with_capacity(n.min(MAX_POINTS as u64) as usize);
    let (mut first, mut sum, mut count) = (0.0, 0.0, 0u64);
    for (x, y) in points {
        if count == 0 {
            first = x;
        }
        sum += y;
        count += 1;
        if count == k {
            out.push((first, sum / count as f64));
            (sum, count) = (0.0, 0);
        }
    }
    if count > 0 {
        out.push((first, sum / count as f64));
    }
    out
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
        let link = trace.link(d);
        let pts = capacity_bins_mbps(&link).enumerate().map(|(i, v)| (i as f64 * bin_s, v));
        cap.series.push(Series::new(format!("{} capacity", d.as_str()), color(d), Style::Line, thin(capacity_bin_count(&link), pts)));
        let pts = delay_samples_us(trace, d).map(|(t, v)| (t as f64 / 1e6, v as f64 / 1000.0));
        owd.series.push(Series::new(format!("{} delay", d.as_str()), color(d), Style::Line, thin(delay_sample_count(trace, d), pts)));
    }
    if let Some(t) = trace.terrestrial() {
        let pts = capacity_bins_mbps(&t).enumerate().map(|(i, v)| (i as f64 * bin_s, v));
        cap.series.push(Series::new("terrestrial capacity", COLOR_TERR, Style::Line, thin(capacity_bin_count(&t), pts)));
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

/// What [`plot`] writes, chosen by the output's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Svg,
    Png,
    Pdf,
}

/// Writes the plot to `out`: `.svg`, or `.png` / `.pdf` rendered by headless Chromium. The
/// rendering goes to a temporary file beside `out` and is renamed only once it is verified
/// complete, so a full disk or a crashed browser never leaves a broken plot under `out`. Any
/// other extension is an error rather than SVG under a misleading name.
pub fn plot(trace: &Trace, out: &Path) -> Result<(), FileError> {
    let ext = out.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let kind = match ext.as_str() {
        "svg" => Kind::Svg,
        "png" => Kind::Png,
        "pdf" => Kind::Pdf,
        _ => return Err(FileError::whole(out, "unknown plot format; name the output .svg, .png or .pdf")),
    };
    // Open the destination first: a missing directory is reported before any work.
    let mut dest = OutFile::create(out)?;
    let svg = figure(trace);
    if kind == Kind::Svg {
        dest.write_all(svg.as_bytes()).map_err(|e| FileError::io(out, &e))?;
        return dest.commit();
    }
    let src = OutFile::create(&out.with_extension("svg.src.svg"))?;
    std::fs::write(src.temp_path(), svg.as_bytes()).map_err(|e| FileError::io(src.temp_path(), &e))?;
    render(kind, src.temp_path(), &mut dest, WIDTH, 30 + 2 * PANEL_HEIGHT)?;
    // `src` is dropped uncommitted: the SVG source was only for the browser.
    dest.commit_checked(if kind == Kind::Png { check_png } else { check_pdf })
}

/// Has Chromium render `svg` into `dest`'s temporary file.
fn render(kind: Kind, svg: &Path, dest: &mut OutFile, width: u32, height: u32) -> Result<(), FileError> {
    let what = if kind == Kind::Png { "PNG" } else { "PDF" };
    let out = dest.dest().to_path_buf();
    if !Path::new(CHROMIUM).exists() {
        return Err(FileError::whole(&out, format!("{what} output needs {CHROMIUM}; write .svg instead")));
    }
    let abs = |p: &Path| std::path::absolute(p).map_err(|e| FileError::io(p, &e));
    let (svg_abs, tmp_abs) = (abs(svg)?, abs(dest.temp_path())?);
    let target = match kind {
        Kind::Pdf => format!("--print-to-pdf={}", tmp_abs.display()),
        _ => format!("--screenshot={}", tmp_abs.display()),
    };
    let output = Command::new(CHROMIUM)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-pdf-header-footer"])
        .arg(target)
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("file://{}", svg_abs.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| FileError::io(CHROMIUM, &e))?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(FileError::whole(&out, format!("chromium failed to render the {what} ({}): {last}", output.status)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-plot-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn small() -> Trace {
        crate::gen::generate(crate::gen::Profile::Oneweb, 3_000, 1, "test").unwrap()
    }

    #[test]
    fn unknown_extension_and_missing_directory_are_errors_naming_them() {
        let d = scratch("bad");
        let e = plot(&small(), &d.join("p.jpg")).unwrap_err();
        assert!(e.to_string().contains("p.jpg") && e.problem.contains(".pdf"), "{e}");
        let e = plot(&small(), &d.join("missing/p.png")).unwrap_err();
        assert!(e.problem.contains("missing") && e.problem.contains("does not exist"), "{e}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn png_and_pdf_are_real_and_leave_no_temporaries() {
        if !Path::new(CHROMIUM).exists() {
            eprintln!("SKIP: {CHROMIUM} is absent");
            return;
        }
        let d = scratch("render");
        plot(&small(), &d.join("p.png")).unwrap();
        plot(&small(), &d.join("p.pdf")).unwrap();
        check_png(&d.join("p.png")).unwrap();
        check_pdf(&d.join("p.pdf")).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["p.pdf", "p.png"]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
