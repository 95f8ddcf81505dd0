//! The time-series store of an eval: every run's 100 ms rows, sized for datasets.
//!
//! While an eval runs, each run writes its own CSV under `ts/` (atomically, so a killed eval
//! loses at most the runs in progress, and a run is never half there). When a batch of runs
//! ends, [`compact`] folds those CSVs into one new Parquet part, `ts/part-NNNNN.parquet`, and
//! removes them: 4,800 traces × 9 controls would otherwise leave 43,200 small files per buffer,
//! and a columnar, compressed part is what pandas, polars, DuckDB and Spark read fastest.
//!
//! Each part holds the rows of whole runs, sorted by run key, with a `key` column (the run's
//! key in results.jsonl) before the CSV's own columns. A column is INT64 when every value in
//! the part is an integer, DOUBLE when every value is a number, UTF8 otherwise; a run without a
//! column the part has gets nulls there. The part's metadata lists its run keys
//! (`leocc.runs`), which is how a reader finds a run without scanning, and how an interrupted
//! compaction is finished: a CSV whose key a part written after it already holds was folded,
//! and is removed. A CSV newer than the part that holds its key is a run made again
//! (`leocc bench fidelity --rerun`): it is folded into a new part, and the newest part that
//! holds a key is that run's series.
//!
//! Readers ([`Store::read`]) take a run's CSV when it is still there, else the newest part that
//! holds it.

use crate::report::TsRow;
use anyhow::{bail, Context, Result};
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::statistics::Statistics;
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The folder of the per-run CSVs and the parts, inside an eval's output folder.
pub const TS_DIR: &str = "ts";
/// The key-value metadata entry of a part that lists its run keys, one per line.
const RUNS_KEY: &str = "leocc.runs";
/// The columns [`Store::read`] takes from a part (what the report's charts draw).
const READ_COLUMNS: [&str; 5] = ["key", "t_s", "flow", "throughput_mbps", "rtt_ms"];
/// Rows per row group: about 1 MB of values, small enough that reading one run touches
/// little, large enough that a 100 k-run part's footer stays small (1,200 rows per 120 s run).
const ROW_GROUP_ROWS: usize = 131_072;

/// One run's CSV waiting to be folded: its key and file.
pub struct Pending {
    /// The run's key in results.jsonl.
    pub key: String,
    /// Its CSV (`ts/ID.csv`).
    pub csv: PathBuf,
}

/// What [`compact`] did.
#[derive(Debug, Default, PartialEq)]
pub struct Compacted {
    /// The part written, if any run was folded.
    pub part: Option<PathBuf>,
    /// Runs folded into it.
    pub runs: usize,
    /// Rows written.
    pub rows: usize,
    /// CSVs removed because a part already held their run (an interrupted compaction).
    pub already_folded: usize,
}

/// Folds the CSVs of `runs` (finished runs: their records are in results.jsonl) into a new
/// part of `out_dir/ts` and removes them. A CSV that cannot be read is left in place with a
/// warning on stderr; its run stays readable from it.
pub fn compact(out_dir: &Path, runs: &[Pending]) -> Result<Compacted> {
    let dir = out_dir.join(TS_DIR);
    let store = Store::open(out_dir)?;
    let mut done = Compacted::default();
    let mut tables = BTreeMap::new();
    for r in runs.iter().filter(|r| r.csv.exists()) {
        if let Some(&i) = store.part_of.get(&r.key) {
            if !newer(&r.csv, &store.parts[i]) {
                remove(&r.csv)?;
                done.already_folded += 1;
                continue;
            }
        }
        match Csv::read(&r.csv) {
            Ok(t) => {
                tables.insert(r.key.clone(), (t, r.csv.clone()));
            }
            Err(e) => eprintln!("eval: {e:#}; left as CSV"),
        }
    }
    if tables.is_empty() {
        return Ok(done);
    }
    let part = dir.join(format!("part-{:05}.parquet", store.next_part_number()));
    done.rows = write_part(&part, &tables)?;
    done.runs = tables.len();
    for (_, csv) in tables.values() {
        remove(csv)?;
    }
    done.part = Some(part);
    Ok(done)
}

