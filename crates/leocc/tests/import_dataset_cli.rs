//! `leocc trace import-dataset` reads its inputs line by line in bounded memory (issue 34 item
//! 6): a big binary file under a trace name is refused from its first bytes, and the whole
//! process stays small. Peak RSS comes from wait4 on this one child (RUSAGE_CHILDREN would mix
//! in the children of tests running in parallel).
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Size of the sparse input: large against the bound, quick to create (no data is written).
const BIG_INPUT_BYTES: u64 = 200 << 20;
/// The whole CLI's peak RSS, whatever the input's size (issue 34: under 64 MB for 1 GiB).
const RSS_LIMIT_BYTES: u64 = 64 << 20;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leocc-import-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `leocc args`, returning its exit status, stderr and peak RSS in bytes.
fn run_measured(args: &[&std::ffi::OsStr]) -> (i32, String, u64) {
    let err_path = scratch("stderr").join("stderr.txt");
    let child = Command::new(env!("CARGO_BIN_EXE_leocc"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run leocc");
    let (mut status, mut usage) = (0i32, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: waits for our own child by pid; status and usage are valid out-parameters. The
    // Child is not waited on again (dropping it does not wait).
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4: {}", std::io::Error::last_os_error());
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    let _ = std::fs::remove_dir_all(err_path.parent().unwrap());
    // ru_maxrss is in KiB on Linux.
    (libc::WEXITSTATUS(status), stderr, usage.ru_maxrss as u64 * 1024)
}

#[test]
fn a_big_binary_file_is_refused_in_bounded_memory_and_listed() {
    let d = scratch("big");
    let ds = d.join("ds");
    // One good pair, from the bundled fiber trace, so that the import succeeds.
    let good = ds.join("A_download/1");
    std::fs::create_dir_all(&good).unwrap();
    let ex = d.join("ex");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new(env!("CARGO_BIN_EXE_leocc")).args(["trace", "export"]).arg(root.join("traces/fiber-30s.trace")).arg("-o").arg(&ex).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::rename(ex.join("bw_down.txt"), good.join("bw_1.txt")).unwrap(); // fiber has both directions
    std::fs::rename(ex.join("delay.txt"), good.join("delay_1.txt")).unwrap();
    // A sparse 200 MB file of zeros under a capacity file's name, with its delay file.
    let bad = ds.join("A_download/2");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::File::create(bad.join("bw_2.txt")).unwrap().set_len(BIG_INPUT_BYTES).unwrap();
    std::fs::write(bad.join("delay_2.txt"), "20\n").unwrap();
    let out = d.join("out");
    let (code, err, rss) = run_measured(&["trace".as_ref(), "import-dataset".as_ref(), ds.as_os_str(), "-o".as_ref(), out.as_os_str(), "--jobs".as_ref(), "2".as_ref()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("skipped A_download/2") && err.contains("binary data"), "{err}");
    assert!(rss < RSS_LIMIT_BYTES, "peak RSS {rss} bytes for a {BIG_INPUT_BYTES}-byte input");
    eprintln!("import-dataset with a {BIG_INPUT_BYTES}-byte sparse input: peak RSS {} kB", rss / 1024);
    std::fs::remove_dir_all(&d).unwrap();
}
