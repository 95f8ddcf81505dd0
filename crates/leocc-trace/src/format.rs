//! Our single-file trace format, version 1 (documented in docs/traces.md).
//!
//! ```text
//! # leocc-trace v1
//! name = starlink-down-60s              header: `key = value` lines (and `#` comments)
//! direction = down
//! resolution_us = 1000
//! [reconfigurations lines=2]            sections: `[name key=value ...]`, then exactly
//! 12034.5                               `lines` data lines
//! 27034.5
//! [down.capacity bin_us=1000 period_ms=60000 lines=600]
//! 0 17 16 17 ...                        start (ms) of a run of bins, then the number of
//! ...                                   opportunities in each bin (run-length of per-ms counts)
//! [down.delay interval_ms=10 lines=6000]
//! 27.5                                  one-way delay (ms) per interval
//! [down.loss constant=0.002]
//! [end]
//! ```
//!
//! Declared line counts make a truncated file an error instead of a shorter trace; `[end]`
//! makes truncation between sections visible too. Anything after `[end]` is an error.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use leocc_base::FileError;
use crate::model::{Capacity, DelaySeries, DirTrace, Loss, Measured, Meta, Segment, Span, Trace};
use leocc_base::text::{self, MAX_DELAY_US, MAX_TIME_US};

/// The first line of every file in this format.
pub const MAGIC: &str = "# leocc-trace v1";
/// Prefix shared by every version of the format, used to recognise it.
const MAGIC_PREFIX: &str = "# leocc-trace";
/// Bins per capacity line when writing (100 ms at 1 ms bins keeps lines readable).
const BINS_PER_LINE: u64 = 100;

/// Whether `data` starts like one of our files (any version).
pub fn is_ours(data: &[u8]) -> bool {
    data.starts_with(MAGIC_PREFIX.as_bytes())
}

/// A section header: its name, parameters and the line it is on.
struct Section {
    name: String,
    params: BTreeMap<String, String>,
    line: usize,
}

/// Parser state: the file name for errors and the remaining lines.
struct Reader<'a> {
    file: &'a Path,
    lines: Vec<(usize, &'a str)>,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, line: usize, p: impl Into<String>) -> FileError {
        FileError::new(self.file, line, p)
    }

    fn peek(&self) -> Option<(usize, &'a str)> {
        self.lines.get(self.pos).copied()
    }

    /// Takes the `n` data lines of `sec`, failing if the section ends early.
    fn data_lines(&mut self, sec: &Section) -> Result<Vec<(usize, &'a str)>, FileError> {
        let n = self.count(sec)?;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.peek() {
                Some((no, t)) if !t.starts_with('[') => {
                    out.push((no, t));
                    self.pos += 1;
                }
                other => {
                    let at = other.map(|(no, _)| no).unwrap_or(self.lines.last().map(|l| l.0 + 1).unwrap_or(1));
                    return Err(self.err(at, format!("truncated section [{}]: declares {n} lines, found {}", sec.name, out.len())));
                }
            }
        }
        Ok(out)
    }

    fn count(&self, sec: &Section) -> Result<usize, FileError> {
        let v = sec.params.get("lines").ok_or_else(|| self.err(sec.line, format!("section [{}] lacks lines=N", sec.name)))?;
        let n = text::parse_u64(v, "lines").map_err(|p| self.err(sec.line, p))?;
        if n as usize > self.lines.len() {
            return Err(self.err(sec.line, format!("truncated section [{}]: declares {n} lines but the file is shorter", sec.name)));
        }
        Ok(n as usize)
    }

    fn param_ms(&self, sec: &Section, key: &str) -> Result<Option<u64>, FileError> {
        sec.params.get(key).map(|v| text::parse_ms_as_us(v, key).map_err(|p| self.err(sec.line, p))).transpose()
    }

    fn param_u64(&self, sec: &Section, key: &str) -> Result<Option<u64>, FileError> {
        sec.params.get(key).map(|v| text::parse_u64(v, key).map_err(|p| self.err(sec.line, p))).transpose()
    }

    fn require_ms(&self, sec: &Section, key: &str) -> Result<u64, FileError> {
        match self.param_ms(sec, key)? {
            Some(0) => Err(self.err(sec.line, format!("{key} must be positive"))),
            Some(v) => Ok(v),
            None => Err(self.err(sec.line, format!("section [{}] lacks {key}=", sec.name))),
        }
    }

    fn check_params(&self, sec: &Section, allowed: &[&str]) -> Result<(), FileError> {
        match sec.params.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(self.err(sec.line, format!("unknown parameter {k:?} in [{}] (allowed: {})", sec.name, allowed.join(", ")))),
            None => Ok(()),
        }
    }
}

