//! LeoCC's parameters by name: the core's one table (`LEOCC_PARAMS` in core/leocc.h, read
//! through `leocc_param_range`) gives every parameter's name, unit, meaning, default and range,
//! so nothing here lists them again. [`Params::parse`] is the one parser of a parameter's text
//! (`leocc sim --param leocc.NAME=VALUE`, the simulator's LeoCC, `leocc kernel params --set`);
//! a value is refused exactly when `leocc_init` (host and BPF) would not run it as given.
//! [`Params::markdown_table`] is the table of docs/algorithm.md.

use std::ffi::{c_char, CStr};
use std::fmt;
use std::sync::OnceLock;

use crate::ffi::{self, RawParamRange};
use crate::suggest::did_you_mean;
use crate::Params;

/// One row of the core's parameter table (`LEOCC_PARAMS`, core/leocc.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamRow {
    /// The field's name in `struct leocc_params` (and in `leocc.NAME=VALUE`).
    pub name: &'static str,
    /// Byte offset of the field in `struct leocc_params`.
    pub offset: u32,
    /// Its value in `leocc_default_params`.
    pub default: u32,
    /// Smallest accepted value.
    pub min: u32,
    /// Largest accepted value.
    pub max: u32,
    /// Unit: `x1024` (fixed point, 1024 = 1.0), `us`, `packets`, `%`, `flag`, ...
    pub unit: &'static str,
    /// What it is, one line.
    pub doc: &'static str,
    /// Where the default comes from (paper, authors' code, BBR, ours).
    pub source: &'static str,
    /// `doc, unit`: the one-line help of `--list-params` and of errors.
    pub help: &'static str,
}

/// Every row of the core's table, in struct order, read once.
fn rows() -> &'static [ParamRow] {
    static ROWS: OnceLock<Vec<ParamRow>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let words = std::mem::size_of::<Params>() / 4;
        let mut rows = Vec::new();
        loop {
            let mut raw = RawParamRange::default();
            // SAFETY: the core fills `raw` (a valid, writable struct of the C layout) and
            // returns 0 past the last row; index is any u32.
            if unsafe { ffi::leocc_param_range(rows.len() as u32, &mut raw) } == 0 {
                break;
            }
            let (name, unit, doc, source) = (c_str(raw.name), c_str(raw.unit), c_str(raw.doc), c_str(raw.source));
            // Params::word(_mut) index the struct by these offsets.
            assert!(raw.offset % 4 == 0 && (raw.offset as usize) / 4 < words, "{name}: offset {} outside struct leocc_params", raw.offset);
            // Once per process, 42 short strings: the help lives as long as the table.
            let help: &'static str = Box::leak(format!("{doc}, {unit}").into_boxed_str());
            rows.push(ParamRow { name, offset: raw.offset, default: raw.def, min: raw.min, max: raw.max, unit, doc, source, help });
        }
        rows
    })
}

fn c_str(p: *const c_char) -> &'static str {
    assert!(!p.is_null(), "a parameter row without a string");
    // SAFETY: every string of the table is a string literal of core/leocc.h: NUL-terminated
    // and alive for the whole program.
    unsafe { CStr::from_ptr(p) }.to_str().expect("the parameter table is ASCII")
}

