//! The formats users already have, read and written losslessly.
//!
//! * mahimahi capacity: one line per 1500-byte delivery opportunity, the value its time in
//!   whole milliseconds, non-decreasing; n equal lines in one ms = n × 12 Mbit/s; the file
//!   loops at its last value.
//! * LeoReplayer delay: line i is the one-way delay in ms (decimals allowed, 1 µs resolution)
//!   of the i-th 10 ms interval.
//!
//! Canonical files (no leading zeros or blanks, LF endings, final newline) come back
//! byte-identical from parse + write; other valid files come back normalised to that form.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use leocc_base::FileError;
use crate::model::{Capacity, DelaySeries, DirTrace, Dir, Measured, Meta, Trace};
use leocc_base::text::{self, MAX_DELAY_US, MAX_TIME_US};

/// LeoReplayer's delay interval: 10 ms.
pub const LEOREPLAYER_INTERVAL_US: u64 = 10_000;

/// Parses a mahimahi capacity file into opportunity times in µs.
pub fn parse_capacity(file: &Path, data: &[u8]) -> Result<Capacity, FileError> {
    parse_capacity_from(file, data)
}

/// [`parse_capacity`] from a reader, line by line: memory follows the opportunities, not the
/// file (see [`text::for_each_line`]).
pub fn parse_capacity_from(file: &Path, r: impl BufRead) -> Result<Capacity, FileError> {
    let mut times = Vec::new();
    let mut prev = 0u64;
    let mut run = 0usize;
    let max_per_ms = crate::model::max_opportunities_per_ms() as usize;
    text::for_each_line(file, r, |line| {
        let err = |p: String| FileError::new(file, line.no, p);
        if line.text.trim().is_empty() {
            return Err(err("empty line (expected one time in ms per line)".into()));
        }
        let cols = text::columns(line.text, 1, "time in ms").map_err(err)?;
        let ms = text::parse_u64(cols[0], "time").map_err(err)?;
        let us = ms.checked_mul(1000).filter(|&us| us <= MAX_TIME_US).ok_or_else(|| {
            err(format!("time {ms} ms is beyond the 7-day limit (is the unit ms?)"))
        })?;
        if us < prev {
            return Err(err(format!("time goes backwards: {ms} ms after {} ms", prev / 1000)));
        }
        run = if us == prev && !times.is_empty() { run + 1 } else { 1 };
        if run > max_per_ms {
            return Err(err(format!("absurd capacity: more than {max_per_ms} opportunities in ms {ms} (over 100 Gbit/s)")));
        }
        prev = us;
        times.push(us);
        Ok(())
    })?;
    if times.is_empty() {
        return Err(FileError::whole(file, "empty file (a mahimahi trace needs at least one line)"));
    }
    times.shrink_to_fit();
    Capacity::new(times, None).map_err(|p| FileError::whole(file, p))
}

/// Renders a capacity schedule as a mahimahi file. Fails when a time is not a whole ms or the
/// period does not end on the last opportunity (mahimahi cannot express either).
pub fn render_capacity(cap: &Capacity) -> Result<String, String> {
    let times = cap.times_us();
    if times.last() != Some(&cap.period_us()) {
        return Err(format!(
            "the period ({} µs) ends after the last opportunity; mahimahi loops at the last line",
            cap.period_us()
        ));
    }
    let mut s = String::with_capacity(times.len() * 7);
    for &t in times {
        if t % 1000 != 0 {
            return Err(format!("opportunity at {t} µs is not a whole millisecond"));
        }
        let _ = writeln!(s, "{}", t / 1000);
    }
    Ok(s)
}

/// Parses a LeoReplayer delay file (ms per 10 ms interval).
pub fn parse_delay(file: &Path, data: &[u8]) -> Result<DelaySeries, FileError> {
    parse_delay_from(file, data)
}

/// [`parse_delay`] from a reader, line by line (see [`text::for_each_line`]).
pub fn parse_delay_from(file: &Path, r: impl BufRead) -> Result<DelaySeries, FileError> {
    let mut values = Vec::new();
    text::for_each_line(file, r, |line| {
        let err = |p: String| FileError::new(file, line.no, p);
        if line.text.trim().is_empty() {
            return Err(err("empty line (expected one delay in ms per line)".into()));
        }
        let cols = text::columns(line.text, 1, "one-way delay in ms").map_err(err)?;
        let us = text::parse_ms_as_us(cols[0], "delay").map_err(err)?;
        if us > MAX_DELAY_US {
            return Err(err(format!("absurd one-way delay {} ms (limit {} ms)", cols[0], MAX_DELAY_US / 1000)));
        }
        values.push(us);
        Ok(())
    })?;
    if values.is_empty() {
        return Err(FileError::whole(file, "empty file (a delay file needs at least one line)"));
    }
    Ok(DelaySeries { interval_us: LEOREPLAYER_INTERVAL_US, values_us: values.into() })
}