fn parse_section_header(line: &str) -> Result<Section, String> {
    let inner = line
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .ok_or_else(|| format!("malformed section header {line:?} (expected [name key=value ...])"))?;
    let mut words = inner.split_ascii_whitespace();
    let name = words.next().ok_or("empty section name")?.to_string();
    let mut params = BTreeMap::new();
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("section parameter {w:?} is not key=value"))?;
        if params.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("parameter {k:?} given twice"));
        }
    }
    Ok(Section { name, params, line: 0 })
}

/// Parses a whole file in our format.
pub fn parse(file: &Path, data: &[u8]) -> Result<Trace, FileError> {
    let mut lines = Vec::new();
    for l in text::lines(data) {
        let l = l.map_err(|(no, p)| FileError::new(file, no, p))?;
        lines.push((l.no, l.text));
    }
    let Some(&(_, first)) = lines.first() else { return Err(FileError::whole(file, "empty file")) };
    if first != MAGIC {
        return Err(FileError::new(file, 1, format!("unsupported version {first:?} (this leocc reads {MAGIC:?})")));
    }
    let mut r = Reader { file, lines, pos: 1 };
    let meta = parse_header(&mut r)?;
    let mut t = Trace { meta, up: DirTrace::default(), down: DirTrace::default(), reconfigurations: Vec::new(), outages: Vec::new(), terrestrial: None };
    let (mut t_cap, mut t_delay, mut t_loss) = (None, None, None);
    let mut seen = std::collections::HashSet::new();
    loop {
        let Some((no, text)) = r.peek() else {
            let last = r.lines.last().map(|l| l.0).unwrap_or(1);
            return Err(r.err(last, "truncated file: missing [end]"));
        };
        r.pos += 1;
        let mut sec = parse_section_header(text).map_err(|p| r.err(no, p))?;
        sec.line = no;
        if sec.name == "end" {
            if !sec.params.is_empty() {
                return Err(r.err(no, "[end] takes no parameters"));
            }
            if let Some((no, _)) = r.peek() {
                return Err(r.err(no, "trailing garbage after [end]"));
            }
            break;
        }
        if !seen.insert(sec.name.clone()) {
            return Err(r.err(no, format!("section [{}] appears twice", sec.name)));
        }
        match sec.name.as_str() {
            "reconfigurations" => t.reconfigurations = parse_reconfigurations(&mut r, &sec)?,
            "outages" => t.outages = parse_outages(&mut r, &sec)?,
            "down.capacity" => t.down.capacity = Some(parse_capacity(&mut r, &sec)?),
            "up.capacity" => t.up.capacity = Some(parse_capacity(&mut r, &sec)?),
            "terrestrial.capacity" => t_cap = Some(parse_capacity(&mut r, &sec)?),
            "down.delay" => t.down.delay = Some(parse_delay(&mut r, &sec)?),
            "up.delay" => t.up.delay = Some(parse_delay(&mut r, &sec)?),
            "terrestrial.delay" => t_delay = Some(parse_delay(&mut r, &sec)?),
            "down.loss" => t.down.loss = parse_loss(&mut r, &sec)?,
            "up.loss" => t.up.loss = parse_loss(&mut r, &sec)?,
            "terrestrial.loss" => t_loss = Some(parse_loss(&mut r, &sec)?),
            other => return Err(r.err(no, format!("unknown section [{other}]"))),
        }
    }
    t.terrestrial = match (t_cap, t_delay) {
        (Some(capacity), Some(delay)) => Some(Segment { capacity, delay, loss: t_loss.unwrap_or(Loss::Constant(0.0)) }),
        (None, None) if t_loss.is_none() => None,
        _ => return Err(FileError::whole(file, "a terrestrial segment needs both [terrestrial.capacity] and [terrestrial.delay]")),
    };
    t.validate().map_err(|p| FileError::whole(file, p))?;
    Ok(t)
}

