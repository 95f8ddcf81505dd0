//! Every file and directory the project writes goes through here, so that a reader never sees
//! a half-written or mixed output: a full disk, a crash or kill -9 leaves the old destination
//! (or nothing) in place, never a truncated file under the real name.
//!
//! * [`OutFile`]: a temporary file in the destination's directory (a rename is only atomic
//!   within one file system), renamed over the destination only when complete and, if asked,
//!   checked. Dropped without [`OutFile::commit`] it removes the temporary file.
//! * [`OutDir`]: a directory written whole into a fresh temporary directory beside the
//!   destination and then swapped in; a non-empty destination is refused unless forced.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::FileError;

/// Distinguishes temporaries of one process (tests write in parallel threads).
static SEQ: AtomicU64 = AtomicU64::new(0);

/// `.NAME.tmp.PID.N[.EXT]` beside `dest`. The extension is kept because some writers (Chromium)
/// choose the format from it; the leading dot keeps it out of globs like `*.png`.
fn temp_beside(dest: &Path) -> PathBuf {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let ext = dest.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    dest.with_file_name(format!(".{name}.tmp.{}.{n}{ext}", std::process::id()))
}

/// The process that made the temporary file called `name` (a name [`temp_beside`] gives:
/// `.NAME.tmp.PID.N[.EXT]`), or `None` for any other name. A writer killed mid-write (kill -9)
/// leaves its temporary behind; a caller that owns a directory removes the ones whose process
/// is gone.
pub fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".tmp.")?;
    let mut parts = tail.split('.');
    let pid = parts.next()?.parse::<u32>().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    Some(pid)
}

/// The directory `dest` will live in, which must already exist: creating it silently would
/// hide a typo, and failing later would waste the work that produced the output.
fn parent_dir(dest: &Path) -> Result<PathBuf, FileError> {
    if dest.file_name().is_none() {
        return Err(FileError::whole(dest, "not a file name"));
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(FileError::whole(dest, format!("cannot write: the directory {} does not exist", parent.display())));
    }
    Ok(parent)
}

/// A file being written: the bytes go to a temporary file beside the destination.
#[derive(Debug)]
pub struct OutFile {
    dest: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl OutFile {
    /// Creates the temporary file for `dest`. Fails (naming the file) when the directory is
    /// missing or not writable, so callers can open their output before doing long work.
    pub fn create(dest: &Path) -> Result<OutFile, FileError> {
        parent_dir(dest)?;
        if dest.is_dir() {
            return Err(FileError::whole(dest, "is a directory; give a file name"));
        }
        let tmp = temp_beside(dest);
        let f = File::options().write(true).create_new(true).open(&tmp).map_err(|e| FileError::io(dest, &e))?;
        Ok(OutFile { dest: dest.to_path_buf(), tmp, out: Some(BufWriter::new(f)) })
    }

    /// Where the bytes go until [`commit`](Self::commit), for tools that write the file
    /// themselves (write nothing through `self` then).
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// The final name.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Flushes, syncs and renames over the destination.
    pub fn commit(self) -> Result<(), FileError> {
        self.commit_checked(|_| Ok(()))
    }

    /// Like [`commit`](Self::commit), but first runs `check` on the complete temporary file;
    /// a failed check leaves the destination untouched and is reported against it.
    pub fn commit_checked(mut self, check: impl FnOnce(&Path) -> Result<(), String>) -> Result<(), FileError> {
        let dest = self.dest.clone();
        let mut w = self.out.take().expect("an OutFile is committed once");
        w.flush().map_err(|e| FileError::io(&dest, &e))?;
        let f = w.into_inner().map_err(|e| FileError::io(&dest, e.error()))?;
        f.sync_all().map_err(|e| FileError::io(&dest, &e))?;
        drop(f);
        check(&self.tmp).map_err(|p| FileError::whole(&dest, p))?;
        std::fs::rename(&self.tmp, &dest).map_err(|e| FileError::io(&dest, &e))?;
        // Renamed: nothing left for Drop to remove.
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.as_mut().expect("written after commit").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().expect("flushed after commit").flush()
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `data` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), FileError> {
    let mut f = OutFile::create(path)?;
    f.write_all(data).map_err(|e| FileError::io(path, &e))?;
    f.commit()
}

/// A complete PNG: the 8-byte signature and, last, the IEND chunk (a truncated file, e.g. on a
/// full disk, has the signature but not the end).
pub fn check_png(path: &Path) -> Result<(), String> {
    const SIG: &[u8] = b"\x89PNG\r\n\x1a\n";
    const IEND: &[u8] = b"\0\0\0\0IEND\xae\x42\x60\x82";
    let data = std::fs::read(path).map_err(|e| format!("reading the rendered PNG: {e}"))?;
    if !data.starts_with(SIG) {
        return Err(format!("the rendered file is not a PNG ({} bytes, no PNG signature)", data.len()));
    }
    if !data.ends_with(IEND) {
        return Err(format!("the rendered PNG is incomplete ({} bytes, no IEND chunk; is the disk full?)", data.len()));
    }
    Ok(())
}

/// A complete PDF: the `%PDF-` header and an `%%EOF` marker in the last kilobyte.
pub fn check_pdf(path: &Path) -> Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("reading the rendered PDF: {e}"))?;
    if !data.starts_with(b"%PDF-") {
        return Err(format!("the rendered file is not a PDF ({} bytes, no %PDF- header)", data.len()));
    }
    let tail = &data[data.len().saturating_sub(1024)..];
    if !tail.windows(5).any(|w| w == b"%%EOF") {
        return Err(format!("the rendered PDF is incomplete ({} bytes, no %%EOF; is the disk full?)", data.len()));
    }
    Ok(())
}