/// Renders a delay series as a LeoReplayer file. A 10 ms series is written as it is; a series
/// on a coarser multiple of 10 ms (e.g. a constant delay) is repeated at 10 ms over `period_us`.
pub fn render_delay(d: &DelaySeries, period_us: u64) -> Result<String, String> {
    let values: Vec<u64> = if d.interval_us == LEOREPLAYER_INTERVAL_US {
        d.values_us.to_vec()
    } else if d.interval_us.is_multiple_of(LEOREPLAYER_INTERVAL_US) {
        (0..period_us.div_ceil(LEOREPLAYER_INTERVAL_US)).map(|i| d.at(i * LEOREPLAYER_INTERVAL_US)).collect()
    } else {
        return Err(format!("delay interval is {} µs; LeoReplayer files need a multiple of 10 ms", d.interval_us));
    };
    let mut s = String::with_capacity(values.len() * 4);
    for &v in values.iter() {
        s.push_str(&text::us_as_ms(v));
        s.push('\n');
    }
    Ok(s)
}

/// Reads a mahimahi capacity file as a one-direction trace (direction: down, zero delay).
pub fn trace_from_capacity_file(file: &Path, data: &[u8]) -> Result<Trace, FileError> {
    let cap = parse_capacity(file, data)?;
    Ok(single_direction_trace(file, cap, None, Measured::Down))
}

fn single_direction_trace(file: &Path, cap: Capacity, delay: Option<DelaySeries>, dir: Measured) -> Trace {
    let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let data = DirTrace { capacity: Some(cap), delay, ..DirTrace::default() };
    let (up, down) = match dir {
        Measured::Up => (data, DirTrace::default()),
        _ => (DirTrace::default(), data),
    };
    Trace {
        meta: Meta { name, source: format!("imported from {}", file.display()), direction: dir, ..Meta::default() },
        up,
        down,
        reconfigurations: Vec::new(),
        outages: Vec::new(),
        terrestrial: None,
    }
}

/// What `leocc trace import` reads.
#[derive(Debug, Clone)]
pub struct ImportSpec {
    /// Capacity file of the measured direction (the downlink when `uplink_bw` is given).
    pub bw: PathBuf,
    /// LeoReplayer delay file, applied to both directions.
    pub delay: Option<PathBuf>,
    /// Capacity file of the uplink.
    pub uplink_bw: Option<PathBuf>,
    /// Which direction `bw` describes when `uplink_bw` is absent.
    pub direction: Dir,
    /// Trace name (default: the stem of `bw`).
    pub name: Option<String>,
}

/// A file opened for reading line by line (never read whole: a dataset may hold huge or
/// binary files under trace names).
fn open(path: &Path) -> Result<BufReader<File>, FileError> {
    File::open(path).map(BufReader::new).map_err(|e| FileError::io(path, &e))
}

/// Imports mahimahi capacity and LeoReplayer delay files into one trace.
pub fn import(spec: &ImportSpec) -> Result<Trace, FileError> {
    let cap = parse_capacity_from(&spec.bw, open(&spec.bw)?)?;
    let delay = match &spec.delay {
        Some(p) => Some(parse_delay_from(p, open(p)?)?),
        None => None,
    };
    let measured = match (spec.uplink_bw.is_some(), spec.direction) {
        (true, _) => Measured::Both,
        (false, Dir::Up) => Measured::Up,
        (false, Dir::Down) => Measured::Down,
    };
    let mut t = single_direction_trace(&spec.bw, cap, delay, measured);
    if let Some(p) = &spec.uplink_bw {
        t.up.capacity = Some(parse_capacity_from(p, open(p)?)?);
    }
    let mut sources = vec![spec.bw.display().to_string()];
    sources.extend(spec.delay.iter().chain(spec.uplink_bw.iter()).map(|p| p.display().to_string()));
    t.meta.source = format!("imported from {}", sources.join(", "));
    if let Some(n) = &spec.name {
        t.meta.name = n.clone();
    }
    Ok(t)
}

/// File names [`export`] writes and [`load_dir`] recognises first.
pub const CAPACITY_FILE: &str = "bw.txt";
/// Delay file name for a trace whose delay is the same in both directions.
pub const DELAY_FILE: &str = "delay.txt";

