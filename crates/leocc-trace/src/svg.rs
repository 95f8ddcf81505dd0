//! A small hand-written SVG chart writer: stacked panels sharing one x axis, line series,
//! axes with "nice" ticks, vertical markers and a legend. Used by `leocc trace plot` and the
//! evaluation report; no dependency, deterministic output.

use std::fmt::Write as _;

/// Left margin for y tick labels and the axis title, px.
const MARGIN_LEFT: f64 = 80.0;
/// Right margin, px.
const MARGIN_RIGHT: f64 = 30.0;
/// Top margin for the title and the legend, px.
const MARGIN_TOP: f64 = 70.0;
/// Bottom margin for x tick labels and the axis title, px.
const MARGIN_BOTTOM: f64 = 55.0;
/// Vertical gap between panels, px.
const PANEL_GAP: f64 = 30.0;
/// Aim for about this many ticks per axis.
const TARGET_TICKS: f64 = 6.0;

/// A line series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// CSS colour.
    pub color: String,
    /// (x, y) points in data units, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A vertical line at one x, e.g. a reconfiguration.
#[derive(Debug, Clone)]
pub struct Marker {
    /// Position in x data units.
    pub x: f64,
    /// CSS colour.
    pub color: String,
    /// SVG dash pattern ("" = solid).
    pub dash: String,
}

/// A legend entry for a kind of marker.
#[derive(Debug, Clone)]
pub struct MarkerKind {
    /// Legend text.
    pub name: String,
    /// CSS colour.
    pub color: String,
    /// SVG dash pattern.
    pub dash: String,
}

/// One panel: its own y axis, series and markers.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    /// Y axis title, with unit.
    pub y_label: String,
    /// Line series.
    pub series: Vec<Series>,
    /// Vertical markers.
    pub markers: Vec<Marker>,
    /// Force the y axis to include 0.
    pub y_from_zero: bool,
}

/// A figure of stacked panels sharing the x axis.
#[derive(Debug, Clone, Default)]
pub struct Figure {
    /// Title at the top.
    pub title: String,
    /// X axis title, with unit.
    pub x_label: String,
    /// Size in px.
    pub width: f64,
    /// Size in px.
    pub height: f64,
    /// Panels from top to bottom.
    pub panels: Vec<Panel>,
    /// Legend entries for marker kinds (series get theirs automatically).
    pub marker_kinds: Vec<MarkerKind>,
}

/// Ticks at 1, 2 or 5 × 10^k covering [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) || !lo.is_finite() || !hi.is_finite() {
        return vec![lo];
    }
    let raw = (hi - lo) / TARGET_TICKS;
    let mag = 10f64.powf(raw.log10().floor());
    // The smallest round step not much below the target (at most ~8 ticks).
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= 0.75 * raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

