//! results.jsonl: one JSON object per finished run, as the engine printed it plus the run's
//! identity (key, engine, trace, scenario, label, seed). Reading is tolerant of a torn last line
//! (a run killed while appending) and strict about everything else.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

/// The queue of a row without a `queue` field (written before the buffer axis existed, when
/// every run had the engines' default of 500 packets).
pub const LEGACY_QUEUE: &str = "500";

/// The queue discipline of a row without a `qdisc` field (written before the discipline axis
/// existed, when every queue was drop-tail).
pub const LEGACY_QDISC: &str = "droptail";

/// One finished run.
#[derive(Clone, Debug)]
pub struct Record(pub Value);

impl Record {
    /// A string field, or "" when absent.
    pub fn str(&self, field: &str) -> &str {
        self.0.get(field).and_then(Value::as_str).unwrap_or("")
    }

    /// A numeric field.
    pub fn num(&self, field: &str) -> Option<f64> {
        self.0.get(field).and_then(Value::as_f64)
    }

    /// The bottleneck queue the run had, as given (`500`, `150ms`). Rows written before the
    /// buffer axis have no `queue` field: they ran with 500 packets.
    pub fn queue(&self) -> String {
        match self.0.get("queue") {
            Some(Value::String(q)) if !q.is_empty() => q.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => LEGACY_QUEUE.to_string(),
        }
    }

    /// The queue discipline the run had (`droptail`, `dropfront`, `codel`). Rows written before
    /// the discipline axis have no `qdisc` field: their queues were drop-tail.
    pub fn qdisc(&self) -> String {
        match self.0.get("qdisc") {
            Some(Value::String(q)) if !q.is_empty() => q.clone(),
            _ => LEGACY_QDISC.to_string(),
        }
    }

    /// The bottleneck a cell groups by: the queue as given, and its discipline unless it is
    /// drop-tail (`150ms`, `150ms codel`), so that drop-tail cells keep the keys they had.
    pub fn buffer(&self) -> String {
        match self.qdisc() {
            q if q == LEGACY_QDISC => self.queue(),
            q => format!("{} {q}", self.queue()),
        }
    }

    /// The queue for tables: as given, with its size in the other unit when the run recorded it
    /// (`500 pkts (15 ms)`, `150ms (5.6 MB)`), and the discipline when it is not drop-tail
    /// (`150ms (5.6 MB), codel`).
    pub fn queue_label(&self) -> String {
        let q = self.queue();
        let packets = q.parse::<u64>().is_ok();
        let given = if packets { format!("{q} pkts") } else { q };
        let label = match (packets, self.num("queue_ms"), self.num("queue_bytes")) {
            (true, Some(ms), _) if ms > 0.0 => format!("{given} ({ms:.0} ms)"),
            (false, _, Some(b)) if b > 0.0 => format!("{given} ({:.1} MB)", b / 1e6),
            _ => given,
        };
        match self.qdisc() {
            q if q == LEGACY_QDISC => label,
            q => format!("{label}, {q}"),
        }
    }