/// Written by [`export`] beside the data files: which files belong to this export and a hash
/// of each, so that [`load_dir`] can refuse a directory whose files come from two exports. Its
/// name contains neither "bw" nor "delay", so the file pickers below ignore it.
pub const MANIFEST_FILE: &str = "leocc-export.txt";
const MANIFEST_HEADER: &str = "# leocc trace export: these files belong together (name, FNV-1a 64 hash)";

/// FNV-1a, 64 bit: enough to tell two exports apart (not a defence against forgery).
fn fnv1a(data: &[u8]) -> u64 {
    fnv1a_update(FNV1A_OFFSET, data)
}

/// FNV-1a's starting state.
const FNV1A_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv1a_update(h: u64, data: &[u8]) -> u64 {
    data.iter().fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// [`fnv1a`] of a file, read in buffer-sized pieces.
fn fnv1a_file(path: &Path) -> Result<u64, FileError> {
    let mut r = open(path)?;
    let mut h = FNV1A_OFFSET;
    loop {
        let chunk = r.fill_buf().map_err(|e| FileError::io(path, &e))?;
        if chunk.is_empty() {
            return Ok(h);
        }
        h = fnv1a_update(h, chunk);
        let n = chunk.len();
        r.consume(n);
    }
}

/// Writes the trace as mahimahi capacity file(s) and LeoReplayer delay file(s) into `dir`:
/// `bw.txt` (one measured direction) or `bw_down.txt` + `bw_up.txt`, and `delay.txt` or
/// `delay_down.txt` + `delay_up.txt`, plus [`MANIFEST_FILE`]. The directory is written whole
/// into a temporary directory and swapped in, so a failure leaves the old one untouched and
/// no stale file of an earlier export survives; a non-empty `dir` is refused unless `force`.
/// Returns the final paths of the data files. Loss, ground truth and the terrestrial segment
/// have no mahimahi form and are not written.
pub fn export(trace: &Trace, dir: &Path, force: bool) -> Result<Vec<PathBuf>, FileError> {
    let out = leocc_base::out::OutDir::create(dir, force)?;
    let mut files: Vec<(String, String)> = Vec::new();
    let err = |p: String| FileError::whole(dir, p);
    let caps: Vec<(Dir, &Capacity)> =
        [Dir::Down, Dir::Up].iter().filter_map(|&d| trace.dir(d).capacity.as_ref().map(|c| (d, c))).collect();
    for (d, c) in &caps {
        let name = if caps.len() == 1 { CAPACITY_FILE.to_string() } else { format!("bw_{}.txt", d.as_str()) };
        files.push((name, render_capacity(c).map_err(err)?));
    }
    let delays: Vec<(Dir, &DelaySeries)> =
        [Dir::Down, Dir::Up].iter().filter_map(|&d| trace.dir(d).delay.as_ref().map(|s| (d, s))).collect();
    for (d, s) in &delays {
        let name = if delays.len() == 1 { DELAY_FILE.to_string() } else { format!("delay_{}.txt", d.as_str()) };
        files.push((name, render_delay(s, trace.duration_us()).map_err(err)?));
    }
    let mut manifest = format!("{MANIFEST_HEADER}\n");
    for (name, body) in &files {
        leocc_base::write_atomic(&out.path().join(name), body.as_bytes())?;
        let _ = writeln!(manifest, "{name} {:016x}", fnv1a(body.as_bytes()));
    }
    leocc_base::write_atomic(&out.path().join(MANIFEST_FILE), manifest.as_bytes())?;
    out.commit()?;
    Ok(files.into_iter().map(|(n, _)| dir.join(n)).collect())
}

/// When `dir` holds a [`MANIFEST_FILE`], checks that every capacity and delay file in it is
/// listed there with the same hash: a file from another export (copied in, or left by an old
/// version that wrote into the directory in place) would silently pair one trace's capacity
/// with another's delay. Directories from elsewhere have no manifest and are not checked.
fn check_manifest(dir: &Path, names: &[String]) -> Result<(), FileError> {
    let path = dir.join(MANIFEST_FILE);
    let file = match File::open(&path) {
        Ok(f) => BufReader::new(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(FileError::io(&path, &e)),
    };
    let mut listed = std::collections::BTreeMap::new();
    text::for_each_line(&path, file, |line| {
        if line.text.starts_with('#') || line.text.trim().is_empty() {
            return Ok(());
        }
        let cols = text::columns(line.text, 2, "file name and hash").map_err(|p| FileError::new(&path, line.no, p))?;
        let hash = u64::from_str_radix(cols[1], 16).map_err(|_| FileError::new(&path, line.no, format!("bad hash {:?}", cols[1])))?;
        listed.insert(cols[0].to_string(), hash);
        Ok(())
    })?;
    let mixed = |what: String| {
        FileError::whole(dir, format!("{what}: the directory mixes files of two exports; export again into an empty directory (or delete {MANIFEST_FILE} if you combined them on purpose)"))
    };
    for n in names.iter().filter(|n| n.contains("bw") || n.contains("delay")) {
        let Some(&want) = listed.get(n) else {
            return Err(mixed(format!("{n} is not part of the export recorded in {MANIFEST_FILE}")));
        };
        if fnv1a_file(&dir.join(n))? != want {
            return Err(mixed(format!("{n} differs from the file recorded in {MANIFEST_FILE}")));
        }
    }
    if let Some(n) = listed.keys().find(|n| !names.contains(n)) {
        return Err(mixed(format!("{n}, recorded in {MANIFEST_FILE}, is missing")));
    }
    Ok(())
}

/// Loads a directory holding mahimahi/LeoReplayer files: `bw.txt`, or `bw_down.txt` and
/// `bw_up.txt`, or exactly one file whose name contains `bw`; delay from `delay.txt` or
/// exactly one file whose name contains `delay`.
pub fn load_dir(dir: &Path) -> Result<Trace, FileError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io(dir, &e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    check_manifest(dir, &names)?;
    let pick = |want: &str, what: &str| -> Result<Option<PathBuf>, FileError> {
        let hits: Vec<&String> = names.iter().filter(|n| n.contains(want)).collect();
        match hits.len() {
            0 => Ok(None),
            1 => Ok(Some(dir.join(hits[0]))),
            _ => Err(FileError::whole(dir, format!("several {what} files ({}); name one explicitly", hits.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")))),
        }
    };
    let has = |n: &str| names.iter().any(|x| x == n);
    let spec = if has("bw_down.txt") && has("bw_up.txt") {
        ImportSpec { bw: dir.join("bw_down.txt"), uplink_bw: Some(dir.join("bw_up.txt")), delay: None, direction: Dir::Down, name: None }
    } else {
        let bw = pick("bw", "capacity")?.ok_or_else(|| FileError::whole(dir, "no capacity file (a name containing \"bw\") in this directory"))?;
        ImportSpec { bw, uplink_bw: None, delay: None, direction: Dir::Down, name: None }
    };
    let (split_delays, one_delay) = (has("delay_down.txt") && has("delay_up.txt"), pick("delay", "delay"));
    let mut spec = spec;
    if !split_delays {
        spec.delay = one_delay?;
    }
    let mut t = import(&spec)?;
    if split_delays {
        for d in [Dir::Down, Dir::Up] {
            let p = dir.join(format!("delay_{}.txt", d.as_str()));
            let s = parse_delay_from(&p, open(&p)?)?;
            match d {
                Dir::Down => t.down.delay = Some(s),
                Dir::Up => t.up.delay = Some(s),
            }
        }
    }
    t.meta.name = dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or(t.meta.name);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap_err(data: &str) -> FileError {
        parse_capacity(Path::new("t.mahi"), data.as_bytes()).unwrap_err()
    }

    fn delay_err(data: &str) -> FileError {
        parse_delay(Path::new("d.txt"), data.as_bytes()).unwrap_err()
    }

    #[test]
    fn capacity_round_trips() {
        let src = "0\n3\n3\n3\n17\n20\n";
        let c = parse_capacity(Path::new("x"), src.as_bytes()).unwrap();
        assert_eq!(c.times_us(), &[0, 3000, 3000, 3000, 17_000, 20_000]);
        assert_eq!(c.period_us(), 20_000);
        assert_eq!(render_capacity(&c).unwrap(), src);
    }

    #[test]
    fn delay_round_trips() {
        let src = "12\n12.5\n0.001\n9\n";
        let d = parse_delay(Path::new("x"), src.as_bytes()).unwrap();
        assert_eq!(&d.values_us[..], &[12_000, 12_500, 1, 9_000]);
        assert_eq!(render_delay(&d, 1).unwrap(), src);
        // A constant delay is spelled out per 10 ms over the period.
        assert_eq!(render_delay(&DelaySeries::constant(9_750), 30_000).unwrap(), "9.75\n9.75\n9.75\n");
    }

    #[test]
    fn generated_traces_export_and_load_back() {
        let dir = std::env::temp_dir().join(format!("leocc-mahimahi-test-{}", std::process::id()));
        for p in [crate::gen::Profile::Fiber, crate::gen::Profile::StarlinkUp] {
            let t = crate::gen::generate(p, 5_000, 1, "test").unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            let files = export(&t, &dir, true).unwrap();
            let back = load_dir(&dir).unwrap();
            for d in [Dir::Up, Dir::Down] {
                assert_eq!(back.capacity(d), t.capacity(d), "{p} {d:?}");
                let (a, b) = (back.link(d), t.link(d));
                assert!((0..5_000_000).step_by(7_000).all(|x| a.delay_us(x) == b.delay_us(x)), "{p} {d:?}");
            }
            assert_eq!(files.len(), if p == crate::gen::Profile::Fiber { 3 } else { 2 });
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn exports_do_not_mix_and_mixed_directories_are_refused() {
        let root = std::env::temp_dir().join(format!("leocc-mahimahi-mix-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (a, b) = (root.join("a"), root.join("b"));
        let fiber = crate::gen::generate(crate::gen::Profile::Fiber, 3_000, 1, "test").unwrap();
        let star = crate::gen::generate(crate::gen::Profile::StarlinkDown, 6_000, 1, "test").unwrap();
        export(&fiber, &a, false).unwrap();
        // A used directory is refused without force, and replaced whole with it.
        let e = export(&star, &a, false).unwrap_err();
        assert!(e.problem.contains("not empty") && e.problem.contains("--force"), "{e}");
        export(&star, &a, true).unwrap();
        assert_eq!(load_dir(&a).unwrap().duration_us(), star.duration_us());
        // Files of two exports side by side: refused, naming the odd one out.
        export(&fiber, &b, false).unwrap();
        std::fs::copy(b.join(DELAY_FILE), a.join(DELAY_FILE)).unwrap();
        let e = load_dir(&a).unwrap_err();
        assert!(e.problem.contains("delay.txt") && e.problem.contains("two exports"), "{e}");
        // Plain mahimahi/LeoReplayer directories (no manifest) still load.
        std::fs::remove_file(b.join(MANIFEST_FILE)).unwrap();
        assert_eq!(load_dir(&b).unwrap().capacity(Dir::Down), fiber.capacity(Dir::Down));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn capacity_errors_name_line_and_problem() {
        let e = cap_err("");
        assert_eq!((e.line, e.problem.contains("empty file")), (0, true), "{e}");
        let e = cap_err("1\n5\n4\n");
        assert_eq!(e.line, 3);
        assert!(e.problem.contains("backwards"), "{e}");
        let e = cap_err("1\n-5\n");
        assert_eq!(e.line, 2);
        assert!(e.problem.contains("negative"), "{e}");
        let e = cap_err("1\nnan\n");
        assert!(e.problem.contains("NaN"), "{e}");
        let e = cap_err("1\n2 3\n");
        assert_eq!(e.line, 2);
        assert!(e.problem.contains("expected 1 column"), "{e}");
        let e = cap_err("1\r\n2\r\n");
        assert_eq!(e.line, 1);
        assert!(e.problem.contains("CRLF"), "{e}");
        let e = cap_err("1\n2\n3\n<html>\n");
        assert_eq!(e.line, 4);
        assert!(e.problem.contains("not a number"), "{e}");
        let e = cap_err("1\n2\n\n");
        assert_eq!(e.line, 3);
        assert!(e.problem.contains("empty line"), "{e}");
        let e = cap_err("1\n99999999999\n");
        assert!(e.problem.contains("7-day"), "{e}");
        let absurd = "5\n".repeat(9000);
        let e = cap_err(&absurd);
        assert!(e.problem.contains("absurd capacity"), "{e}");
        assert!(e.to_string().starts_with("t.mahi:"), "{e}");
        let e = cap_err("0\n");
        assert!(e.problem.contains("period is 0"), "{e}");
    }

    #[test]
    fn delay_errors_name_line_and_problem() {
        assert!(delay_err("").problem.contains("empty file"));
        let e = delay_err("10\n-1\n");
        assert_eq!(e.line, 2);
        assert!(e.problem.contains("negative"), "{e}");
        assert!(delay_err("10\nNaN\n").problem.contains("NaN"));
        let e = delay_err("10\n20000\n");
        assert!(e.problem.contains("absurd"), "{e}");
        assert!(delay_err("10 11\n").problem.contains("column"));
        assert!(delay_err("10\r\n").problem.contains("CRLF"));
        assert!(delay_err("10\n11\nfoo\n").problem.contains("not a number"));
        let e = parse_delay(Path::new("d.txt"), b"10\n\xff\n").unwrap_err();
        assert!(e.problem.contains("UTF-8"), "{e}");
    }
}