fn parse_header(r: &mut Reader<'_>) -> Result<Meta, FileError> {
    let mut kv: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    while let Some((no, line)) = r.peek() {
        if line.starts_with('[') {
            break;
        }
        r.pos += 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| r.err(no, format!("expected `key = value` in the header, found {line:?}")))?;
        let k = k.trim();
        if !["name", "source", "licence", "direction", "resolution_us", "notes", "pop_rtt_ms"].contains(&k) {
            return Err(r.err(no, format!("unknown header key {k:?}")));
        }
        if kv.insert(k, (no, v.trim())).is_some() {
            return Err(r.err(no, format!("header key {k:?} given twice")));
        }
    }
    let get = |k: &str| kv.get(k).map(|v| v.1.to_string()).unwrap_or_default();
    let need = |k: &str| kv.get(k).copied().ok_or_else(|| r.err(0, format!("header lacks `{k} = ...`")));
    let (dno, dval) = need("direction")?;
    let direction = Measured::parse(dval).ok_or_else(|| r.err(dno, format!("direction must be up, down or both, not {dval:?}")))?;
    let (rno, rval) = need("resolution_us")?;
    let resolution_us = text::parse_u64(rval, "resolution_us").map_err(|p| r.err(rno, p))?;
    if resolution_us == 0 || resolution_us > 1_000_000 {
        return Err(r.err(rno, "resolution_us must be within 1..=1000000"));
    }
    need("name")?;
    let pop_rtt_us = match kv.get("pop_rtt_ms") {
        None => None,
        Some(&(no, v)) => Some(text::parse_ms_as_us(v, "pop_rtt_ms").map_err(|p| r.err(no, p))?),
    };
    Ok(Meta { name: get("name"), source: get("source"), licence: get("licence"), direction, resolution_us, notes: get("notes"), pop_rtt_us })
}

fn parse_capacity(r: &mut Reader<'_>, sec: &Section) -> Result<Capacity, FileError> {
    r.check_params(sec, &["bin_us", "period_ms", "lines"])?;
    let bin = r.param_u64(sec, "bin_us")?.ok_or_else(|| r.err(sec.line, "capacity section lacks bin_us="))?;
    if bin == 0 || bin > 1_000_000 {
        return Err(r.err(sec.line, "bin_us must be within 1..=1000000"));
    }
    let period = r.param_ms(sec, "period_ms")?;
    let mut times = Vec::new();
    let mut next_free = 0u64; // first time a following line may start at
    let max_per_bin = crate::model::max_opportunities_per_ms() * bin.div_ceil(1000);
    for (no, line) in r.data_lines(sec)? {
        let err = |p: String| FileError::new(r.file, no, p);
        let cols: Vec<&str> = line.split_ascii_whitespace().collect();
        if cols.len() < 2 {
            return Err(err(format!("expected a start time and at least one count, found {} column(s)", cols.len())));
        }
        let start = text::parse_ms_as_us(cols[0], "start time").map_err(err)?;
        if start > MAX_TIME_US {
            return Err(err("start time beyond the 7-day limit".into()));
        }
        if start % bin != 0 {
            return Err(err(format!("start time {} is not a multiple of bin_us={bin}", cols[0])));
        }
        if start < next_free {
            return Err(err(format!("start time {} goes backwards or overlaps the previous line", cols[0])));
        }
        for (j, c) in cols[1..].iter().enumerate() {
            let n = text::parse_u64(c, "opportunity count").map_err(err)?;
            let at = start + j as u64 * bin;
            if at > MAX_TIME_US {
                return Err(err("time beyond the 7-day limit".into()));
            }
            if n > max_per_bin {
                return Err(err(format!("absurd opportunity count {n} in one {bin} µs bin (over 100 Gbit/s)")));
            }
            times.extend(std::iter::repeat_n(at, n as usize));
        }
        next_free = start + (cols.len() as u64 - 1) * bin;
    }
    let cap = Capacity::new(times, period).map_err(|p| r.err(sec.line, format!("[{}]: {p}", sec.name)))?;
    crate::model::check_capacity(&cap).map_err(|p| r.err(sec.line, format!("[{}]: {p}", sec.name)))?;
    Ok(cap)
}

