//! A heatmap of one value over a two-parameter grid (T3P's throughput-gain and
//! latency-inflation maps): one coloured cell per setting with its value written in it, a
//! diverging colour scale centred on zero (better = blue, worse = red, so the reading does not
//! depend on the sign convention of the metric), and an optional marked cell.

use super::{esc, svg_open};
use std::fmt::Write;

/// Cell size in pixels: room for a value like "+115.3 %" at 12 px.
const CELL_W: f64 = 96.0;
const CELL_H: f64 = 48.0;
/// Room for the y tick labels and the y axis title.
const LEFT: f64 = 150.0;
/// Room for the title above and the x axis below.
const TOP: f64 = 44.0;
const BOTTOM: f64 = 70.0;
/// Room right of the grid for the colour key.
const RIGHT: f64 = 160.0;
/// Width of one character of the 14 px bold title, for making room for a long title over a
/// narrow grid (a one-parameter sweep has one row).
const TITLE_CHAR_W: f64 = 8.0;
/// The diverging ends (ColorBrewer RdBu): good, bad; white in the middle.
const GOOD: (f64, f64, f64) = (33.0, 102.0, 172.0);
const BAD: (f64, f64, f64) = (178.0, 24.0, 43.0);

/// A heatmap: `cells[row][col]`, rows along the y parameter (drawn bottom-up, as an axis),
/// columns along the x parameter.
#[derive(Clone, Debug, Default)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// One label per column.
    pub x_ticks: Vec<String>,
    /// One label per row.
    pub y_ticks: Vec<String>,
    /// None: no data for that setting (drawn grey).
    pub cells: Vec<Vec<Option<f64>>>,
    /// Appended to each value, e.g. " %".
    pub unit: String,
    /// Positive values are good (throughput gain); false for latency inflation.
    pub higher_is_better: bool,
    /// (row, col) of a cell to outline and star: the chosen setting.
    pub marked: Option<(usize, usize)>,
    /// Full colour at no less than this magnitude, so that small differences (a 2 % latency
    /// change) do not look as alarming as large ones just because nothing larger ran.
    pub min_span: f64,
}