/// A directory being written: files go into a fresh temporary directory beside the
/// destination, which [`commit`](Self::commit) swaps in whole.
#[derive(Debug)]
pub struct OutDir {
    dest: PathBuf,
    tmp: PathBuf,
    force: bool,
}

fn is_empty_dir(p: &Path) -> io::Result<bool> {
    Ok(std::fs::read_dir(p)?.next().is_none())
}

impl OutDir {
    /// Prepares to write the directory `dest` (its parents are created). Refuses, before any
    /// work, a destination that is a file or a non-empty directory unless `force`: mixing new
    /// files with old ones is how a reader ends up with one trace's capacity and another's delay.
    pub fn create(dest: &Path, force: bool) -> Result<OutDir, FileError> {
        if dest.file_name().is_none() {
            return Err(FileError::whole(dest, "not a directory name"));
        }
        if let Some(p) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(p).map_err(|e| FileError::io(p, &e))?;
        }
        match std::fs::symlink_metadata(dest) {
            Ok(_) if force => {}
            Ok(m) if !m.is_dir() => {
                return Err(FileError::whole(dest, "exists and is not a directory; choose a directory name or pass --force to replace it"));
            }
            Ok(_) if !is_empty_dir(dest).map_err(|e| FileError::io(dest, &e))? => {
                return Err(FileError::whole(dest, "the directory is not empty; choose a new one or pass --force to replace it"));
            }
            _ => {}
        }
        let tmp = temp_beside(dest);
        std::fs::create_dir(&tmp).map_err(|e| FileError::io(dest, &e))?;
        Ok(OutDir { dest: dest.to_path_buf(), tmp, force })
    }

    /// The temporary directory to write into.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Swaps the temporary directory in for the destination (moved aside first, then removed).
    pub fn commit(mut self) -> Result<(), FileError> {
        let dest = self.dest.clone();
        let io = |e: io::Error| FileError::io(&dest, &e);
        match std::fs::symlink_metadata(&dest) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
            Ok(m) => {
                let replaceable = self.force || m.is_dir() && is_empty_dir(&dest).map_err(io)?;
                if !replaceable {
                    return Err(FileError::whole(&dest, "appeared while writing and is not empty; not replaced"));
                }
                let old = temp_beside(&dest);
                std::fs::rename(&dest, &old).map_err(io)?;
                if let Err(e) = std::fs::rename(&self.tmp, &dest) {
                    let _ = std::fs::rename(&old, &dest);
                    return Err(io(e));
                }
                let _ = if m.is_dir() { std::fs::remove_dir_all(&old) } else { std::fs::remove_file(&old) };
                self.tmp = PathBuf::new();
                return Ok(());
            }
        }
        std::fs::rename(&self.tmp, &dest).map_err(io)?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn temp_owner_reads_the_pid_of_our_temporaries_only() {
        let t = temp_beside(Path::new("/x/ts/run-1.csv"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_owner(name), Some(std::process::id()), "{name}");
        assert_eq!(temp_owner(".a.b.tmp.123.7"), Some(123), "no extension");
        assert_eq!(temp_owner("run-1.csv"), None);
        assert_eq!(temp_owner(".run.csv.tmp.x.1.csv"), None);
        assert_eq!(temp_owner("part-00001.parquet"), None);
    }

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-out-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn failed_check_or_drop_leaves_no_file_and_no_temporary() {
        let d = scratch("check");
        let p = d.join("x.png");
        let mut f = OutFile::create(&p).unwrap();
        f.write_all(b"\x89PNG\r\n\x1a\ntruncated").unwrap();
        let e = f.commit_checked(check_png).unwrap_err();
        assert!(e.to_string().contains("x.png") && e.problem.contains("IEND"), "{e}");
        let f = OutFile::create(&p).unwrap();
        drop(f);
        assert!(entries(&d).is_empty(), "{:?}", entries(&d));
        write_atomic(&p, b"ok").unwrap();
        assert_eq!(entries(&d), ["x.png"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn missing_directory_is_named() {
        let d = scratch("missing");
        let e = OutFile::create(&d.join("nope/x.csv")).unwrap_err();
        assert!(e.problem.contains("does not exist") && e.problem.contains("nope"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn png_and_pdf_checks() {
        let d = scratch("fmt");
        let p = d.join("a");
        std::fs::write(&p, b"\x89PNG\r\n\x1a\n....\0\0\0\0IEND\xae\x42\x60\x82").unwrap();
        check_png(&p).unwrap();
        std::fs::write(&p, b"<svg/>").unwrap();
        assert!(check_png(&p).unwrap_err().contains("not a PNG"));
        assert!(check_pdf(&p).unwrap_err().contains("not a PDF"));
        std::fs::write(&p, b"%PDF-1.4\n...\n%%EOF\n").unwrap();
        check_pdf(&p).unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn directory_is_swapped_whole_or_refused() {
        let d = scratch("dir");
        let out = d.join("mm");
        // An empty directory is fine to write into.
        std::fs::create_dir(&out).unwrap();
        let o = OutDir::create(&out, false).unwrap();
        std::fs::write(o.path().join("a.txt"), "1").unwrap();
        o.commit().unwrap();
        assert_eq!(entries(&out), ["a.txt"]);
        let e = OutDir::create(&out, false).err().unwrap();
        assert!(e.problem.contains("not empty") && e.problem.contains("--force"), "{e}");
        // Forced: the old files are gone, not mixed with the new ones.
        let o = OutDir::create(&out, true).unwrap();
        std::fs::write(o.path().join("b.txt"), "2").unwrap();
        o.commit().unwrap();
        assert_eq!(entries(&out), ["b.txt"]);
        // Dropped half-way: the destination is as it was and no temporary remains.
        let o = OutDir::create(&out, true).unwrap();
        std::fs::write(o.path().join("c.txt"), "3").unwrap();
        drop(o);
        assert_eq!(entries(&out), ["b.txt"]);
        assert_eq!(entries(&d), ["mm"]);
        // A file where the directory should go is a clear error, replaced only when forced.
        std::fs::write(d.join("f"), "x").unwrap();
        let e = OutDir::create(&d.join("f"), false).err().unwrap();
        assert!(e.problem.contains("not a directory"), "{e}");
        OutDir::create(&d.join("f"), true).unwrap().commit().unwrap();
        assert!(d.join("f").is_dir());
        let _ = std::fs::remove_dir_all(&d);
    }
}