fn parse_delay(r: &mut Reader<'_>, sec: &Section) -> Result<DelaySeries, FileError> {
    r.check_params(sec, &["interval_ms", "lines"])?;
    let interval_us = r.require_ms(sec, "interval_ms")?;
    let mut values = Vec::new();
    for (no, line) in r.data_lines(sec)? {
        let err = |p: String| FileError::new(r.file, no, p);
        let cols = text::columns(line, 1, "one-way delay in ms").map_err(err)?;
        let v = text::parse_ms_as_us(cols[0], "delay").map_err(err)?;
        if v > MAX_DELAY_US {
            return Err(err(format!("absurd one-way delay {} ms (limit {} ms)", cols[0], MAX_DELAY_US / 1000)));
        }
        values.push(v);
    }
    if values.is_empty() {
        return Err(r.err(sec.line, format!("[{}] has no values", sec.name)));
    }
    Ok(DelaySeries { interval_us, values_us: values.into() })
}

fn parse_loss(r: &mut Reader<'_>, sec: &Section) -> Result<Loss, FileError> {
    if let Some(c) = sec.params.get("constant") {
        r.check_params(sec, &["constant"])?;
        return text::parse_prob(c, "loss").map(Loss::Constant).map_err(|p| r.err(sec.line, p));
    }
    r.check_params(sec, &["interval_ms", "lines"])?;
    let interval_us = r.require_ms(sec, "interval_ms")?;
    let mut values = Vec::new();
    for (no, line) in r.data_lines(sec)? {
        let err = |p: String| FileError::new(r.file, no, p);
        let cols = text::columns(line, 1, "loss probability").map_err(err)?;
        values.push(text::parse_prob(cols[0], "loss probability").map_err(err)?);
    }
    if values.is_empty() {
        return Err(r.err(sec.line, format!("[{}] has no values", sec.name)));
    }
    Ok(Loss::Series { interval_us, values: values.into() })
}

fn parse_reconfigurations(r: &mut Reader<'_>, sec: &Section) -> Result<Vec<u64>, FileError> {
    r.check_params(sec, &["lines"])?;
    let mut out: Vec<u64> = Vec::new();
    for (no, line) in r.data_lines(sec)? {
        let err = |p: String| FileError::new(r.file, no, p);
        let cols = text::columns(line, 1, "time in ms").map_err(err)?;
        let t = text::parse_ms_as_us(cols[0], "reconfiguration time").map_err(err)?;
        if t > MAX_TIME_US {
            return Err(err("time beyond the 7-day limit".into()));
        }
        if out.last().is_some_and(|&p| t <= p) {
            return Err(err(format!("reconfiguration times must increase: {} ms", cols[0])));
        }
        out.push(t);
    }
    Ok(out)
}

fn parse_outages(r: &mut Reader<'_>, sec: &Section) -> Result<Vec<Span>, FileError> {
    r.check_params(sec, &["lines"])?;
    let mut out: Vec<Span> = Vec::new();
    for (no, line) in r.data_lines(sec)? {
        let err = |p: String| FileError::new(r.file, no, p);
        let cols = text::columns(line, 2, "start ms, length ms").map_err(err)?;
        let start_us = text::parse_ms_as_us(cols[0], "outage start").map_err(err)?;
        let len_us = text::parse_ms_as_us(cols[1], "outage length").map_err(err)?;
        if start_us > MAX_TIME_US || len_us > MAX_TIME_US {
            return Err(err("time beyond the 7-day limit".into()));
        }
        if out.last().is_some_and(|p| start_us < p.end_us()) {
            return Err(err("outages must be sorted and must not overlap".into()));
        }
        out.push(Span { start_us, len_us });
    }
    Ok(out)
}