fn fmt_tick(v: f64) -> String {
    let s = format!("{:.3}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Figure {
    /// Renders the figure as a standalone SVG document.
    pub fn render(&self) -> String {
        let (w, h) = (self.width, self.height);
        let mut s = String::new();
        let _ = writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="13">"#);
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(s, r#"<text x="{}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{}</text>"#, w / 2.0, esc(&self.title));
        self.legend(&mut s);
        let (x0, x1) = self.x_range();
        let plot_w = w - MARGIN_LEFT - MARGIN_RIGHT;
        let n = self.panels.len().max(1) as f64;
        let panel_h = (h - MARGIN_TOP - MARGIN_BOTTOM - PANEL_GAP * (n - 1.0)) / n;
        let sx = |x: f64| MARGIN_LEFT + (x - x0) / (x1 - x0) * plot_w;
        for (i, p) in self.panels.iter().enumerate() {
            let top = MARGIN_TOP + i as f64 * (panel_h + PANEL_GAP);
            let (y0, y1) = p.y_range();
            let sy = |y: f64| top + panel_h - (y - y0) / (y1 - y0) * panel_h;
            // Grid and y ticks.
            for t in nice_ticks(y0, y1) {
                let y = sy(t);
                let _ = writeln!(s, r##"<line x1="{MARGIN_LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e4e4e4"/>"##, MARGIN_LEFT + plot_w);
                let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, MARGIN_LEFT - 6.0, y + 4.0, fmt_tick(t));
            }
            let last = i + 1 == self.panels.len();
            for t in nice_ticks(x0, x1) {
                let x = sx(t);
                let _ = writeln!(s, r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e4e4e4"/>"##, top + panel_h);
                if last {
                    let _ = writeln!(s, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, top + panel_h + 18.0, fmt_tick(t));
                }
            }
            for m in &p.markers {
                if m.x >= x0 && m.x <= x1 {
                    let x = sx(m.x);
                    let _ = writeln!(s, r#"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5" stroke-dasharray="{}"/>"#, top + panel_h, m.color, m.dash);
                }
            }
            for se in &p.series {
                let mut d = String::with_capacity(se.points.len() * 14);
                for (j, &(x, y)) in se.points.iter().enumerate() {
                    let _ = write!(d, "{}{:.1},{:.1}", if j == 0 { "M" } else { " L" }, sx(x), sy(y.clamp(y0, y1)));
                }
                let _ = writeln!(s, r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.2"/>"#, se.color);
            }
            let _ = writeln!(s, r#"<rect x="{MARGIN_LEFT}" y="{top:.1}" width="{plot_w:.1}" height="{panel_h:.1}" fill="none" stroke="black"/>"#);
            let cy = top + panel_h / 2.0;
            let _ = writeln!(s, r#"<text x="18" y="{cy:.1}" text-anchor="middle" transform="rotate(-90 18 {cy:.1})">{}</text>"#, esc(&p.y_label));
        }
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, MARGIN_LEFT + plot_w / 2.0, h - 12.0, esc(&self.x_label));
        s.push_str("</svg>\n");
        s
    }

    fn legend(&self, s: &mut String) {
        let mut x = MARGIN_LEFT;
        let y = 48.0;
        let mut seen = Vec::new();
        let series = self.panels.iter().flat_map(|p| p.series.iter()).map(|se| (se.name.as_str(), se.color.as_str(), ""));
        let markers = self.marker_kinds.iter().map(|m| (m.name.as_str(), m.color.as_str(), m.dash.as_str()));
        for (name, color, dash) in series.chain(markers) {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let _ = writeln!(s, r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}"/>"#, y - 4.0, x + 24.0, y - 4.0);
            let _ = writeln!(s, r#"<text x="{:.1}" y="{y:.1}">{}</text>"#, x + 30.0, esc(name));
            x += 50.0 + 7.5 * name.chars().count() as f64;
        }
    }

    fn x_range(&self) -> (f64, f64) {
        let xs = self.panels.iter().flat_map(|p| p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)));
        let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        if lo < hi { (lo, hi) } else { (0.0, 1.0) }
    }
}

impl Panel {
    fn y_range(&self) -> (f64, f64) {
        let ys = self.series.iter().flat_map(|s| s.points.iter().map(|q| q.1)).filter(|y| y.is_finite());
        let (mut lo, mut hi) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        if lo > hi {
            return (0.0, 1.0);
        }
        if self.y_from_zero {
            lo = lo.min(0.0);
        }
        if hi - lo < 1e-9 {
            hi = lo + 1.0;
        }
        let pad = (hi - lo) * 0.05;
        (if self.y_from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 60.0), vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        assert_eq!(nice_ticks(0.0, 1.0).len(), 6);
        assert_eq!(nice_ticks(0.0, 120.05), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0]);
        assert_eq!(nice_ticks(5.0, 5.0), vec![5.0]);
    }

    #[test]
    fn renders_series_markers_legend_and_escapes() {
        let f = Figure {
            title: "a < b".into(),
            x_label: "time (s)".into(),
            width: 800.0,
            height: 500.0,
            panels: vec![Panel {
                y_label: "capacity (Mbit/s)".into(),
                series: vec![Series { name: "down".into(), color: "#1f77b4".into(), points: vec![(0.0, 1.0), (10.0, 3.0)] }],
                markers: vec![Marker { x: 5.0, color: "red".into(), dash: "4 3".into() }],
                y_from_zero: true,
            }],
            marker_kinds: vec![MarkerKind { name: "reconfiguration".into(), color: "red".into(), dash: "4 3".into() }],
        };
        let svg = f.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a &lt; b"));
        assert!(svg.contains(">reconfiguration</text>") && svg.contains(">down</text>"));
        assert!(svg.contains(r#"stroke-dasharray="4 3""#));
        assert!(svg.contains("M80.0,"), "first point at the left edge");
    }
}