/// Folds the CSVs of every run recorded in `out_dir/results.jsonl` that still has one.
pub fn fold_finished(out_dir: &Path) -> Result<Compacted> {
    let records = crate::results::read(&crate::runner::results_path(out_dir))?;
    let runs: Vec<Pending> = records
        .iter()
        .filter(|r| !r.str("timeseries").is_empty())
        .map(|r| Pending {
            key: r.str("key").to_string(),
            csv: out_dir.join(r.str("timeseries")),
        })
        .collect();
    compact(out_dir, &runs)
}

/// Removes the temporary files that writers killed mid-write (`kill -9` during an eval)
/// left in `out_dir/ts`: names of [`leocc_base::out::temp_owner`]'s form whose process is
/// gone. A live process's temporary (a run still writing, or another eval) is kept; a pid
/// reused since only keeps a dead file a little longer. Returns the files removed.
pub fn remove_stale_temps(out_dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = out_dir.join(TS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut removed = Vec::new();
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(leocc_base::out::temp_owner) else {
            continue;
        };
        if process_alive(pid) {
            continue;
        }
        let p = e.path();
        remove(&p)?;
        removed.push(p);
    }
    Ok(removed)
}

/// Whether a process `pid` exists (kill with signal 0 checks without sending; EPERM means it
/// exists under another user).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

/// Whether file `a` was written after file `b` (an unreadable time counts as older).
fn newer(a: &Path, b: &Path) -> bool {
    let t = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((t(a), t(b)), (Some(a), Some(b)) if a > b)
}

fn remove(p: &Path) -> Result<()> {
    std::fs::remove_file(p).with_context(|| format!("removing {}", p.display()))
}

/// A run's CSV, parsed: its header and rows of text fields.
struct Csv {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn read(path: &Path) -> Result<Csv> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .unwrap_or("")
            .split(',')
            .map(|h| h.trim().to_string())
            .collect();
        if header.iter().any(|h| h.is_empty() || h == "key") {
            bail!(
                "{}:1: a column name is empty or `key` (reserved for the run's key)",
                path.display()
            );
        }
        let mut rows = Vec::new();
        for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
            let fields: Vec<String> = line.split(',').map(str::to_string).collect();
            if fields.len() != header.len() {
                bail!(
                    "{}:{}: {} fields, the header has {}",
                    path.display(),
                    i + 2,
                    fields.len(),
                    header.len()
                );
            }
            rows.push(fields);
        }
        Ok(Csv { header, rows })
    }
}

/// The Parquet type of one column of a part.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Int,
    Num,
    Text,
}

impl Kind {
    /// The narrowest kind that holds `v` and everything `self` held; an empty value is a null
    /// and fits any kind.
    fn widen(self, v: &str) -> Kind {
        match self {
            _ if v.is_empty() => self,
            Kind::Int if v.parse::<i64>().is_ok() => Kind::Int,
            Kind::Int | Kind::Num if v.parse::<f64>().is_ok() => Kind::Num,
            _ => Kind::Text,
        }
    }

    fn schema(self, name: &str) -> String {
        match self {
            Kind::Int => format!("OPTIONAL INT64 {name};"),
            Kind::Num => format!("OPTIONAL DOUBLE {name};"),
            Kind::Text => format!("OPTIONAL BYTE_ARRAY {name} (UTF8);"),
        }
    }
}