/// Renders a trace in our format (the trace is assumed valid).
pub fn render(t: &Trace) -> String {
    let mut s = String::new();
    let m = &t.meta;
    let _ = writeln!(s, "{MAGIC}");
    let one_line = |v: &str| v.replace(['\n', '\r'], " ");
    let _ = writeln!(s, "name = {}", one_line(&m.name));
    for (k, v) in [("source", &m.source), ("licence", &m.licence), ("notes", &m.notes)] {
        if !v.is_empty() {
            let _ = writeln!(s, "{k} = {}", one_line(v));
        }
    }
    let _ = writeln!(s, "direction = {}", m.direction.as_str());
    let _ = writeln!(s, "resolution_us = {}", m.resolution_us);
    if let Some(us) = m.pop_rtt_us {
        let _ = writeln!(s, "pop_rtt_ms = {}", text::us_as_ms(us));
    }
    if !t.reconfigurations.is_empty() {
        let _ = writeln!(s, "[reconfigurations lines={}]", t.reconfigurations.len());
        for &r in &t.reconfigurations {
            let _ = writeln!(s, "{}", text::us_as_ms(r));
        }
    }
    if !t.outages.is_empty() {
        let _ = writeln!(s, "[outages lines={}]", t.outages.len());
        for o in &t.outages {
            let _ = writeln!(s, "{} {}", text::us_as_ms(o.start_us), text::us_as_ms(o.len_us));
        }
    }
    for (name, d) in [("down", &t.down), ("up", &t.up)] {
        if let Some(c) = &d.capacity {
            render_capacity(&mut s, name, c);
        }
        if let Some(dl) = &d.delay {
            render_delay(&mut s, name, dl);
        }
        render_loss(&mut s, name, &d.loss);
    }
    if let Some(seg) = &t.terrestrial {
        render_capacity(&mut s, "terrestrial", &seg.capacity);
        render_delay(&mut s, "terrestrial", &seg.delay);
        render_loss(&mut s, "terrestrial", &seg.loss);
    }
    s.push_str("[end]\n");
    s
}

/// Writes per-bin counts, one line per block of [`BINS_PER_LINE`] bins that has any
/// opportunity, trailing empty bins trimmed. Bins are 1 ms when every time is a whole ms.
fn render_capacity(s: &mut String, name: &str, c: &Capacity) {
    let times = c.times_us();
    let bin = if times.iter().all(|t| t % 1000 == 0) { 1000 } else { 1 };
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0;
    while i < times.len() {
        let block = times[i] / bin / BINS_PER_LINE;
        let start_bin = block * BINS_PER_LINE;
        let mut counts = Vec::new();
        while i < times.len() && times[i] / bin / BINS_PER_LINE == block {
            let b = (times[i] / bin - start_bin) as usize;
            counts.resize(b + 1, 0u64);
            counts[b] += 1;
            i += 1;
        }
        let mut line = text::us_as_ms(start_bin * bin);
        for n in counts {
            let _ = write!(line, " {n}");
        }
        lines.push(line);
    }
    let _ = writeln!(s, "[{name}.capacity bin_us={bin} period_ms={} lines={}]", text::us_as_ms(c.period_us()), lines.len());
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
}

fn render_delay(s: &mut String, name: &str, d: &DelaySeries) {
    let _ = writeln!(s, "[{name}.delay interval_ms={} lines={}]", text::us_as_ms(d.interval_us), d.values_us.len());
    for &v in d.values_us.iter() {
        let _ = writeln!(s, "{}", text::us_as_ms(v));
    }
}