fn mix(t: f64, end: (f64, f64, f64)) -> String {
    let t = t.clamp(0.0, 1.0);
    let c = |e: f64| (255.0 + (e - 255.0) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", c(end.0), c(end.1), c(end.2))
}

impl Heatmap {
    /// The fill of a value on the diverging scale that reaches full colour at `span`.
    fn fill(&self, v: f64, span: f64) -> String {
        let good = (v >= 0.0) == self.higher_is_better;
        mix(v.abs() / span, if good { GOOD } else { BAD })
    }

    /// The heatmap as a standalone SVG document.
    pub fn svg(&self) -> String {
        let cols = self.x_ticks.len().max(1);
        let rows = self.y_ticks.len().max(1);
        let (gw, gh) = (cols as f64 * CELL_W, rows as f64 * CELL_H);
        let w = (LEFT + gw + RIGHT).max(self.title.chars().count() as f64 * TITLE_CHAR_W + 20.0);
        let h = TOP + gh + BOTTOM;
        let span = self.cells.iter().flatten().flatten().fold(self.min_span, |m, v| m.max(v.abs())).max(1e-9);
        let mut s = svg_open(w, h, &self.title, 22.0);
        for r in 0..rows {
            // Row 0 at the bottom, like a y axis.
            let y = TOP + gh - (r + 1) as f64 * CELL_H;
            for c in 0..cols {
                let x = LEFT + c as f64 * CELL_W;
                let v = self.cells.get(r).and_then(|row| row.get(c)).copied().flatten();
                let (fill, text) = match v {
                    Some(v) => (self.fill(v, span), format!("{v:+.1}{}", self.unit)),
                    None => ("#dddddd".to_string(), "–".to_string()),
                };
                let dark = v.is_some_and(|v| v.abs() / span > 0.6);
                let _ = write!(
                    s,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{CELL_W}\" height=\"{CELL_H}\" fill=\"{fill}\" stroke=\"white\"><title>{} {}, {} {}: {}</title></rect>\
                     <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>",
                    esc(&self.x_label),
                    esc(self.x_ticks.get(c).map_or("", String::as_str)),
                    esc(&self.y_label),
                    esc(self.y_ticks.get(r).map_or("", String::as_str)),
                    esc(&text),
                    x + CELL_W / 2.0,
                    y + CELL_H / 2.0 + 4.0,
                    if dark { "white" } else { "#222" },
                    esc(&text)
                );
                if self.marked == Some((r, c)) {
                    let _ = write!(
                        s,
                        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\" stroke-width=\"3\"/>\
                         <text x=\"{}\" y=\"{}\" font-size=\"14\">★</text>",
                        x + 1.5,
                        y + 1.5,
                        CELL_W - 3.0,
                        CELL_H - 3.0,
                        x + 5.0,
                        y + 16.0
                    );
                }
            }
        }
        for (c, t) in self.x_ticks.iter().enumerate() {
            let _ = write!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", LEFT + (c as f64 + 0.5) * CELL_W, TOP + gh + 18.0, esc(t));
        }
        for (r, t) in self.y_ticks.iter().enumerate() {
            let y = TOP + gh - (r as f64 + 0.5) * CELL_H + 4.0;
            let _ = write!(s, "<text x=\"{}\" y=\"{y}\" text-anchor=\"end\">{}</text>", LEFT - 8.0, esc(t));
        }
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            LEFT + gw / 2.0,
            TOP + gh + 44.0,
            esc(&self.x_label),
            TOP + gh / 2.0,
            esc(&self.y_label)
        );
        // The colour key: from the worst to the best value the scale reaches.
        let kx = LEFT + gw + 24.0;
        let steps = 10;
        for i in 0..=steps {
            let v = span * (1.0 - 2.0 * i as f64 / steps as f64) * if self.higher_is_better { 1.0 } else { -1.0 };
            let y = TOP + i as f64 * gh / (steps + 1) as f64;
            let _ = write!(s, "<rect x=\"{kx}\" y=\"{y:.1}\" width=\"18\" height=\"{:.1}\" fill=\"{}\"/>", gh / (steps + 1) as f64 + 0.5, self.fill(v, span));
        }
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\">{:+.0}{} better</text><text x=\"{}\" y=\"{}\">{:+.0}{} worse</text>",
            kx + 22.0,
            TOP + 10.0,
            if self.higher_is_better { span } else { -span },
            esc(&self.unit),
            kx + 22.0,
            TOP + gh - 2.0,
            if self.higher_is_better { -span } else { span },
            esc(&self.unit)
        );
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(higher_is_better: bool) -> Heatmap {
        Heatmap {
            title: "gain <%>".into(),
            x_label: "a".into(),
            y_label: "b".into(),
            x_ticks: vec!["1".into(), "2".into()],
            y_ticks: vec!["x".into(), "y".into()],
            cells: vec![vec![Some(10.0), Some(-5.0)], vec![None, Some(0.0)]],
            unit: " %".into(),
            higher_is_better,
            marked: Some((0, 0)),
            min_span: 0.0,
        }
    }

    #[test]
    fn one_cell_per_setting_with_values_and_the_mark() {
        let svg = map(true).svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<title>").count(), 4);
        assert!(svg.contains(">+10.0 %<") && svg.contains(">-5.0 %<") && svg.contains(">–<"));
        assert_eq!(svg.matches('★').count(), 1);
        assert!(svg.contains("gain &lt;%&gt;"));
    }

    #[test]
    fn colours_follow_which_direction_is_better() {
        let up = map(true);
        let down = map(false);
        // The largest value in full colour: blue when higher is better, red when it is worse.
        assert_eq!(up.fill(10.0, 10.0), "#2166ac");
        assert_eq!(down.fill(10.0, 10.0), "#b2182b");
        assert_eq!(up.fill(0.0, 10.0), "#ffffff");
        assert_eq!(up.fill(-10.0, 10.0), "#b2182b");
        // A floor on the scale: the largest value is then only half-saturated.
        let half = Heatmap { min_span: 20.0, ..map(true) }.svg();
        assert!(!half.contains("fill=\"#2166ac\"><title>") && half.contains("+20 % better"), "{half}");
    }
}