    /// The per-flow objects, when the engine reported them.
    pub fn flows(&self) -> &[Value] {
        self.0
            .get("flows")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}

/// Reads every record of `path`; a missing file is an empty result. A malformed line other than
/// a torn last line is an error naming the file and line.
pub fn read(path: &Path) -> Result<Vec<Record>> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            // Every record the runner appends carries its key; an object without one is some
            // other JSON file, which must not read as an empty or meaningless result set.
            Ok(v) if v.get("key").is_some_and(Value::is_string) => {
                // Rows before the schema field are version 0; what they hold, this reads.
                let schema = v.get("schema").and_then(Value::as_u64).unwrap_or(0);
                if schema > u64::from(leocc_base::record::SCHEMA) {
                    bail!(
                        "{}:{}: written by a newer leocc (row schema {schema}; this one reads up to {})",
                        path.display(),
                        i + 1,
                        leocc_base::record::SCHEMA
                    );
                }
                out.push(Record(v))
            }
            Ok(v) if v.is_object() => bail!(
                "{}:{}: not an eval result (no \"key\" field); expected the results.jsonl that `leocc eval` writes",
                path.display(),
                i + 1
            ),
            Ok(_) => bail!("{}:{}: not a JSON object", path.display(), i + 1),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {
                eprintln!(
                    "leocc eval: {}:{}: ignoring a torn last line (an interrupted run); it will be rerun",
                    path.display(),
                    i + 1
                );
            }
            Err(e) => bail!("{}:{}: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

/// Drops a torn last line (a run killed while appending), so that the next append starts on a
/// line of its own. The file is rewritten through a temporary file and a rename.
pub fn repair(path: &Path) -> Result<()> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if text.is_empty() || text.ends_with('\n') {
        return Ok(());
    }
    let keep = text.rfind('\n').map_or(0, |i| i + 1);
    Ok(leocc_base::write_atomic(path, &text.as_bytes()[..keep])?)
}

/// The keys of the runs already in the file.
pub fn finished_keys(records: &[Record]) -> HashSet<String> {
    records.iter().map(|r| r.str("key").to_string()).collect()
}

/// Appends one record as a single write, so a reader never sees half of it unless the process
/// dies inside that write (handled by [`read`]).
pub fn append(path: &Path, record: &Value) -> Result<()> {
    let mut line = serde_json::to_string(record)?;
    line.push('\n');
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.write_all(line.as_bytes())
        .with_context(|| format!("appending to {}", path.display()))
}

pub use crate::stats::Stat;

/// The runs of one (engine, trace, buffer, scenario, label) cell; the buffer is
/// [`Record::buffer`]: the queue, and its discipline unless drop-tail.
pub type CellKey = (String, String, String, String, String);

/// Groups records by cell, in a stable order.
pub fn by_cell(records: &[Record]) -> BTreeMap<CellKey, Vec<&Record>> {
    let mut cells: BTreeMap<CellKey, Vec<&Record>> = BTreeMap::new();
    for r in records {
        let key = (
            r.str("engine").to_string(),
            r.str("trace").to_string(),
            r.buffer(),
            r.str("scenario").to_string(),
            r.str("label").to_string(),
        );
        cells.entry(key).or_default().push(r);
    }
    cells
}

/// The statistic of `field` over a cell's runs.
pub fn stat(runs: &[&Record], field: &str) -> Option<Stat> {
    let v: Vec<f64> = runs.iter().filter_map(|r| r.num(field)).collect();
    Stat::of(&v)
}

/// The statistic of flow `i`'s `field` over a cell's runs (a scenario's flows are in the same
/// order in every run).
pub fn flow_stat(runs: &[&Record], i: usize, field: &str) -> Option<Stat> {
    let v: Vec<f64> = runs
        .iter()
        .filter_map(|r| {
            r.flows()
                .get(i)
                .and_then(|f| f.get(field))
                .and_then(|v| v.as_f64())
        })
        .collect();
    Stat::of(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-eval-{}-{name}", std::process::id()));
        let _ = fs::remove_file(&d);
        d
    }

    #[test]
    fn append_then_read_round_trips_and_tolerates_a_torn_tail() {
        let p = tmp("torn.jsonl");
        append(
            &p,
            &serde_json::json!({"key": "a", "throughput_mbps": 10.0}),
        )
        .unwrap();
        append(
            &p,
            &serde_json::json!({"key": "b", "throughput_mbps": 20.0}),
        )
        .unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"key\": \"c\", \"thr").unwrap();
        let recs = read(&p).unwrap();
        assert_eq!(recs.len(), 2);
        let keys = finished_keys(&recs);
        assert!(keys.contains("a") && keys.contains("b") && !keys.contains("c"));
        repair(&p).unwrap();
        append(&p, &serde_json::json!({"key": "c"})).unwrap();
        let keys = finished_keys(&read(&p).unwrap());
        assert_eq!(keys.len(), 3);
        assert!(keys.contains("c"));
        fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_row_of_a_newer_schema_is_refused_and_one_without_a_schema_read() {
        let p = tmp("schema.jsonl");
        let now = leocc_base::record::SCHEMA;
        fs::write(&p, format!("{{\"key\":\"a\"}}\n{{\"key\":\"b\",\"schema\":{now}}}\n")).unwrap();
        assert_eq!(read(&p).unwrap().len(), 2);
        fs::write(&p, format!("{{\"key\":\"a\"}}\n{{\"key\":\"b\",\"schema\":{}}}\n", now + 1)).unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(err.contains(":2: written by a newer leocc"), "{err}");
        fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_with_its_line() {
        let p = tmp("bad.jsonl");
        fs::write(&p, "{\"key\":\"a\"}\nnot json\n{\"key\":\"b\"}\n").unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(err.contains(":2:"), "{err}");
        fs::remove_file(&p).unwrap();
    }

    #[test]
    fn rows_without_a_queue_are_the_old_500_packets_and_cells_split_by_buffer() {
        let p = tmp("queues.jsonl");
        fs::write(
            &p,
            "{\"key\":\"a\",\"engine\":\"sim\",\"trace\":\"t\",\"scenario\":\"single\",\"label\":\"bbr\",\"throughput_mbps\":10.0}\n\
             {\"key\":\"b\",\"engine\":\"sim\",\"trace\":\"t\",\"scenario\":\"single\",\"label\":\"bbr\",\"throughput_mbps\":20.0,\"queue\":\"500\",\"queue_bytes\":750000,\"queue_ms\":15.2}\n\
             {\"key\":\"c\",\"engine\":\"sim\",\"trace\":\"t\",\"scenario\":\"single\",\"label\":\"bbr\",\"throughput_mbps\":30.0,\"queue\":\"150ms\",\"queue_bytes\":5600000,\"queue_ms\":150.0}\n",
        )
        .unwrap();
        let recs = read(&p).unwrap();
        assert_eq!(recs[0].queue(), "500");
        assert_eq!(recs[0].queue_label(), "500 pkts");
        assert_eq!(recs[1].queue_label(), "500 pkts (15 ms)");
        assert_eq!(recs[2].queue_label(), "150ms (5.6 MB)");
        let cells = by_cell(&recs);
        assert_eq!(
            cells.len(),
            2,
            "old and new 500-packet rows share a cell; 150ms is another"
        );
        let shallow = &cells[&(
            "sim".into(),
            "t".into(),
            "500".into(),
            "single".into(),
            "bbr".into(),
        )];
        assert_eq!(stat(shallow, "throughput_mbps").unwrap().mean, 15.0);
        fs::remove_file(&p).unwrap();
    }

    #[test]
    fn json_that_is_not_results_is_an_error() {
        let p = tmp("other.jsonl");
        fs::write(&p, "{\"name\":\"leocc\",\"version\":1}\n").unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(
            err.contains(":1:") && err.contains("not an eval result"),
            "{err}"
        );
        fs::remove_file(&p).unwrap();
    }

    #[test]
    fn rows_without_a_qdisc_are_drop_tail_and_cells_split_by_discipline() {
        let p = tmp("qdiscs.jsonl");
        fs::write(
            &p,
            "{\"key\":\"a\",\"engine\":\"sim\",\"trace\":\"t\",\"scenario\":\"single\",\"label\":\"bbr\",\"throughput_mbps\":10.0,\"queue\":\"150ms\",\"queue_bytes\":5600000}\n\
             {\"key\":\"b\",\"engine\":\"sim\",\"trace\":\"t\",\"scenario\":\"single\",\"label\":\"bbr\",\"throughput_mbps\":20.0,\"queue\":\"150ms\",\"queue_bytes\":5600000,\"qdisc\":\"droptail\"}\n\
             {\"key\":\"c\",\"engine\":\"sim\",\"trace\":\"t\",\"scenario\":\"single\",\"label\":\"bbr\",\"throughput_mbps\":30.0,\"queue\":\"150ms\",\"queue_bytes\":5600000,\"qdisc\":\"codel\"}\n",
        )
        .unwrap();
        let recs = read(&p).unwrap();
        assert_eq!(recs[0].qdisc(), "droptail");
        assert_eq!(recs[0].queue_label(), "150ms (5.6 MB)");
        assert_eq!(recs[1].queue_label(), "150ms (5.6 MB)");
        assert_eq!(recs[2].queue_label(), "150ms (5.6 MB), codel");
        let cells = by_cell(&recs);
        assert_eq!(
            cells.len(),
            2,
            "old and new drop-tail rows share a cell; CoDel is another"
        );
        let tail = &cells[&(
            "sim".into(),
            "t".into(),
            "150ms".into(),
            "single".into(),
            "bbr".into(),
        )];
        assert_eq!(stat(tail, "throughput_mbps").unwrap().mean, 15.0);
        let codel = &cells[&(
            "sim".into(),
            "t".into(),
            "150ms codel".into(),
            "single".into(),
            "bbr".into(),
        )];
        assert_eq!(stat(codel, "throughput_mbps").unwrap().mean, 30.0);
        fs::remove_file(&p).unwrap();
    }
}