fn render_loss(s: &mut String, name: &str, l: &Loss) {
    match l {
        Loss::Constant(p) => {
            let _ = writeln!(s, "[{name}.loss constant={p}]");
        }
        Loss::Series { interval_us, values } => {
            let _ = writeln!(s, "[{name}.loss interval_ms={} lines={}]", text::us_as_ms(*interval_us), values.len());
            for v in values.iter() {
                let _ = writeln!(s, "{v}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let cap = Capacity::new(vec![0, 1000, 1000, 5000, 250_000, 300_000], Some(300_000)).unwrap();
        let up = Capacity::new(vec![2500, 7000], Some(300_000)).unwrap();
        Trace {
            meta: Meta { name: "t".into(), source: "unit test".into(), licence: "MIT".into(), direction: Measured::Both, resolution_us: 1000, notes: String::new(), pop_rtt_us: None },
            down: DirTrace { capacity: Some(cap.clone()), delay: Some(DelaySeries { interval_us: 10_000, values_us: vec![20_000, 20_500].into() }), loss: Loss::Constant(0.002) },
            up: DirTrace { capacity: Some(up), delay: None, loss: Loss::Series { interval_us: 100_000, values: vec![0.0, 0.25].into() } },
            reconfigurations: vec![12_000, 27_000],
            outages: vec![Span { start_us: 12_000, len_us: 60_500 }],
            terrestrial: Some(Segment { capacity: cap, delay: DelaySeries::constant(4000), loss: Loss::Constant(0.0) }),
        }
    }

    fn err(src: &str) -> FileError {
        parse(Path::new("f.trace"), src.as_bytes()).unwrap_err()
    }

    const GOOD: &str = "# leocc-trace v1\nname = x\ndirection = down\nresolution_us = 1000\n[down.capacity bin_us=1000 period_ms=10 lines=2]\n0 1 2\n5 0 0 0 0 1\n[down.delay interval_ms=10 lines=1]\n20\n[end]\n";

    #[test]
    fn round_trip_is_lossless() {
        let t = sample();
        let text = render(&t);
        let back = parse(Path::new("x"), text.as_bytes()).unwrap();
        assert_eq!(back, t);
        assert_eq!(render(&back), text);
    }

    #[test]
    fn good_file_parses_to_expected_times() {
        let t = parse(Path::new("x"), GOOD.as_bytes()).unwrap();
        assert_eq!(t.down.capacity.unwrap().times_us(), &[0, 1000, 1000, 9000]);
    }

    #[test]
    fn micro_second_times_use_1us_bins() {
        let mut t = sample();
        t.down.capacity = Some(Capacity::new(vec![1, 1500, 1500, 99_999], None).unwrap());
        let back = parse(Path::new("x"), render(&t).as_bytes()).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn each_malformation_is_named() {
        let cases: Vec<(String, usize, &str)> = vec![
            (String::new(), 0, "empty file"),
            (GOOD.replace("v1", "v9"), 1, "unsupported version"),
            (GOOD.replace("0 1 2\n", "0 1 -2\n"), 6, "negative"),
            (GOOD.replace("5 0 0", "1 0 0"), 7, "overlaps"),
            (GOOD.replace("20\n", "NaN\n"), 9, "NaN"),
            (GOOD.replace("20\n", "20000\n"), 9, "absurd one-way delay"),
            (GOOD.replace("0 1 2\n", "0 9000\n"), 6, "absurd opportunity count"),
            (GOOD.replace("bin_us=1000", "bin_us=1").replace("0 1 2\n", "0 5000 5000\n"), 5, "absurd capacity"),
            (GOOD.replace("20\n", "20 3\n"), 9, "expected 1 column"),
            (GOOD.replace("0 1 2\n", "0\n"), 6, "at least one count"),
            (GOOD.replace('\n', "\r\n"), 1, "CRLF"),
            (format!("{GOOD}junk\n"), 11, "trailing garbage"),
            (GOOD.replace("[end]\n", ""), 9, "missing [end]"),
            (GOOD.replace("lines=2]", "lines=3]"), 8, "truncated section"),
            (GOOD.replace("direction = down", "direction = sideways"), 3, "direction must be"),
            (GOOD.replace("name = x\n", "name = x\ncolour = red\n"), 3, "unknown header key"),
            (GOOD.replace("period_ms=10", "period_ms=8"), 5, "after the period"),
            (GOOD.replace("[down.delay", "[down.dealy"), 8, "unknown section"),
        ];
        for (src, line, what) in cases {
            let e = err(&src);
            assert!(e.problem.contains(what), "want {what:?}, got {e}");
            assert_eq!(e.line, line, "{e}");
            assert!(e.to_string().starts_with("f.trace"), "{e}");
        }
    }
}
