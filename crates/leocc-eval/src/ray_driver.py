"""leocc eval's Ray driver: runs the runs it reads on stdin as Ray tasks, one task per run, and
prints each result on stdout as soon as it finishes (in completion order).

Started by `leocc eval --executor ray` (crates/leocc-eval/src/ray.rs), which embeds this file.
Input: one JSON object a line, {"id": N, "args": [...], "trace": PATH}; the args hold the
placeholders {trace} and {timeseries}. Output: one JSON object a line,
{"id": N, "code": EXIT, "stdout": S, "stderr": S, "timeseries": CSV or null} or
{"id": N, "error": WHY} when the task itself failed (a worker died, Ray gave up).

Workers need nothing installed but Ray: the leocc executable and each trace travel through
Ray's object store once and are cached per node by content hash.
"""

import argparse
import ctypes
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

import ray

# prctl(PR_SET_PDEATHSIG): a run must not outlive the worker that started it.
PR_SET_PDEATHSIG = 1
# Where each node keeps the executable and traces it was sent, by content hash.
CACHE_DIR = os.path.join(tempfile.gettempdir(), "leocc-ray-cache")
# Retries of a task whose worker died (not of a run that failed: that is a result).
TASK_RETRIES = 2
# How long to wait for the head's port before saying there is no cluster: ray.init itself
# retries for minutes.
CONNECT_TIMEOUT_S = 5


def die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def cached(digest, ref_box, mode):
    """The path of the cached object `digest`, fetched from the object store on a miss."""
    path = os.path.join(CACHE_DIR, digest)
    if not os.path.exists(path):
        os.makedirs(CACHE_DIR, exist_ok=True)
        data = ray.get(ref_box[0])
        fd, tmp = tempfile.mkstemp(dir=CACHE_DIR)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    return path


@ray.remote(num_cpus=1, max_retries=TASK_RETRIES)
def run(run_id, exe, trace, args):
    """One run: the leocc executable with `args`, the trace and time series as local files."""
    exe_path = cached(exe[0], exe[1], 0o755)
    trace_path = cached(trace[0], trace[1], 0o644)
    with tempfile.TemporaryDirectory(prefix="leocc-run-") as d:
        ts = os.path.join(d, "ts.csv")
        argv = [exe_path] + [a.replace("{trace}", trace_path).replace("{timeseries}", ts) for a in args]
        p = subprocess.run(argv, capture_output=True, preexec_fn=die_with_parent)
        series = None
        if os.path.exists(ts):
            with open(ts, encoding="utf-8", errors="replace") as f:
                series = f.read()
        return {
            "id": run_id,
            "code": p.returncode,
            "stdout": p.stdout.decode("utf-8", "replace"),
            "stderr": p.stderr.decode("utf-8", "replace"),
            "timeseries": series,
        }


def put_file(path, store):
    """(content hash, [object ref]) of a file, put into the object store once per path."""
    if path not in store:
        with open(path, "rb") as f:
            data = f.read()
        store[path] = (hashlib.sha256(data).hexdigest(), [ray.put(data)])
    return store[path]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", required=True, help="the Ray cluster, HOST:PORT of its head")
    ap.add_argument("--exe", required=True, help="the leocc executable to run on the workers")
    opts = ap.parse_args()
    host, _, port = opts.address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except (OSError, ValueError) as e:
        sys.exit(f"no Ray head at {opts.address} ({e}); start one with `ray start --head --port PORT`")
    ray.init(address=opts.address, log_to_driver=False, logging_level="ERROR")
    store = {}
    exe = put_file(opts.exe, store)
    pending = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        spec = json.loads(line)
        ref = run.remote(spec["id"], exe, put_file(spec["trace"], store), spec["args"])
        pending[ref] = spec["id"]
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            run_id = pending.pop(ref)
            try:
                out = ray.get(ref)
            except Exception as e:  # the task, not the run, failed: report and go on
                out = {"id": run_id, "error": f"{type(e).__name__}: {e}"}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
