//! Trace datasets: thousands of mahimahi/LeoReplayer pairs imported into our format, with an
//! index that says what each trace is, so an evaluation can pick traces by site, direction or at
//! random without opening them.
//!
//! Layouts recognised under a root folder:
//! * the LeoCC dataset: `SITE[_download|_upload]/N/bw_N.txt` + `delay_N.txt` (the folders also
//!   hold plots and statistics files, which are ignored);
//! * any folder of pairs: every `bw*.txt` with the `delay*.txt` of the same suffix
//!   (`bw.txt` + `delay.txt`, `bw_7.txt` + `delay_7.txt`; a capacity file without its delay
//!   file is skipped and listed, as it would give a trace without delays);
//! * a directory written by `leocc trace export` (`bw_down.txt` + `bw_up.txt`).
//!
//! The direction comes from the path (`upload`, `uplink`, `up` → up; `download`, `downlink`,
//! `down` → down); a path that names neither is taken as a downlink and the index says so
//! (`direction_known = false`). Every pair is parsed in full, line by line (a file is never read
//! whole: memory follows what a trace holds, and a binary file is named from its first bytes,
//! see [`leocc_base::text::for_each_line`]): a bad one is reported with its file and line and
//! skipped; nothing of it reaches the output. So is a file that cannot be read at all (a
//! symbolic link in a loop or to nothing). The output directory is written whole
//! and swapped in (see [`leocc_base::OutDir`]), so an interrupted import leaves no partial dataset.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::mahimahi::{self, ImportSpec};
use leocc_base::rng::Rng;
use crate::stats;
use crate::{Dir, Trace};
use leocc_base::FileError;

/// The index file inside an imported dataset.
pub const INDEX_FILE: &str = "index.csv";
/// The list of pairs that could not be imported, beside the index.
pub const SKIPPED_FILE: &str = "skipped.csv";
/// Where the imported traces go inside the output directory.
pub const TRACES_DIR: &str = "traces";

/// One trace found under the root, before it is parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// Name in the index: the folder path under the root, plus the file suffix when a folder
    /// holds several pairs (`A_download/17`, `flat/bw_3`).
    pub name: String,
    /// Site: the first folder under the root without its direction suffix (`A`).
    pub site: String,
    /// Direction of the capacity file.
    pub direction: Dir,
    /// Whether the path named the direction.
    pub direction_known: bool,
    /// The trace number (`17` of `bw_17.txt`, or the folder's name when numeric).
    pub number: Option<u64>,
    /// What to read.
    pub files: PairFiles,
}

/// The files of one [`Pair`].
#[derive(Debug, Clone, PartialEq)]
pub enum PairFiles {
    /// A capacity file and, when present, the delay file of the same suffix.
    Single {
        /// mahimahi capacity file.
        bw: PathBuf,
        /// LeoReplayer delay file.
        delay: Option<PathBuf>,
    },
    /// A directory exported by `leocc trace export` with both directions.
    Export(PathBuf),
}

/// One row of the index: what a trace is, without opening it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// See [`Pair::name`].
    pub name: String,
    /// See [`Pair::site`].
    pub site: String,
    /// `up`, `down` (or `both` for an export with two directions).
    pub direction: String,
    /// See [`Pair::direction_known`].
    pub direction_known: bool,
    /// See [`Pair::number`].
    pub number: Option<u64>,
    /// Length of one loop, s.
    pub duration_s: f64,
    /// Capacity over 100 ms bins, Mbit/s: mean, 5th and 95th percentile.
    pub capacity_mbps: [f64; 3],
    /// One-way delay, ms: mean, 5th and 95th percentile.
    pub owd_ms: [f64; 3],
    /// Outages (runs of at least 20 ms without an opportunity) in one loop.
    pub outages: usize,
    /// Reconfigurations detected in one loop.
    pub reconfigurations: usize,
    /// Period of the reconfigurations, ms, when periodic.
    pub period_ms: Option<f64>,
    /// The imported trace, relative to the index's folder.
    pub trace: PathBuf,
    /// The files it was imported from.
    pub source: String,
}