/// Why a parameter setting was refused. Every message names the parameter, what was given
/// and, for a known parameter, its range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// Not `NAME=VALUE`.
    Syntax(String),
    /// No parameter of that name.
    Unknown(String),
    /// Not a decimal integer.
    NotAnInteger(&'static ParamRow, String),
    /// Outside the parameter's range (negative and beyond `u32` included).
    OutOfRange(&'static ParamRow, i64),
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Syntax(s) => write!(f, "bad parameter '{s}': expected NAME=VALUE"),
            ParamError::Unknown(name) => {
                let known: Vec<&str> = rows().iter().map(|r| r.name).collect();
                write!(f, "unknown LeoCC parameter '{name}'{} (known: {})", did_you_mean(name, known.iter().copied()), known.join(", "))
            }
            ParamError::NotAnInteger(r, value) => write!(
                f,
                "LeoCC parameter '{}' = '{value}' is not an integer: it must be in {}..={} ({})",
                r.name, r.min, r.max, r.help
            ),
            ParamError::OutOfRange(r, value) => {
                write!(f, "LeoCC parameter '{}' = {value} is out of range: it must be in {}..={} ({})", r.name, r.min, r.max, r.help)
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// The fixed-point unit of gains (core/leocc.h `LEOCC_UNIT`; rows with unit `x1024`).
const UNIT: u32 = 1024;

impl Params {
    /// Every parameter, in struct order, from the core's table.
    pub fn rows() -> &'static [ParamRow] {
        rows()
    }

    /// The row of the parameter called `name`, if there is one.
    pub fn row(name: &str) -> Option<&'static ParamRow> {
        rows().iter().find(|r| r.name == name)
    }

    fn known(name: &str) -> Result<&'static ParamRow, ParamError> {
        Self::row(name).ok_or_else(|| ParamError::Unknown(name.to_string()))
    }

    /// The struct as its words, in the table's order.
    fn words(&self) -> &[u32] {
        // SAFETY: Params is repr(C) and made of u32 fields only (ffi.rs; the layout test
        // checks every offset against the core's), so it is exactly an array of u32 words.
        unsafe { std::slice::from_raw_parts((self as *const Params).cast::<u32>(), std::mem::size_of::<Params>() / 4) }
    }

    fn words_mut(&mut self) -> &mut [u32] {
        // SAFETY: as in `words`; any u32 value is a valid field.
        unsafe { std::slice::from_raw_parts_mut((self as *mut Params).cast::<u32>(), std::mem::size_of::<Params>() / 4) }
    }

    /// The value of the parameter called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<u32> {
        Self::row(name).map(|r| self.words()[r.offset as usize / 4])
    }

    /// Sets the parameter called `name` to `value`: an unknown name (with the likely one it
    /// was meant to be) or a value outside the parameter's range is an error, and leaves
    /// `self` as it was.
    pub fn set(&mut self, name: &str, value: u32) -> Result<(), ParamError> {
        let r = Self::known(name)?;
        if !(r.min..=r.max).contains(&value) {
            return Err(ParamError::OutOfRange(r, i64::from(value)));
        }
        self.words_mut()[r.offset as usize / 4] = value;
        Ok(())
    }

    /// Sets the parameter called `name` from its text `value` (a decimal integer, spaces
    /// around either ignored): the one parser of LeoCC's parameters. Errors as [`Params::set`]'s,
    /// and a value that is not an integer names the range.
    pub fn parse(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        let r = Self::known(name.trim())?;
        let v: i64 = value.trim().parse().map_err(|_| ParamError::NotAnInteger(r, value.trim().to_string()))?;
        let v = u32::try_from(v).map_err(|_| ParamError::OutOfRange(r, v))?;
        self.set(r.name, v)
    }

    /// Applies `NAME=VALUE` settings in order ([`Params::parse`] each).
    pub fn apply<'a>(&mut self, settings: impl IntoIterator<Item = &'a str>) -> Result<(), ParamError> {
        for s in settings {
            let (name, value) = s.split_once('=').ok_or_else(|| ParamError::Syntax(s.to_string()))?;
            self.parse(name, value)?;
        }
        Ok(())
    }

    /// The parameter table of docs/algorithm.md (between its `params:begin` and `params:end`
    /// markers), generated from the core's table: `leocc kernel params --markdown`.
    pub fn markdown_table() -> String {
        let mut out = String::from("| field | default | range | unit | what | source |\n|---|---:|---:|---|---|---|\n");
        for r in rows() {
            for s in [r.unit, r.doc, r.source] {
                assert!(!s.contains('|'), "{}: '|' would split the markdown cell: {s}", r.name);
            }
            let range = match (human(r.min, r.unit), human(r.max, r.unit)) {
                (Some(lo), Some(hi)) => format!("{}–{} ({lo}–{hi})", r.min, r.max),
                _ => format!("{}–{}", r.min, r.max),
            };
            let default = match human(r.default, r.unit) {
                Some(h) if h != r.default.to_string() => format!("{} ({h})", r.default),
                _ => r.default.to_string(),
            };
            out += &format!("| {} | {default} | {range} | {} | {} | {} |\n", r.name, r.unit, r.doc, r.source);
        }
        out
    }
}

