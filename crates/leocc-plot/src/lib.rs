//! Small SVG charts for leocc's reports and trace plots, written by hand so that the output is
//! plain, inspectable SVG with no dependencies and no JavaScript.
//!
//! A [`Chart`] has an x axis, a left y axis and an optional right y axis, any number of
//! [`Series`] (lines, steps, or points with a spread), vertical [`Marker`]s (reconfigurations)
//! and a legend. [`bars`] draws a grouped bar chart. Axes can be logarithmic and inverted (the
//! Pantheon throughput/delay view: delay axis inverted and log-scaled so "better" is up-right).

use std::fmt::Write;

pub mod heatmap;
pub use heatmap::Heatmap;

/// A colour-blind-safe palette (Okabe–Ito, with black and yellow swapped for brown and a darker
/// yellow so that black stays free for reference points and yellow reads on white).
pub const PALETTE: [&str; 9] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B", "#B8A000", "#7F7F7F",
];

/// The palette colour for the i-th series.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// An axis: its label, its range, and how values map onto it.
#[derive(Clone, Debug)]
pub struct Axis {
    pub label: String,
    /// None: fitted to the data.
    pub range: Option<(f64, f64)>,
    pub log: bool,
    /// Larger values towards the origin.
    pub inverted: bool,
}

impl Axis {
    /// A linear axis fitted to the data.
    pub fn new(label: impl Into<String>) -> Axis {
        Axis { label: label.into(), range: None, log: false, inverted: false }
    }
    /// Fixes the range.
    pub fn range(mut self, lo: f64, hi: f64) -> Axis {
        self.range = Some((lo, hi));
        self
    }
    /// Logarithmic scale (base 10).
    pub fn log(mut self) -> Axis {
        self.log = true;
        self
    }
    /// Larger values towards the origin.
    pub fn inverted(mut self) -> Axis {
        self.inverted = true;
        self
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Style {
    Line,
    /// Horizontal then vertical segments: a value that holds until the next point.
    Step,
    /// Dots; with [`Series::spread`] also error bars.
    Points,
    /// A line with the area under it filled lightly.
    Area,
}

/// One data series.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub color: String,
    pub style: Style,
    pub points: Vec<(f64, f64)>,
    /// For [`Style::Points`]: (x_lo, x_hi, y_lo, y_hi) per point, drawn as error bars.
    pub spread: Vec<(f64, f64, f64, f64)>,
    /// Plotted against the right axis.
    pub right: bool,
    pub dashed: bool,
    /// For [`Style::Points`]: write the series name beside each point.
    pub labelled: bool,
}

impl Series {
    /// A series with the given name, colour and style.
    pub fn new(name: impl Into<String>, color: &str, style: Style, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            color: color.to_string(),
            style,
            points,
            spread: Vec::new(),
            right: false,
            dashed: false,
            labelled: false,
        }
    }
    /// Plots against the right axis.
    pub fn on_right(mut self) -> Series {
        self.right = true;
        self
    }
    /// Names each point on the chart (scatter plots with few points).
    pub fn labelled(mut self) -> Series {
        self.labelled = true;
        self
    }
    /// Dashed line.
    pub fn dashed(mut self) -> Series {
        self.dashed = true;
        self
    }
}

/// A vertical line across the plot, e.g. a reconfiguration.
#[derive(Clone, Debug)]
pub struct Marker {
    pub x: f64,
    pub color: String,
    /// SVG dash pattern, e.g. "3,3".
    pub dash: String,
}

impl Marker {
    /// A dashed marker at `x`.
    pub fn new(x: f64, color: &str, dash: &str) -> Marker {
        Marker { x, color: color.to_string(), dash: dash.to_string() }
    }
}

/// A legend entry for a kind of marker.
#[derive(Clone, Debug)]
pub struct MarkerKind {
    pub name: String,
    pub color: String,
    pub dash: String,
}

/// A chart with up to two y axes.
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub width: u32,
    pub height: u32,
    pub x: Axis,
    pub y: Axis,
    pub y2: Option<Axis>,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    /// Legend entries for the kinds of markers.
    pub marker_kinds: Vec<MarkerKind>,
}

