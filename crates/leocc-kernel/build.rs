//! Builds bpf/leocc.bpf.c (which includes core/leocc.c and the option carrier
//! bpf/leocc_option.bpf.c) into a BPF object and generates its libbpf-rs skeleton, so that
//! nothing is compiled when `leocc kernel load` runs; and bpf/leocc_test_peer.bpf.c, the
//! scriptable TCP peer of the option tests; and bpf/leocc_traffic.bpf.c, the per-cgroup traffic
//! counter of `leocc kernel traffic`.
//!
//! vmlinux.h is generated here from the build machine's kernel BTF (bpftool btf dump) into
//! OUT_DIR rather than committed: it is 3+ MB, it must match the kernel types we read, and the
//! object is CO-RE anyway (field offsets are relocated at load time against the running
//! kernel's BTF). `LEOCC_VMLINUX_H=/path/vmlinux.h` overrides it for machines without BTF.
//!
//! When no vmlinux.h can be had, or the core is not there, the crate still builds: cfg
//! `leocc_no_bpf` is set and the loader reports the reason at run time instead of loading.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

/// Where the running kernel exposes its BTF.
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../..");
    let bpf_dir = root.join("bpf");
    let core_dir = root.join("core");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));

    println!("cargo::rustc-check-cfg=cfg(leocc_no_bpf)");
    // Relative to the package, so that checkouts sharing a target directory do not reuse each
    // other's BPF object.
    println!("cargo::rerun-if-changed=../../bpf");
    println!("cargo::rerun-if-changed=../../core");
    println!("cargo::rerun-if-env-changed=LEOCC_VMLINUX_H");
    println!("cargo::rerun-if-env-changed=CLANG");

    // bpf/leocc_option.h for the host, for the tests of src/option.rs (constants and the grade
    // functions against the Rust mirror); plain C, so it is built even without the BPF object.
    println!("cargo::rerun-if-changed=option_abi.c");
    cc::Build::new()
        .file(manifest.join("option_abi.c"))
        .include(&bpf_dir)
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("leocc_option_abi");

    let src = bpf_dir.join("leocc.bpf.c");
    if !core_dir.join("leocc.c").exists() || !core_dir.join("leocc.h").exists() {
        return no_bpf(&format!(
            "the LeoCC core ({}/leocc.c, leocc.h) was missing when this binary was built",
            core_dir.display()
        ));
    }
    if let Err(reason) = vmlinux_h(&out) {
        return no_bpf(&reason);
    }

    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let object = out.join("leocc.bpf.o");
    let result = SkeletonBuilder::new()
        .source(&src)
        .obj(&object)
        .clang(&clang)
        .clang_args([
            "-I".as_ref(),
            out.as_os_str(),
            "-I".as_ref(),
            bpf_dir.as_os_str(),
            "-Wall".as_ref(),
            "-Wno-unused-function".as_ref(),
        ])
        .build_and_generate(out.join("leocc.skel.rs"));
    if let Err(e) = result {
        // A compile error in the BPF program or the core is a real error: fail loudly.
        panic!("building {} failed: {e:#}", src.display());
    }
    // The loader compares this with what the registered program was built from, so that a
    // newer binary does not go on running an older registration (`leocc kernel load`).
    let bytes = fs::read(&object).unwrap_or_else(|e| panic!("{}: {e}", object.display()));
    println!("cargo::rustc-env=LEOCC_BPF_BUILD={:016x}", fnv1a64(&bytes));

    // The scriptable peer of the option carrier's tests (lab::TestPeer): only its object,
    // embedded and opened with libbpf's generic API.
    let peer = bpf_dir.join("leocc_test_peer.bpf.c");
    let result = SkeletonBuilder::new()
        .source(&peer)
        .obj(out.join("leocc_test_peer.bpf.o"))
        .clang(&clang)
        .clang_args([
            "-I".as_ref(),
            out.as_os_str(),
            "-I".as_ref(),
            bpf_dir.as_os_str(),
            "-Wall".as_ref(),
        ])
        .build();
    if let Err(e) = result {
        panic!("building {} failed: {e:#}", peer.display());
    }

    // The per-cgroup traffic counter (traffic::CgroupTraffic): only its object, like the peer.
    let counter = bpf_dir.join("leocc_traffic.bpf.c");
    let result = SkeletonBuilder::new()
        .source(&counter)
        .obj(out.join("leocc_traffic.bpf.o"))
        .clang(&clang)
        .clang_args(["-I".as_ref(), out.as_os_str(), "-Wall".as_ref()])
        .build();
    if let Err(e) = result {
        panic!("building {} failed: {e:#}", counter.display());
    }
}

/// Writes OUT_DIR/vmlinux.h from $LEOCC_VMLINUX_H or from the kernel's BTF via bpftool.
fn vmlinux_h(out: &Path) -> Result<(), String> {
    let dst = out.join("vmlinux.h");
    if let Some(given) = env::var_os("LEOCC_VMLINUX_H") {
        fs::copy(&given, &dst)
            .map_err(|e| format!("LEOCC_VMLINUX_H={}: {e}", Path::new(&given).display()))?;
        return Ok(());
    }
    if !Path::new(KERNEL_BTF).exists() {
        return Err(format!(
            "the build machine has no kernel BTF at {KERNEL_BTF} to make vmlinux.h from \
             (set LEOCC_VMLINUX_H to a vmlinux.h to build without it)"
        ));
    }
    let bpftool = find_bpftool().ok_or_else(|| {
        "bpftool was not found (apt-get install bpftool) to make vmlinux.h".to_string()
    })?;
    let output = Command::new(&bpftool)
        .args(["btf", "dump", "file", KERNEL_BTF, "format", "c"])
        .output()
        .map_err(|e| format!("running {}: {e}", bpftool.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} btf dump failed: {}",
            bpftool.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let tmp = out.join("vmlinux.h.tmp");
    fs::write(&tmp, &output.stdout).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fs::rename(&tmp, &dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    Ok(())
}

/// bpftool lives in /usr/sbin on Debian, which is not on every user's PATH.
fn find_bpftool() -> Option<PathBuf> {
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join("bpftool"))
        .find(|p| p.is_file())
}

/// FNV-1a, 64 bits: a fingerprint of the object, not a defence against anyone.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn no_bpf(reason: &str) {
    println!("cargo::warning=leocc-kernel built WITHOUT the BPF program: {reason}");
    println!("cargo::rustc-cfg=leocc_no_bpf");
    println!("cargo::rustc-env=LEOCC_NO_BPF_REASON={reason}");
    println!("cargo::rustc-env=LEOCC_BPF_BUILD=none");
}