/// Writes the runs of `tables` (sorted by key) as one part, atomically; returns its rows.
fn write_part(path: &Path, tables: &BTreeMap<String, (Csv, PathBuf)>) -> Result<usize> {
    let mut columns: Vec<(String, Kind)> = Vec::new();
    for (t, _) in tables.values() {
        for (c, name) in t.header.iter().enumerate() {
            let i = match columns.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    columns.push((name.clone(), Kind::Int));
                    columns.len() - 1
                }
            };
            columns[i].1 = t.rows.iter().fold(columns[i].1, |k, r| k.widen(&r[c]));
        }
        if let Some(bad) = t
            .header
            .iter()
            .find(|h| !h.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            bail!("time-series column `{bad}` is not a plain name");
        }
    }
    let schema = format!(
        "message timeseries {{ REQUIRED BYTE_ARRAY key (UTF8); {} }}",
        columns
            .iter()
            .map(|(n, k)| k.schema(n))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let schema = Arc::new(parquet::schema::parser::parse_message_type(&schema)?);
    let keys: Vec<&str> = tables.keys().map(String::as_str).collect();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(vec![KeyValue::new(RUNS_KEY.into(), keys.join("\n"))]))
        .build();
    // Where each of the part's columns is in each run's CSV (None: the run lacks it), found
    // once per run rather than once per cell.
    let col_of: BTreeMap<&str, Vec<Option<usize>>> = tables
        .iter()
        .map(|(k, (t, _))| {
            (
                k.as_str(),
                columns
                    .iter()
                    .map(|(name, _)| t.header.iter().position(|h| h == name))
                    .collect(),
            )
        })
        .collect();
    // All rows of the part in key order, as (key, csv, row index).
    let rows: Vec<(&str, &Csv, usize)> = tables
        .iter()
        .flat_map(|(k, (t, _))| (0..t.rows.len()).map(move |i| (k.as_str(), t, i)))
        .collect();
    let mut out = leocc_base::OutFile::create(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    {
        let mut w = SerializedFileWriter::new(&mut out, schema, Arc::new(props))?;
        for group in rows.chunks(ROW_GROUP_ROWS) {
            let mut rg = w.next_row_group()?;
            let mut col = rg.next_column()?.context("parquet: no key column")?;
            let key: Vec<ByteArray> = group
                .iter()
                .map(|(k, _, _)| ByteArray::from(k.as_bytes().to_vec()))
                .collect();
            col.typed::<ByteArrayType>().write_batch(&key, None, None)?;
            col.close()?;
            for (j, (_, kind)) in columns.iter().enumerate() {
                let cells: Vec<Option<&str>> = group
                    .iter()
                    .map(|(k, t, i)| {
                        col_of[k][j]
                            .map(|c| t.rows[*i][c].as_str())
                            .filter(|v| !v.is_empty())
                    })
                    .collect();
                let def: Vec<i16> = cells.iter().map(|c| i16::from(c.is_some())).collect();
                let mut col = rg
                    .next_column()?
                    .context("parquet: fewer columns than the schema")?;
                // Kind::widen guaranteed every present value parses as its column's kind.
                match kind {
                    Kind::Int => {
                        let v: Vec<i64> = cells
                            .iter()
                            .flatten()
                            .map(|s| s.parse().unwrap_or_default())
                            .collect();
                        col.typed::<Int64Type>().write_batch(&v, Some(&def), None)?;
                    }
                    Kind::Num => {
                        let v: Vec<f64> = cells
                            .iter()
                            .flatten()
                            .map(|s| s.parse().unwrap_or_default())
                            .collect();
                        col.typed::<DoubleType>()
                            .write_batch(&v, Some(&def), None)?;
                    }
                    Kind::Text => {
                        let v: Vec<ByteArray> = cells
                            .iter()
                            .flatten()
                            .map(|s| ByteArray::from(s.as_bytes().to_vec()))
                            .collect();
                        col.typed::<ByteArrayType>()
                            .write_batch(&v, Some(&def), None)?;
                    }
                }
                col.close()?;
            }
            rg.close()?;
        }
        w.close()?;
    }
    out.commit().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(rows.len())
}