const MARGIN_L: f64 = 64.0;
const MARGIN_R_ONE_AXIS: f64 = 16.0;
const MARGIN_R_TWO_AXES: f64 = 64.0;
const MARGIN_T: f64 = 34.0;
const MARGIN_B: f64 = 64.0;
const FONT: &str = "font-family=\"Helvetica,Arial,sans-serif\"";

/// Maps data values onto pixels for one axis.
struct Scale {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
    log: bool,
}

impl Scale {
    fn px(&self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.max(f64::MIN_POSITIVE).log10())
        } else {
            (self.lo, self.hi, v)
        };
        let f = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        self.p0 + f.clamp(-0.05, 1.05) * (self.p1 - self.p0)
    }
}

/// The data range of values, padded for a linear axis and snapped to decades for a log one.
fn fit(axis: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
    if let Some(r) = axis.range {
        return r;
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!axis.log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if axis.log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if axis.log {
        return (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)));
    }
    if lo > 0.0 && lo < hi * 0.5 {
        lo = 0.0;
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    let (step, _) = nice_step(lo, hi);
    ((lo / step).floor() * step, (hi / step).ceil() * step)
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about six ticks.
fn nice_step(lo: f64, hi: f64) -> (f64, usize) {
    let raw = (hi - lo) / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    (step, decimals)
}

fn ticks(lo: f64, hi: f64, log: bool) -> Vec<(f64, String)> {
    if log {
        let mut out = Vec::new();
        let mut d = 10f64.powf(lo.log10().floor());
        while d <= hi * 1.0001 {
            for m in [1.0, 2.0, 5.0] {
                let v = d * m;
                if v >= lo * 0.9999 && v <= hi * 1.0001 {
                    out.push((v, trim_num(v, if v < 1.0 { 2 } else { 0 })));
                }
            }
            d *= 10.0;
        }
        return out;
    }
    let (step, dec) = nice_step(lo, hi);
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-6 {
        out.push((v, trim_num(v, dec)));
        v += step;
    }
    out
}

fn trim_num(v: f64, decimals: usize) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { v };
    format!("{v:.decimals$}")
}

/// The opening of a chart: the `<svg>` element (12 px text), a white background and the bold
/// title centred at height `title_y`. The caller writes the body and the closing `</svg>`.
pub(crate) fn svg_open(w: f64, h: f64, title: &str, title_y: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" {FONT} font-size=\"12\">\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
         <text x=\"{}\" y=\"{title_y}\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        w / 2.0,
        esc(title)
    )
}