/// `value` in a reader's unit where the raw one is hard to read: gains as decimals, times of
/// 0.1 ms or more in ms or s; None for every other unit.
fn human(value: u32, unit: &str) -> Option<String> {
    Some(match unit {
        "x1024" => {
            let s = format!("{:.3}", f64::from(value) / f64::from(UNIT));
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        "us" if value >= 1_000_000 && value % 100_000 == 0 => format!("{} s", f64::from(value) / 1e6),
        "us" if value >= 100 && value % 100 == 0 => format!("{} ms", f64::from(value) / 1e3),
        "us" if value == 0 => "0".to_string(),
        "us" => format!("{value} us"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust mirror of `struct leocc_params` (ffi.rs) is the core's: the same size, and
    /// every field at the offset of the core's row of the same name, in the same order.
    #[test]
    fn the_rust_struct_has_the_core_layout() {
        let rows = Params::rows();
        // leocc.c asserts sizeof(struct leocc_params) == rows x 4 at compile time.
        assert_eq!(std::mem::size_of::<Params>(), rows.len() * 4, "one u32 per row of LEOCC_PARAMS");
        assert_eq!(crate::ffi::PARAMS_FIELDS.len(), rows.len(), "a field is missing from the Rust mirror (ffi.rs)");
        for ((field, offset), r) in crate::ffi::PARAMS_FIELDS.iter().zip(rows) {
            assert_eq!((*field, *offset), (r.name, r.offset as usize), "ffi.rs field vs the core's row");
        }
    }

    #[test]
    fn the_rows_hold_the_defaults_and_say_what_they_are() {
        let p = Params::default();
        for r in Params::rows() {
            assert_eq!(p.get(r.name), Some(r.default), "{}: leocc_default_params vs its row", r.name);
            assert!((r.min..=r.max).contains(&r.default), "default {} = {} outside {}..={}", r.name, r.default, r.min, r.max);
            assert!(!r.unit.is_empty() && !r.doc.is_empty() && !r.source.is_empty(), "{}: unit, doc and source", r.name);
            assert_eq!(r.help, format!("{}, {}", r.doc, r.unit));
        }
        assert_eq!(Params::row("min_cwnd").map(|r| (r.min, r.max, r.unit)), Some((2, 1000, "packets")));
        assert!(Params::row("nope").is_none());
    }

    #[test]
    fn every_field_is_settable_at_both_ends_of_its_range_and_not_beyond() {
        let mut p = Params::default();
        for r in Params::rows() {
            for v in [r.min, r.max] {
                p.set(r.name, v).unwrap();
                assert_eq!(p.get(r.name), Some(v), "{}", r.name);
                p.parse(r.name, &v.to_string()).unwrap();
            }
            if r.max < u32::MAX {
                let e = p.set(r.name, r.max + 1).unwrap_err().to_string();
                assert!(e.contains(&format!("must be in {}..={}", r.min, r.max)), "{e}");
                assert_eq!(p.get(r.name), Some(r.max), "a refused value leaves {} alone", r.name);
            }
            if r.min > 0 {
                assert!(p.parse(r.name, &(r.min - 1).to_string()).is_err(), "{} below its minimum", r.name);
            }
        }
        // Only the named field moves.
        let mut q = Params::default();
        q.set("cycle_len", 12).unwrap();
        assert_eq!(q, Params { cycle_len: 12, ..Params::default() });
    }

    #[test]
    fn parse_names_the_parameter_the_value_and_the_range() {
        let mut p = Params::default();
        p.apply(["delta_rtt_us=0", " cycle_len = 6"]).unwrap();
        assert_eq!((p.delta_rtt_us, p.cycle_len), (0, 6));
        let e = p.apply(["nope=1"]).unwrap_err().to_string();
        assert!(e.starts_with("unknown LeoCC parameter 'nope' (known: startup_gain, "), "{e}");
        let e = p.parse("delta_rtt", "0").unwrap_err().to_string();
        assert!(e.starts_with("unknown LeoCC parameter 'delta_rtt' (did you mean delta_rtt_us?) (known: "), "{e}");
        assert_eq!(p.apply(["delta_rtt_us"]).unwrap_err().to_string(), "bad parameter 'delta_rtt_us': expected NAME=VALUE");
        assert_eq!(
            p.parse("delta_rtt_us", "1.5").unwrap_err().to_string(),
            "LeoCC parameter 'delta_rtt_us' = '1.5' is not an integer: it must be in 0..=1000000 (Delta_RTT of eq. 4, above the probe's RTT range, us)"
        );
        assert!(p.parse("delta_rtt_us", "-1").unwrap_err().to_string().contains("'delta_rtt_us' = -1 is out of range: it must be in 0..=1000000"));
        // The values of issue 34: a window floor of 2^32-1 and of 0.
        let e = p.apply(["min_cwnd=4294967295"]).unwrap_err();
        assert_eq!(e.to_string(), "LeoCC parameter 'min_cwnd' = 4294967295 is out of range: it must be in 2..=1000 (floor of every window, packets)");
        assert!(matches!(e, ParamError::OutOfRange(r, 4294967295) if r.name == "min_cwnd"));
        assert!(p.parse("min_cwnd", "0").unwrap_err().to_string().contains("must be in 2..=1000"));
        assert!(p.parse("min_cwnd", "99999999999").unwrap_err().to_string().contains("= 99999999999 is out of range: it must be in 2..=1000"));
        assert_eq!(p.min_cwnd, Params::default().min_cwnd);
    }

    #[test]
    fn the_markdown_table_renders_units() {
        let t = Params::markdown_table();
        assert!(t.contains("| startup_gain | 2955 (2.886) | 1536–4096 (1.5–4) | x1024 |"), "{t}");
        assert!(t.contains("| rtt_win_us | 10000000 (10 s) | 1000–60000000 (1 ms–60 s) | us |"), "{t}");
        assert!(t.contains("| min_cwnd | 4 | 2–1000 | packets |"), "{t}");
        assert_eq!(t.lines().count(), Params::rows().len() + 2);
    }

    /// docs/algorithm.md's parameter table is generated, never hand-edited: it must equal
    /// `Params::markdown_table()` (`leocc kernel params --markdown`).
    #[test]
    fn docs_algorithm_md_has_the_generated_parameter_table() {
        const BEGIN: &str = "<!-- params:begin -->\n";
        const END: &str = "<!-- params:end -->";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/algorithm.md");
        let doc = std::fs::read_to_string(&path).expect("docs/algorithm.md");
        let start = doc.find(BEGIN).expect("docs/algorithm.md has a params:begin marker") + BEGIN.len();
        let end = doc.find(END).expect("docs/algorithm.md has a params:end marker");
        assert_eq!(&doc[start..end], Params::markdown_table(), "docs/algorithm.md's parameter table is stale: run scripts/update-docs-params.sh");
    }
}