/// The index's columns, in order.
pub const COLUMNS: [&str; 17] = [
    "name",
    "site",
    "direction",
    "direction_known",
    "number",
    "duration_s",
    "capacity_mean_mbps",
    "capacity_p5_mbps",
    "capacity_p95_mbps",
    "owd_mean_ms",
    "owd_p5_ms",
    "owd_p95_ms",
    "outages",
    "reconfigurations",
    "period_ms",
    "trace",
    "source",
];

// ---------------------------------------------------------------------------------------------
// Discovery

/// Finds every pair under `root`, sorted by name. Symbolic links to folders are not followed
/// (a link cycle would never end); other symbolic links count as files even when they lead
/// nowhere (a loop, a missing target), so that their pair is listed as skipped with the
/// reason instead of vanishing; hidden entries are ignored.
pub fn discover(root: &Path) -> Result<Vec<Pair>, FileError> {
    if !root.is_dir() {
        return Err(FileError::whole(root, "not a directory"));
    }
    let mut pairs = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut files = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| FileError::io(&dir, &e))? {
            let e = e.map_err(|e| FileError::io(&dir, &e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let ft = e.file_type().map_err(|err| FileError::io(e.path(), &err))?;
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() || ft.is_symlink() && !e.path().is_dir() {
                files.push(name);
            }
        }
        files.sort();
        pairs.extend(pairs_in(root, &dir, &files));
    }
    pairs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pairs)
}

/// The pairs among the files of one folder.
fn pairs_in(root: &Path, dir: &Path, files: &[String]) -> Vec<Pair> {
    let rel: Vec<String> = dir
        .strip_prefix(root)
        .unwrap_or(dir)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let (direction, direction_known) = direction_of(&rel);
    let site = rel.first().map_or_else(|| base_name(root), |s| strip_direction(s));
    let folder_name = if rel.is_empty() { base_name(root) } else { rel.join("/") };
    let folder_number = rel.last().and_then(|s| s.parse().ok());
    let has = |n: &str| files.iter().any(|f| f == n);
    if has("bw_down.txt") && has("bw_up.txt") {
        return vec![Pair {
            name: folder_name,
            site,
            direction: Dir::Down,
            direction_known: true,
            number: folder_number,
            files: PairFiles::Export(dir.to_path_buf()),
        }];
    }
    let suffixes: Vec<&str> = files
        .iter()
        .filter_map(|f| f.strip_prefix("bw").and_then(|s| s.strip_suffix(".txt")))
        .collect();
    let several = suffixes.len() > 1;
    suffixes
        .iter()
        .map(|suffix| {
            let delay = format!("delay{suffix}.txt");
            let number = suffix.strip_prefix('_').and_then(|n| n.parse().ok()).or(folder_number);
            // bw_17.txt in folder 17 is the LeoCC layout: the folder alone names it.
            let named_by_folder = !several && (suffix.is_empty() || number == folder_number);
            Pair {
                name: if named_by_folder { folder_name.clone() } else { format!("{folder_name}/bw{suffix}") },
                site: site.clone(),
                direction,
                direction_known,
                number,
                files: PairFiles::Single { bw: dir.join(format!("bw{suffix}.txt")), delay: has(&delay).then(|| dir.join(&delay)) },
            }
        })
        .collect()
}

fn base_name(p: &Path) -> String {
    p.canonicalize()
        .ok()
        .and_then(|c| c.file_name().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "dataset".into())
}

/// Words in a path that name a direction, and which.
const DIRECTION_WORDS: [(&str, Dir); 6] =
    [("upload", Dir::Up), ("uplink", Dir::Up), ("up", Dir::Up), ("download", Dir::Down), ("downlink", Dir::Down), ("down", Dir::Down)];