/// Where an eval's runs' time series are: the parts' run lists, read from their footers.
pub struct Store {
    dir: PathBuf,
    parts: Vec<PathBuf>,
    /// Run key -> index into `parts` of the newest part that holds it.
    part_of: HashMap<String, usize>,
}

impl Store {
    /// Reads the footers of `out_dir/ts/part-*.parquet` (none is fine).
    pub fn open(out_dir: &Path) -> Result<Store> {
        let dir = out_dir.join(TS_DIR);
        let mut parts: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet"))
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        parts.sort();
        let mut part_of = HashMap::new();
        for (i, p) in parts.iter().enumerate() {
            let reader = open_part(p)?;
            let runs = reader
                .metadata()
                .file_metadata()
                .key_value_metadata()
                .and_then(|kv| kv.iter().find(|e| e.key == RUNS_KEY))
                .and_then(|e| e.value.clone())
                .with_context(|| {
                    format!(
                        "{}: no `{RUNS_KEY}` metadata: not a leocc time-series part",
                        p.display()
                    )
                })?;
            for k in runs.lines() {
                part_of.insert(k.to_string(), i);
            }
        }
        Ok(Store {
            dir,
            parts,
            part_of,
        })
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[PathBuf] {
        &self.parts
    }

    fn next_part_number(&self) -> u64 {
        let n = |p: &PathBuf| {
            p.file_stem()?
                .to_str()?
                .strip_prefix("part-")?
                .parse::<u64>()
                .ok()
        };
        self.parts.iter().filter_map(n).max().map_or(0, |m| m + 1)
    }

    /// The time series of the run `key` whose record names `csv` (its `timeseries` field,
    /// relative to the eval folder): from the CSV while it exists, else from its part.
    pub fn read(&self, key: &str, csv: &str) -> Result<Vec<TsRow>> {
        let path = self.dir.parent().unwrap_or(Path::new(".")).join(csv);
        if path.exists() {
            return crate::report::read_timeseries(&path);
        }
        let Some(&i) = self.part_of.get(key) else {
            bail!(
                "no time series for run {key}: neither {} nor a part of {} holds it",
                path.display(),
                self.dir.display()
            );
        };
        read_run(&self.parts[i], key)
    }
}

fn open_part(p: &Path) -> Result<SerializedFileReader<std::fs::File>> {
    let f = std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
    SerializedFileReader::new(f)
        .with_context(|| format!("{}: not a readable Parquet file", p.display()))
}

/// The rows of run `key` in the part at `path`, reading only the row groups whose key range
/// can hold it.
fn read_run(path: &Path, key: &str) -> Result<Vec<TsRow>> {
    let reader = open_part(path)?;
    // Only the columns a chart needs: the others (the control's state, a long string per
    // row) would be decompressed and decoded for nothing.
    let schema = reader.metadata().file_metadata().schema();
    let wanted: Vec<_> = schema
        .get_fields()
        .iter()
        .filter(|f| READ_COLUMNS.contains(&f.name()))
        .cloned()
        .collect();
    let projection = parquet::schema::types::Type::group_type_builder(schema.name())
        .with_fields(wanted)
        .build()?;
    let mut out = Vec::new();
    for g in 0..reader.num_row_groups() {
        let may_hold = match reader.metadata().row_group(g).column(0).statistics() {
            Some(Statistics::ByteArray(s)) => {
                s.min_bytes_opt().is_none_or(|m| m <= key.as_bytes())
                    && s.max_bytes_opt().is_none_or(|m| key.as_bytes() <= m)
            }
            _ => true,
        };
        if !may_hold {
            continue;
        }
        for row in reader
            .get_row_group(g)?
            .get_row_iter(Some(projection.clone()))?
        {
            let row = row?;
            let mut r = TsRow::default();
            let mut this_run = false;
            for (name, field) in row.get_column_iter() {
                let num = match field {
                    Field::Double(v) => *v,
                    Field::Long(v) => *v as f64,
                    _ => f64::NAN,
                };
                match name.as_str() {
                    "key" => this_run = matches!(field, Field::Str(s) if s == key),
                    "t_s" => r.t_s = num,
                    "flow" => r.flow = num as usize,
                    "throughput_mbps" => r.throughput_mbps = num,
                    "rtt_ms" => r.rtt_ms = num,
                    _ => {}
                }
            }
            if this_run {
                out.push(r);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_csv(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(TS_DIR).join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-tsstore-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    const SIM: &str =
        "cc,seed,t_s,flow,flow_cc,throughput_mbps,rtt_ms,cwnd,pacing_mbps,inflight,state\n\
                       leocc,1,0.1,0,leocc,10.5,41.25,10,12.000,9,phase=up\n\
                       leocc,1,0.2,0,leocc,20.25,45.5,20,,19,\n";
    const EMU: &str = "t_s,flow,throughput_mbps,rtt_ms,loss\n0.1,0,5,40,0.01\n0.2,0,6,41,x\n";

    #[test]
    fn temporaries_of_dead_writers_are_removed_and_live_ones_kept() {
        let d = tmp("stale");
        let ts = d.join(TS_DIR);
        std::fs::create_dir_all(&ts).unwrap();
        // A pid above the kernel's limit (pid_max is at most 2^22) never runs.
        let dead = ts.join(".run-1.csv.tmp.4999999.0.csv");
        let live = ts.join(format!(".run-2.csv.tmp.{}.3.csv", std::process::id()));
        let other = ts.join("run-3.csv");
        for p in [&dead, &live, &other] {
            std::fs::write(p, "").unwrap();
        }
        assert_eq!(remove_stale_temps(&d).unwrap(), vec![dead.clone()]);
        assert!(!dead.exists() && live.exists() && other.exists());
        assert!(
            remove_stale_temps(&tmp("no-ts")).unwrap().is_empty(),
            "no ts/ yet is fine"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn folds_runs_into_a_part_and_reads_them_back() {
        let d = tmp("fold");
        let a = write_csv(&d, "a.csv", SIM);
        let b = write_csv(&d, "b.csv", EMU);
        let runs = [
            Pending {
                key: "run|b".into(),
                csv: b.clone(),
            },
            Pending {
                key: "run|a".into(),
                csv: a.clone(),
            },
        ];
        let c = compact(&d, &runs).unwrap();
        assert_eq!((c.runs, c.rows, c.already_folded), (2, 4, 0));
        assert_eq!(
            c.part.as_deref(),
            Some(d.join("ts/part-00000.parquet").as_path())
        );
        assert!(!a.exists() && !b.exists(), "folded CSVs are removed");
        let s = Store::open(&d).unwrap();
        let rows = s.read("run|a", "ts/a.csv").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[1].t_s,
                rows[1].flow,
                rows[1].throughput_mbps,
                rows[1].rtt_ms
            ),
            (0.2, 0, 20.25, 45.5)
        );
        let rows = s.read("run|b", "ts/b.csv").unwrap();
        assert_eq!(
            rows.iter().map(|r| r.throughput_mbps).collect::<Vec<_>>(),
            vec![5.0, 6.0]
        );
        assert!(s
            .read("run|c", "ts/c.csv")
            .unwrap_err()
            .to_string()
            .contains("no time series for run run|c"));

        // The part's columns: integers, numbers with nulls, text; the other run's columns null.
        let reader = open_part(c.part.as_ref().unwrap()).unwrap();
        let schema = reader.metadata().file_metadata().schema_descr();
        let cols: Vec<String> = schema
            .columns()
            .iter()
            .map(|c| format!("{}:{}", c.name(), c.physical_type()))
            .collect();
        assert_eq!(
            cols.join(" "),
            "key:BYTE_ARRAY cc:BYTE_ARRAY seed:INT64 t_s:DOUBLE flow:INT64 flow_cc:BYTE_ARRAY throughput_mbps:DOUBLE \
             rtt_ms:DOUBLE cwnd:INT64 pacing_mbps:DOUBLE inflight:INT64 state:BYTE_ARRAY loss:BYTE_ARRAY"
        );
        let rows: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert!(
            rows[1].contains("pacing_mbps: null") && rows[1].contains("state: null"),
            "{}",
            rows[1]
        );
        assert!(
            rows[2].contains("cc: null") && rows[2].contains("loss: \"0.01\""),
            "{}",
            rows[2]
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn later_batches_make_new_parts_and_interrupted_ones_finish() {
        let d = tmp("batches");
        let a = write_csv(&d, "a.csv", SIM);
        compact(
            &d,
            &[Pending {
                key: "a".into(),
                csv: a.clone(),
            }],
        )
        .unwrap();
        // A compaction killed after its part was renamed in but before the CSV was removed:
        // the CSV is older than the part.
        write_csv(&d, "a.csv", SIM);
        set_age(&a, &d.join("ts/part-00000.parquet"), -1);
        let b = write_csv(&d, "b.csv", EMU);
        let c = compact(
            &d,
            &[
                Pending {
                    key: "a".into(),
                    csv: a.clone(),
                },
                Pending {
                    key: "b".into(),
                    csv: b,
                },
            ],
        )
        .unwrap();
        assert_eq!((c.runs, c.already_folded), (1, 1));
        assert_eq!(
            c.part.as_deref(),
            Some(d.join("ts/part-00001.parquet").as_path())
        );
        let s = Store::open(&d).unwrap();
        assert_eq!(s.parts().len(), 2);
        assert_eq!(
            s.read("a", "ts/a.csv").unwrap().len(),
            2,
            "run a once, not twice"
        );
        // Nothing left to fold: no new part.
        assert_eq!(
            compact(
                &d,
                &[Pending {
                    key: "b".into(),
                    csv: d.join("ts/b.csv")
                }]
            )
            .unwrap(),
            Compacted::default()
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Sets `file`'s modification time `secs` seconds from `reference`'s.
    fn set_age(file: &Path, reference: &Path, secs: i64) {
        let t = std::fs::metadata(reference).unwrap().modified().unwrap();
        let t = if secs < 0 { t - std::time::Duration::from_secs(secs.unsigned_abs()) } else { t + std::time::Duration::from_secs(secs as u64) };
        std::fs::File::options().write(true).open(file).unwrap().set_modified(t).unwrap();
    }

    /// A run made again after its series was folded (`bench fidelity --rerun`): its new CSV,
    /// newer than the part, is folded into a new part, and readers take the new series.
    #[test]
    fn a_run_made_again_replaces_its_folded_series() {
        let d = tmp("rerun");
        let a = write_csv(&d, "a.csv", SIM);
        compact(&d, &[Pending { key: "a".into(), csv: a.clone() }]).unwrap();
        let before = Store::open(&d).unwrap().read("a", "ts/a.csv").unwrap();
        write_csv(&d, "a.csv", EMU);
        set_age(&a, &d.join("ts/part-00000.parquet"), 1);
        let c = compact(&d, &[Pending { key: "a".into(), csv: a.clone() }]).unwrap();
        assert_eq!((c.runs, c.already_folded), (1, 0));
        let after = Store::open(&d).unwrap().read("a", "ts/a.csv").unwrap();
        assert_ne!(format!("{before:?}"), format!("{after:?}"), "the new series, not the folded one");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_bad_csv_stays_a_csv() {
        let d = tmp("bad");
        let bad = write_csv(&d, "bad.csv", "t_s,flow\n0.1,0\n0.2\n");
        let c = compact(
            &d,
            &[Pending {
                key: "bad".into(),
                csv: bad.clone(),
            }],
        )
        .unwrap();
        assert_eq!(c.runs, 0);
        assert!(bad.exists());
        assert!(Csv::read(&bad)
            .err()
            .unwrap()
            .to_string()
            .contains("bad.csv:3: 1 fields, the header has 2"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