/// Escapes text for SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Chart {
    /// A chart of the given size with linear axes.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Chart {
        Chart {
            title: title.into(),
            width: 900,
            height: 360,
            x,
            y,
            y2: None,
            series: Vec::new(),
            markers: Vec::new(),
            marker_kinds: Vec::new(),
        }
    }

    /// Renders the chart as a standalone `<svg>` element.
    pub fn svg(&self) -> String {
        let (w, h) = (self.width as f64, self.height as f64);
        let mr = if self.y2.is_some() { MARGIN_R_TWO_AXES } else { MARGIN_R_ONE_AXIS };
        let (x0, x1, y0, y1) = (MARGIN_L, w - mr, h - MARGIN_B, MARGIN_T);
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0).chain(s.spread.iter().flat_map(|e| [e.0, e.1])))
            .chain(self.markers.iter().map(|m| m.x))
            .collect();
        let y_of = |right: bool| -> Vec<f64> {
            self.series
                .iter()
                .filter(|s| s.right == right)
                .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.spread.iter().flat_map(|e| [e.2, e.3])))
                .collect()
        };
        let (xl, xh) = fit(&self.x, xs.into_iter());
        let sx = orient(Scale { lo: xl, hi: xh, p0: x0, p1: x1, log: self.x.log }, self.x.inverted);
        let (yl, yh) = fit(&self.y, y_of(false).into_iter());
        let sy = orient(Scale { lo: yl, hi: yh, p0: y0, p1: y1, log: self.y.log }, self.y.inverted);
        let sy2 = self.y2.as_ref().map(|a| {
            let (lo, hi) = fit(a, y_of(true).into_iter());
            orient(Scale { lo, hi, p0: y0, p1: y1, log: a.log }, a.inverted)
        });

        let mut s = svg_open(w, h, &self.title, 20.0);
        // grid and ticks
        for (v, label) in ticks(xl, xh, self.x.log) {
            let px = sx.px(v);
            let _ = write!(s, "<line x1=\"{px:.1}\" y1=\"{y1}\" x2=\"{px:.1}\" y2=\"{y0}\" stroke=\"#e5e5e5\"/>\
                <text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>", y0 + 16.0);
        }
        for (v, label) in ticks(yl, yh, self.y.log) {
            let py = sy.px(v);
            let _ = write!(s, "<line x1=\"{x0}\" y1=\"{py:.1}\" x2=\"{x1}\" y2=\"{py:.1}\" stroke=\"#e5e5e5\"/>\
                <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>", x0 - 6.0, py + 4.0);
        }
        if let (Some(a), Some(sc)) = (&self.y2, &sy2) {
            for (v, label) in ticks(sc.lo, sc.hi, a.log) {
                let py = sc.px(v);
                let _ = write!(s, "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"start\">{label}</text>", x1 + 6.0, py + 4.0);
            }
            let _ = write!(s, "<text transform=\"translate({},{}) rotate(90)\" text-anchor=\"middle\">{}</text>",
                w - 14.0, (y0 + y1) / 2.0, esc(&a.label));
        }
        let _ = write!(
            s,
            "<rect x=\"{x0}\" y=\"{y1}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            x1 - x0,
            y0 - y1,
            (x0 + x1) / 2.0,
            y0 + 34.0,
            esc(&self.x.label),
            (y0 + y1) / 2.0,
            esc(&self.y.label)
        );
        // clip data to the plot area
        let clip = format!("clip{:x}", fxhash(&self.title) ^ (self.series.len() as u64));
        let _ = write!(s, "<clipPath id=\"{clip}\"><rect x=\"{x0}\" y=\"{y1}\" width=\"{}\" height=\"{}\"/></clipPath><g clip-path=\"url(#{clip})\">", x1 - x0, y0 - y1);
        for m in &self.markers {
            let px = sx.px(m.x);
            let _ = write!(s, "<line x1=\"{px:.1}\" y1=\"{y1}\" x2=\"{px:.1}\" y2=\"{y0}\" stroke=\"{}\" stroke-width=\"1\" stroke-dasharray=\"{}\"/>", m.color, m.dash);
        }
        for ser in &self.series {
            let scy = if ser.right { sy2.as_ref().unwrap_or(&sy) } else { &sy };
            draw_series(&mut s, ser, &sx, scy, y0);
        }
        s.push_str("</g>");
        self.legend(&mut s, x0, h - 14.0);
        s.push_str("</svg>");
        s
    }

    fn legend(&self, s: &mut String, x0: f64, y: f64) {
        let mut x = x0;
        let mut items: Vec<(&str, &str, &str)> =
            self.series.iter().map(|se| (se.name.as_str(), se.color.as_str(), if se.dashed { "5,3" } else { "" })).collect();
        if !self.markers.is_empty() {
            items.extend(self.marker_kinds.iter().map(|k| (k.name.as_str(), k.color.as_str(), k.dash.as_str())));
        }
        for (name, color, dash) in items {
            if name.is_empty() {
                continue;
            }
            let dash = if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") };
            let _ = write!(s, "<line x1=\"{x}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{color}\" stroke-width=\"3\"{dash}/>\
                <text x=\"{}\" y=\"{y}\">{}</text>", y - 4.0, x + 18.0, y - 4.0, x + 22.0, esc(name));
            x += 34.0 + 6.5 * name.chars().count() as f64;
        }
    }
}

fn orient(mut sc: Scale, inverted: bool) -> Scale {
    if inverted {
        std::mem::swap(&mut sc.p0, &mut sc.p1);
    }
    sc
}