/// The direction the path names: the last component with a direction word as a whole word
/// (`A_upload`, `uplink`, `site-up`), else a downlink, unknown.
fn direction_of(components: &[String]) -> (Dir, bool) {
    for c in components.iter().rev() {
        let lower = c.to_ascii_lowercase();
        for word in lower.split(|ch: char| !ch.is_ascii_alphanumeric()) {
            if let Some(&(_, d)) = DIRECTION_WORDS.iter().find(|(w, _)| *w == word) {
                return (d, true);
            }
        }
    }
    (Dir::Down, false)
}

/// A site folder's name without its direction word (`A_download` → `A`).
fn strip_direction(folder: &str) -> String {
    let lower = folder.to_ascii_lowercase();
    for (w, _) in DIRECTION_WORDS {
        for sep in ['_', '-'] {
            if let Some(cut) = lower.strip_suffix(&format!("{sep}{w}")) {
                return folder[..cut.len()].to_string();
            }
        }
    }
    folder.to_string()
}

// ---------------------------------------------------------------------------------------------
// Import

/// Parses one pair into a trace named after it.
pub fn load_pair(pair: &Pair) -> Result<Trace, FileError> {
    let mut t = match &pair.files {
        PairFiles::Single { bw, delay: None } => {
            let bw_name = bw.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let delay_name = bw_name.strip_prefix("bw").map_or_else(|| "delay*.txt".to_string(), |rest| format!("delay{rest}"));
            return Err(FileError::whole(
                bw,
                format!("no delay file {delay_name} beside it: a capacity file alone has no one-way delays, so the pair is skipped"),
            ));
        }
        PairFiles::Single { bw, delay } => mahimahi::import(&ImportSpec {
            bw: bw.clone(),
            delay: delay.clone(),
            uplink_bw: None,
            direction: pair.direction,
            name: None,
        })?,
        PairFiles::Export(dir) => mahimahi::load_dir(dir)?,
    };
    t.meta.name = pair.name.clone();
    t.validate().map_err(|p| FileError::whole(pair_path(pair), p))?;
    Ok(t)
}

/// The file or folder a pair is reported by.
pub fn pair_path(pair: &Pair) -> &Path {
    match &pair.files {
        PairFiles::Single { bw, .. } => bw,
        PairFiles::Export(d) => d,
    }
}

/// The file name a pair's trace gets inside [`TRACES_DIR`]: its name with `/` turned into `-`.
pub fn trace_file_name(pair: &Pair) -> String {
    let safe: String = pair.name.chars().map(|c| if c == '/' || c == '\\' || c.is_control() { '-' } else { c }).collect();
    format!("{safe}.trace")
}

/// The index row of an imported trace.
pub fn entry_of(pair: &Pair, trace: &Trace, rel_path: PathBuf) -> Entry {
    let dir = if trace.capacity(pair.direction).is_some() { pair.direction } else { Dir::Down };
    let s = stats::stats(trace, dir);
    let direction = if matches!(pair.files, PairFiles::Export(_)) { "both".to_string() } else { dir.as_str().to_string() };
    Entry {
        name: pair.name.clone(),
        site: pair.site.clone(),
        direction,
        direction_known: pair.direction_known,
        number: pair.number,
        duration_s: s.duration_s,
        capacity_mbps: [s.capacity_mbps.mean, s.capacity_mbps.p5, s.capacity_mbps.p95],
        owd_ms: [s.owd_ms.mean, s.owd_ms.p5, s.owd_ms.p95],
        outages: s.outages.len(),
        reconfigurations: s.reconfigurations_ms.len(),
        period_ms: s.period_ms,
        trace: rel_path,
        source: trace.meta.source.clone(),
    }
}

/// What [`import`] did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// Rows of the index, sorted by name.
    pub imported: Vec<Entry>,
    /// Pairs that could not be imported, with the reason (file and line).
    pub skipped: Vec<(String, FileError)>,
}

/// Imports every pair into `out_dir/traces/`, writing `index.csv` and `skipped.csv`, with `jobs`
/// threads. `progress(done, total, skipped)` is called after each pair (from any thread).
/// `out_dir` must be a folder being written (a [`leocc_base::OutDir`]'s path).
pub fn import(pairs: &[Pair], out_dir: &Path, jobs: usize, progress: &(dyn Fn(usize, usize, usize) + Sync)) -> Result<ImportReport, FileError> {
    let traces = out_dir.join(TRACES_DIR);
    std::fs::create_dir_all(&traces).map_err(|e| FileError::io(&traces, &e))?;
    let next = AtomicUsize::new(0);
    let (done, skipped_n) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let results: Mutex<Vec<(usize, Result<Entry, FileError>)>> = Mutex::new(Vec::with_capacity(pairs.len()));
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(pair) = pairs.get(i) else { break };
                let file = trace_file_name(pair);
                let r = load_pair(pair).and_then(|t| {
                    t.save(&traces.join(&file))?;
                    Ok(entry_of(pair, &t, Path::new(TRACES_DIR).join(&file)))
                });
                if r.is_err() {
                    skipped_n.fetch_add(1, Ordering::Relaxed);
                }
                results.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, pairs.len(), skipped_n.load(Ordering::Relaxed));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|r| r.0);
    let mut report = ImportReport::default();
    for (i, r) in results {
        match r {
            Ok(e) => report.imported.push(e),
            Err(e) => report.skipped.push((pairs[i].name.clone(), e)),
        }
    }
    // Two pairs whose names map to one file would overwrite each other: refuse rather than
    // index one trace twice.
    let mut files: Vec<&Path> = report.imported.iter().map(|e| e.trace.as_path()).collect();
    files.sort();
    if let Some(w) = files.windows(2).find(|w| w[0] == w[1]) {
        return Err(FileError::whole(w[0], "two pairs map to this one trace file; rename one of the source folders"));
    }
    leocc_base::write_atomic(&out_dir.join(INDEX_FILE), render_index(&report.imported).as_bytes())?;
    let mut sk = String::from("name,problem\n");
    for (name, e) in &report.skipped {
        sk.push_str(&format!("{},{}\n", csv_field(name), csv_field(&e.to_string())));
    }
    leocc_base::write_atomic(&out_dir.join(SKIPPED_FILE), sk.as_bytes())?;
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// The index file (CSV with a header, RFC 4180 quoting: pandas, polars and spreadsheets read it)

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The index as CSV text.
pub fn render_index(entries: &[Entry]) -> String {
    let mut s = COLUMNS.join(",");
    s.push('\n');
    for e in entries {
        let row = [
            csv_field(&e.name),
            csv_field(&e.site),
            e.direction.clone(),
            e.direction_known.to_string(),
            opt(e.number),
            e.duration_s.to_string(),
            e.capacity_mbps[0].to_string(),
            e.capacity_mbps[1].to_string(),
            e.capacity_mbps[2].to_string(),
            e.owd_ms[0].to_string(),
            e.owd_ms[1].to_string(),
            e.owd_ms[2].to_string(),
            e.outages.to_string(),
            e.reconfigurations.to_string(),
            opt(e.period_ms),
            csv_field(&e.trace.to_string_lossy()),
            csv_field(&e.source),
        ];
        s.push_str(&row.join(","));
        s.push('\n');
    }
    s
}

/// Splits CSV text into records of fields, each with the line it starts on.
fn csv_records(file: &Path, text: &str) -> Result<Vec<(usize, Vec<String>)>, FileError> {
    let mut out = Vec::new();
    let (mut field, mut fields) = (String::new(), Vec::new());
    let (mut line, mut start, mut quoted, mut at_start) = (1usize, 1usize, false, true);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c);
            }
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                fields.push(std::mem::take(&mut field));
                out.push((start, std::mem::take(&mut fields)));
                line += 1;
                start = line;
                at_start = true;
                continue;
            }
            (false, c) => field.push(c),
        }
        at_start = false;
    }
    if quoted {
        return Err(FileError::new(file, start, "a quoted field is not closed"));
    }
    if !at_start {
        fields.push(field);
        out.push((start, fields));
    }
    Ok(out)
}