fn draw_series(s: &mut String, ser: &Series, sx: &Scale, sy: &Scale, base_px: f64) {
    let pts: Vec<(f64, f64)> = ser
        .points
        .iter()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .map(|&(x, y)| (sx.px(x), sy.px(y)))
        .collect();
    let dash = if ser.dashed { " stroke-dasharray=\"5,3\"" } else { "" };
    match ser.style {
        Style::Points => {
            for e in &ser.spread {
                let (xa, xb, ya, yb) = (sx.px(e.0), sx.px(e.1), sy.px(e.2), sy.px(e.3));
                let (cx, cy) = ((xa + xb) / 2.0, (ya + yb) / 2.0);
                let _ = write!(s, "<line x1=\"{xa:.1}\" y1=\"{cy:.1}\" x2=\"{xb:.1}\" y2=\"{cy:.1}\" stroke=\"{c}\"/>\
                    <line x1=\"{cx:.1}\" y1=\"{ya:.1}\" x2=\"{cx:.1}\" y2=\"{yb:.1}\" stroke=\"{c}\"/>", c = ser.color);
            }
            for (x, y) in pts {
                let _ = write!(s, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{}\" stroke=\"white\"/>", ser.color);
                if ser.labelled {
                    let _ = write!(s, "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\" font-size=\"11\">{}</text>", x + 7.0, y - 6.0, ser.color, esc(&ser.name));
                }
            }
        }
        Style::Line | Style::Area | Style::Step => {
            if pts.is_empty() {
                return;
            }
            let mut d = String::new();
            for (i, &(x, y)) in pts.iter().enumerate() {
                if i == 0 {
                    let _ = write!(d, "M{x:.1},{y:.1}");
                } else if ser.style == Style::Step {
                    let _ = write!(d, "H{x:.1}V{y:.1}");
                } else {
                    let _ = write!(d, "L{x:.1},{y:.1}");
                }
            }
            if ser.style == Style::Area {
                let (first, last) = (pts[0].0, pts[pts.len() - 1].0);
                let _ = write!(s, "<path d=\"{d}L{last:.1},{base_px:.1}L{first:.1},{base_px:.1}Z\" fill=\"{}\" fill-opacity=\"0.15\" stroke=\"none\"/>", ser.color);
            }
            let _ = write!(s, "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{dash}/>", ser.color);
        }
    }
}

/// Several charts stacked vertically in one SVG document (e.g. capacity above delay, sharing
/// the time axis), under one title.
pub fn stack(title: &str, charts: &[Chart]) -> String {
    let width = charts.iter().map(|c| c.width).max().unwrap_or(900);
    let title_h = 30u32;
    let height = title_h + charts.iter().map(|c| c.height).sum::<u32>();
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" {FONT}>\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
         <text x=\"{}\" y=\"21\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{}</text>",
        width / 2,
        esc(title)
    );
    let mut y = title_h;
    for c in charts {
        // A nested <svg> is positioned by x/y; its own width/height/viewBox keep its scale.
        let inner = c.svg().replacen("<svg ", &format!("<svg x=\"0\" y=\"{y}\" "), 1);
        s.push_str(&inner);
        y += c.height;
    }
    s.push_str("</svg>");
    s
}

/// A tiny stable hash for unique clip-path ids within one document.
fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// One bar: (value, error-bar low, error-bar high).
pub type Bar = (f64, f64, f64);
/// A named series of bars, one per category (None: no bar there).
pub type BarSeries = (String, Vec<Option<Bar>>);

/// A grouped bar chart: one group per category, one bar per series, optional error bars
/// (min, max) per bar.
pub fn bars(title: &str, y_label: &str, categories: &[String], series: &[BarSeries]) -> String {
    let (w, h) = (900.0, 320.0);
    let (x0, x1, y0, y1) = (MARGIN_L, w - MARGIN_R_ONE_AXIS, h - MARGIN_B, MARGIN_T);
    let vals = series.iter().flat_map(|(_, v)| v.iter().flatten().flat_map(|&(m, _, hi)| [m, hi]));
    let (lo, hi) = fit(&Axis::new("").range(0.0, 0.0).clone_with_none(), vals.chain(std::iter::once(0.0)));
    let sy = Scale { lo, hi, p0: y0, p1: y1, log: false };
    let mut s = svg_open(w, h, title, 20.0);
    for (v, label) in ticks(lo, hi, false) {
        let py = sy.px(v);
        let _ = write!(s, "<line x1=\"{x0}\" y1=\"{py:.1}\" x2=\"{x1}\" y2=\"{py:.1}\" stroke=\"#e5e5e5\"/>\
            <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>", x0 - 6.0, py + 4.0);
    }
    let _ = write!(s, "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>", (y0 + y1) / 2.0, esc(y_label));
    let group_w = (x1 - x0) / categories.len().max(1) as f64;
    let bar_w = (group_w * 0.8) / series.len().max(1) as f64;
    for (ci, cat) in categories.iter().enumerate() {
        let gx = x0 + ci as f64 * group_w + group_w * 0.1;
        for (si, (_, vals)) in series.iter().enumerate() {
            if let Some(Some((mean, emin, emax))) = vals.get(ci) {
                let bx = gx + si as f64 * bar_w;
                let top = sy.px(*mean);
                let _ = write!(s, "<rect x=\"{bx:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {mean:.3}</title></rect>",
                    bar_w * 0.92, (y0 - top).max(0.0), color(si), esc(cat));
                if emax > emin {
                    let cx = bx + bar_w * 0.46;
                    let _ = write!(s, "<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"#333\"/>", sy.px(*emin), sy.px(*emax));
                }
            }
        }
        let _ = write!(s, "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>", gx + group_w * 0.4, y0 + 16.0, esc(cat));
    }
    let _ = write!(s, "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#333\"/>");
    let mut lx = x0;
    for (si, (name, _)) in series.iter().enumerate() {
        let _ = write!(s, "<rect x=\"{lx}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            h - 24.0, color(si), lx + 16.0, h - 14.0, esc(name));
        lx += 34.0 + 6.5 * name.chars().count() as f64;
    }
    s.push_str("</svg>");
    s
}

impl Axis {
    fn clone_with_none(mut self) -> Axis {
        self.range = None;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks_cover_the_range() {
        let t = ticks(0.0, 100.0, false);
        assert_eq!(t.first().unwrap().1, "0");
        assert_eq!(t.last().unwrap().1, "100");
        assert!(t.len() >= 5 && t.len() <= 12, "{t:?}");
        let l = ticks(10.0, 1000.0, true);
        assert!(l.iter().any(|(v, _)| (*v - 100.0).abs() < 1e-9));
    }

    #[test]
    fn inverted_log_axis_puts_small_values_right() {
        let sc = orient(Scale { lo: 10.0, hi: 1000.0, p0: 0.0, p1: 100.0, log: true }, true);
        assert!(sc.px(10.0) > sc.px(1000.0));
        assert!((sc.px(100.0) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn chart_renders_series_markers_and_escapes_text() {
        let mut c = Chart::new("a <b>", Axis::new("time (s)"), Axis::new("Mbit/s"));
        c.series.push(Series::new("cubic & co", color(0), Style::Line, vec![(0.0, 1.0), (1.0, 2.0)]));
        c.markers.push(Marker::new(0.5, "#888", "3,3"));
        let svg = c.svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("cubic &amp; co"));
        assert!(svg.contains("<path d=\"M"));
        assert_eq!(svg.matches("stroke-dasharray=\"3,3\"").count(), 1);
    }

    #[test]
    fn stacked_charts_keep_their_heights_and_distinct_clips() {
        let a = Chart::new("capacity", Axis::new("t"), Axis::new("Mbit/s"));
        let mut b = Chart::new("delay", Axis::new("t"), Axis::new("ms"));
        b.height = 200;
        let svg = stack("trace x", &[a, b]);
        assert!(svg.contains("height=\"590\""), "{}", &svg[..200]);
        assert!(svg.contains("<svg x=\"0\" y=\"30\"") && svg.contains("<svg x=\"0\" y=\"390\""));
        assert!(svg.contains("clip-path=\"url(#clip"));
        let ids: Vec<&str> = svg.match_indices("<clipPath id=\"").map(|(i, _)| &svg[i + 15..i + 30]).collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
    }

    #[test]
    fn bars_draw_one_rect_per_value() {
        let svg = bars(
            "util",
            "%",
            &["a".into(), "b".into()],
            &[("x".into(), vec![Some((50.0, 40.0, 60.0)), None]), ("y".into(), vec![Some((70.0, 70.0, 70.0)), Some((20.0, 10.0, 30.0))])],
        );
        assert_eq!(svg.matches("<title>").count(), 3);
    }
}