/// Reads an index written by [`import`]; trace paths come back resolved against the index's
/// folder. Errors name the file and line.
pub fn read_index(path: &Path) -> Result<Vec<Entry>, FileError> {
    let text = std::fs::read_to_string(path).map_err(|e| FileError::io(path, &e))?;
    let records = csv_records(path, &text)?;
    let Some((_, header)) = records.first() else {
        return Err(FileError::whole(path, "empty file; expected the header line of a leocc dataset index"));
    };
    if header.iter().map(String::as_str).ne(COLUMNS.iter().copied()) {
        return Err(FileError::new(path, 1, format!("not a leocc dataset index: the header must be `{}`", COLUMNS.join(","))));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::with_capacity(records.len() - 1);
    for (line, r) in &records[1..] {
        if r.len() == 1 && r[0].is_empty() {
            continue;
        }
        if r.len() != COLUMNS.len() {
            return Err(FileError::new(path, *line, format!("{} fields; the header has {}", r.len(), COLUMNS.len())));
        }
        let num = |i: usize| -> Result<f64, FileError> {
            r[i].parse::<f64>().map_err(|_| FileError::new(path, *line, format!("{}: `{}` is not a number", COLUMNS[i], r[i])))
        };
        let count = |i: usize| -> Result<usize, FileError> {
            r[i].parse().map_err(|_| FileError::new(path, *line, format!("{}: `{}` is not a count", COLUMNS[i], r[i])))
        };
        let optional = |i: usize| -> Result<Option<f64>, FileError> { if r[i].is_empty() { Ok(None) } else { num(i).map(Some) } };
        if !matches!(r[2].as_str(), "up" | "down" | "both") {
            return Err(FileError::new(path, *line, format!("direction: `{}` is not up, down or both", r[2])));
        }
        out.push(Entry {
            name: r[0].clone(),
            site: r[1].clone(),
            direction: r[2].clone(),
            direction_known: r[3] == "true",
            number: optional(4)?.map(|n| n as u64),
            duration_s: num(5)?,
            capacity_mbps: [num(6)?, num(7)?, num(8)?],
            owd_ms: [num(9)?, num(10)?, num(11)?],
            outages: count(12)?,
            reconfigurations: count(13)?,
            period_ms: optional(14)?,
            trace: base.join(&r[15]),
            source: r[16].clone(),
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Selection

/// A `COLUMN=VALUE` condition on index rows (`site=A`, `direction=up`).
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    column: String,
    value: String,
}

impl std::str::FromStr for Filter {
    type Err = String;
    fn from_str(s: &str) -> Result<Filter, String> {
        let (c, v) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected COLUMN=VALUE, e.g. site=A or direction=up"))?;
        let column = c.trim().to_string();
        if !FILTER_COLUMNS.contains(&column.as_str()) {
            return Err(format!("`{column}` cannot be filtered on; use one of {}", FILTER_COLUMNS.join(", ")));
        }
        Ok(Filter { column, value: v.trim().to_string() })
    }
}

/// The columns a [`Filter`] may name.
pub const FILTER_COLUMNS: [&str; 4] = ["site", "direction", "name", "number"];

impl Filter {
    /// Whether `e` satisfies the condition.
    pub fn matches(&self, e: &Entry) -> bool {
        match self.column.as_str() {
            "site" => e.site == self.value,
            "direction" => e.direction == self.value,
            "name" => e.name == self.value,
            "number" => opt(e.number) == self.value,
            _ => false,
        }
    }
}

/// The rows matching every filter, then `n` of them drawn without replacement by `seed` (all when
/// `n` is `None` or at least their number), in index order. The same index, filters, `n` and
/// `seed` always give the same traces.
pub fn select(entries: &[Entry], filters: &[Filter], n: Option<usize>, seed: u64) -> Vec<Entry> {
    let mut pool: Vec<&Entry> = entries.iter().filter(|e| filters.iter().all(|f| f.matches(e))).collect();
    let want = n.unwrap_or(pool.len()).min(pool.len());
    // A partial Fisher–Yates shuffle: the first `want` slots are a uniform sample.
    let mut rng = Rng::new(seed);
    for i in 0..want {
        let j = i + rng.below((pool.len() - i) as u64) as usize;
        pool.swap(i, j);
    }
    let mut chosen: Vec<&Entry> = pool.into_iter().take(want).collect();
    chosen.sort_by(|a, b| a.name.cmp(&b.name));
    chosen.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{self, Profile};

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-dataset-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes a generated trace as a LeoCC-layout pair `root/folder/N/bw_N.txt + delay_N.txt`.
    fn write_pair(root: &Path, folder: &str, n: u64, seed: u64) {
        let t = gen::generate(Profile::StarlinkDown, 8000, seed, "test").unwrap();
        let tmp = root.join(format!(".export-{folder}-{n}"));
        mahimahi::export(&t, &tmp, true).unwrap();
        let d = root.join(folder).join(n.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::rename(tmp.join("bw.txt"), d.join(format!("bw_{n}.txt"))).unwrap();
        std::fs::rename(tmp.join("delay.txt"), d.join(format!("delay_{n}.txt"))).unwrap();
        // The dataset's plots contain "bw" and "delay" in their names: they must be ignored.
        std::fs::write(d.join(format!("trace_{n}_bw_delay_0000_0010.png")), b"\x89PNG").unwrap();
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn leocc_layout_is_found_with_site_direction_and_number() {
        let root = scratch("layout");
        write_pair(&root, "A_download", 1, 1);
        write_pair(&root, "A_download", 2, 2);
        write_pair(&root, "B_upload", 7, 3);
        std::fs::write(root.join("A_download").join("A_statistics.txt"), "p50 ...").unwrap();
        let pairs = discover(&root).unwrap();
        let got: Vec<(&str, &str, Dir, Option<u64>)> = pairs.iter().map(|p| (p.name.as_str(), p.site.as_str(), p.direction, p.number)).collect();
        assert_eq!(
            got,
            vec![("A_download/1", "A", Dir::Down, Some(1)), ("A_download/2", "A", Dir::Down, Some(2)), ("B_upload/7", "B", Dir::Up, Some(7))]
        );
        assert!(pairs.iter().all(|p| p.direction_known));
        let PairFiles::Single { bw, delay } = &pairs[2].files else { panic!("expected a single pair") };
        assert!(bw.ends_with("B_upload/7/bw_7.txt") && delay.as_ref().unwrap().ends_with("B_upload/7/delay_7.txt"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn flat_folder_of_pairs_and_unknown_direction() {
        let root = scratch("flat");
        let d = root.join("mine");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("bw_1.txt"), "1\n2\n").unwrap();
        std::fs::write(d.join("bw_2.txt"), "1\n2\n").unwrap();
        std::fs::write(d.join("delay_2.txt"), "20\n").unwrap();
        let pairs = discover(&root).unwrap();
        assert_eq!(pairs.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["mine/bw_1", "mine/bw_2"]);
        assert!(pairs.iter().all(|p| !p.direction_known && p.direction == Dir::Down && p.site == "mine"));
        assert!(matches!(&pairs[0].files, PairFiles::Single { delay: None, .. }));
        assert!(matches!(&pairs[1].files, PairFiles::Single { delay: Some(_), .. }));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn import_indexes_good_pairs_and_skips_a_bad_one_with_file_and_line() {
        let root = scratch("import");
        write_pair(&root, "A_download", 1, 4);
        write_pair(&root, "A_download", 2, 5);
        write_pair(&root, "A_upload", 3, 6);
        // Pair 2 gets a malformed line 3 in its capacity file.
        let bad = root.join("A_download/2/bw_2.txt");
        let mut lines: Vec<String> = std::fs::read_to_string(&bad).unwrap().lines().map(String::from).collect();
        lines[2] = "twelve".into();
        std::fs::write(&bad, lines.join("\n")).unwrap();
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let pairs = discover(&root).unwrap();
        let calls = AtomicUsize::new(0);
        let report = import(&pairs, &out, 2, &|_, total, _| {
            assert_eq!(total, 3);
            calls.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        assert_eq!(report.imported.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["A_download/1", "A_upload/3"]);
        assert_eq!(report.skipped.len(), 1);
        let (name, err) = &report.skipped[0];
        assert_eq!(name, "A_download/2");
        assert!(err.file.ends_with("bw_2.txt") && err.line == 3, "{err}");
        assert!(!out.join(TRACES_DIR).join("A_download-2.trace").exists());

        let index = read_index(&out.join(INDEX_FILE)).unwrap();
        assert_eq!(index, report.imported.iter().map(|e| Entry { trace: out.join(&e.trace), ..e.clone() }).collect::<Vec<_>>());
        let up = &index[1];
        assert_eq!((up.site.as_str(), up.direction.as_str(), up.number), ("A", "up", Some(3)));
        assert!((up.duration_s - 8.0).abs() < 0.01, "{}", up.duration_s);
        assert!(up.capacity_mbps[0] > 10.0 && up.owd_ms[0] > 5.0, "{up:?}");
        // The trace file is a complete trace in our format, loadable by every command.
        let t = Trace::load(&up.trace).unwrap();
        assert_eq!(t.meta.name, "A_upload/3");
        assert!(t.capacity(Dir::Up).is_some());
        let skipped = std::fs::read_to_string(out.join(SKIPPED_FILE)).unwrap();
        assert!(skipped.contains("A_download/2") && skipped.contains("bw_2.txt:3:"), "{skipped}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_capacity_file_alone_and_a_symlink_loop_are_listed_as_skipped() {
        let root = scratch("skips");
        write_pair(&root, "A_download", 1, 7);
        // A capacity file without its delay file.
        let lone = root.join("A_download/2");
        std::fs::create_dir_all(&lone).unwrap();
        std::fs::copy(root.join("A_download/1/bw_1.txt"), lone.join("bw_2.txt")).unwrap();
        // A pair of symbolic links pointing at each other.
        let looped = root.join("A_download/3");
        std::fs::create_dir_all(&looped).unwrap();
        std::os::unix::fs::symlink("delay_3.txt", looped.join("bw_3.txt")).unwrap();
        std::os::unix::fs::symlink("bw_3.txt", looped.join("delay_3.txt")).unwrap();
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let pairs = discover(&root).unwrap();
        assert_eq!(pairs.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["A_download/1", "A_download/2", "A_download/3"]);
        let report = import(&pairs, &out, 2, &|_, _, _| {}).unwrap();
        assert_eq!(report.imported.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["A_download/1"]);
        let skipped: Vec<(String, String)> = report.skipped.iter().map(|(n, e)| (n.clone(), e.to_string())).collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert_eq!(skipped[0].0, "A_download/2");
        assert!(skipped[0].1.contains("bw_2.txt: no delay file delay_2.txt beside it"), "{skipped:?}");
        assert_eq!(skipped[1].0, "A_download/3");
        assert!(skipped[1].1.contains("bw_3.txt") && skipped[1].1.contains("symbolic links"), "{skipped:?}");
        let listed = std::fs::read_to_string(out.join(SKIPPED_FILE)).unwrap();
        assert!(listed.contains("A_download/2,") && listed.contains("A_download/3,"), "{listed}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Size of the big inputs below: large against the bound, small enough for a test run.
    const BIG_INPUT_BYTES: u64 = 200 << 20;
    /// Heap an import may use whatever its input's size (issue 34: 1 GiB inputs under 64 MB).
    const IMPORT_HEAP_LIMIT: usize = 64 << 20;

    #[test]
    fn big_inputs_are_read_line_by_line_in_bounded_memory() {
        let root = scratch("big");
        let d = root.join("A_download/1");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("delay_1.txt"), "20\n".repeat(100)).unwrap();
        let bw = d.join("bw_1.txt");
        let pair = || discover(&root).unwrap().remove(0);
        // A sparse file of zeros: binary, named from its first bytes.
        std::fs::File::create(&bw).unwrap().set_len(BIG_INPUT_BYTES).unwrap();
        let mut result = None;
        let used = leocc_base::alloc_count::peak_during(|| result = Some(load_pair(&pair())));
        let err = result.take().unwrap().unwrap_err();
        assert!(err.line == 0 && err.problem.contains("binary data (byte 0x00 at offset 0)"), "{err}");
        assert!(used < IMPORT_HEAP_LIMIT, "{used} bytes for a {BIG_INPUT_BYTES}-byte binary file");
        // A valid text file as big: times padded with zeros to the longest line accepted.
        {
            use std::io::Write as _;
            let mut w = std::io::BufWriter::new(std::fs::File::create(&bw).unwrap());
            let lines = BIG_INPUT_BYTES / leocc_base::text::MAX_LINE_BYTES as u64;
            for ms in 1..=lines {
                writeln!(w, "{ms:0width$}", width = leocc_base::text::MAX_LINE_BYTES - 1).unwrap();
            }
        }
        let used = leocc_base::alloc_count::peak_during(|| result = Some(load_pair(&pair())));
        let t = result.take().unwrap().unwrap();
        assert!(t.capacity(Dir::Down).is_some());
        assert!(used < IMPORT_HEAP_LIMIT, "{used} bytes for a {BIG_INPUT_BYTES}-byte text file");
        // One line without an end: refused at the line-length bound, not read whole.
        std::fs::write(&bw, "1".repeat(leocc_base::text::MAX_LINE_BYTES * 4)).unwrap();
        let err = load_pair(&pair()).unwrap_err();
        assert!(err.line == 1 && err.problem.contains("line longer than"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn entry(name: &str, site: &str, direction: &str) -> Entry {
        Entry {
            name: name.into(),
            site: site.into(),
            direction: direction.into(),
            direction_known: true,
            number: None,
            duration_s: 120.0,
            capacity_mbps: [100.0, 50.0, 150.0],
            owd_ms: [30.0, 20.0, 40.0],
            outages: 8,
            reconfigurations: 8,
            period_ms: Some(15000.0),
            trace: PathBuf::from(format!("traces/{name}.trace")),
            source: "imported from \"x, y\"".into(),
        }
    }

    #[test]
    fn index_round_trips_quoted_fields_and_rejects_bad_rows_by_line() {
        let dir = scratch("csv");
        let rows = vec![entry("a,1", "A", "down"), entry("b\"2", "B", "up")];
        let p = dir.join(INDEX_FILE);
        std::fs::write(&p, render_index(&rows)).unwrap();
        let back = read_index(&p).unwrap();
        assert_eq!(back, rows.iter().map(|e| Entry { trace: dir.join(&e.trace), ..e.clone() }).collect::<Vec<_>>());
        let mut text = render_index(&rows);
        text = text.replacen(",down,", ",sideways,", 1);
        std::fs::write(&p, &text).unwrap();
        let e = read_index(&p).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.problem.contains("sideways"), "{e}");
        std::fs::write(&p, "name,site\nx,y\n").unwrap();
        assert_eq!(read_index(&p).unwrap_err().line, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn selection_filters_then_samples_reproducibly() {
        let all: Vec<Entry> = (0..50).map(|i| entry(&format!("t{i:02}"), if i % 2 == 0 { "A" } else { "B" }, "down")).collect();
        let f: Vec<Filter> = vec!["site=A".parse().unwrap()];
        let a = select(&all, &f, Some(5), 7);
        assert_eq!(a.len(), 5);
        assert!(a.iter().all(|e| e.site == "A"));
        assert_eq!(a, select(&all, &f, Some(5), 7));
        assert_ne!(a, select(&all, &f, Some(5), 8));
        assert_eq!(select(&all, &f, None, 1).len(), 25);
        assert_eq!(select(&all, &f, Some(100), 1).len(), 25);
        assert!("colour=red".parse::<Filter>().unwrap_err().contains("site"));
        assert!("site".parse::<Filter>().is_err());
    }
}
