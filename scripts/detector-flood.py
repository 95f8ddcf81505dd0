#!/usr/bin/env python3
"""Issue 34: how stale the kernel signal map gets while N local connections flood events.sock.

Usage (root): scripts/detector-flood.py LEOCC_BINARY UID N
  e.g. scripts/detector-flood.py target/debug/leocc 65534 5000

Makes two network namespaces joined by a veth pair (the PoP answers pings), pins a private
signal ARRAY map (bpftool), runs `leocc probe --signal-map` there with a 1,024-descriptor limit
(nsenter, not `ip netns exec`, which remounts /sys and hides bpffs), then forks a child that
becomes UID and opens N connections to events.sock and holds them 8 s. Meanwhile it samples the
map every ~10 ms (staleness = now - probe_time_ns) and a root subscriber connects 1 s into the
flood. Prints the flood's result, the subscriber's wait, the worst staleness and the daemon's
status lines. Everything it made is removed at the end.
"""
import json, os, socket, struct, subprocess, sys, time

exe, uid, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tag = f"dm{os.getpid()}"
cns, pns = tag + "c", tag + "p"
pin = f"/sys/fs/bpf/leocc-det-measure-{os.getpid()}"
run = f"/tmp/leocc-detector-flood-{os.getpid()}"
os.makedirs(run, exist_ok=True); os.chmod(run, 0o755)
sh = lambda *a: subprocess.run(a, check=True, capture_output=True)
procs = []
try:
    for ns in (cns, pns):
        sh("ip", "netns", "add", ns); sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "link", "add", "va" + tag[2:], "netns", cns, "type", "veth", "peer", "name", "vb" + tag[2:], "netns", pns)
    sh("ip", "-n", cns, "addr", "add", "100.64.78.2/24", "dev", "va" + tag[2:])
    sh("ip", "-n", pns, "addr", "add", "100.64.78.1/24", "dev", "vb" + tag[2:])
    sh("ip", "-n", cns, "link", "set", "va" + tag[2:], "up"); sh("ip", "-n", pns, "link", "set", "vb" + tag[2:], "up")
    sh("bpftool", "map", "create", pin, "type", "array", "key", "4", "value", "40", "entries", "1", "name", "leocc_sig_m")
    d = subprocess.Popen(["prlimit", "--nofile=1024", "nsenter", f"--net=/run/netns/{cns}", exe, "probe", "--pop", "100.64.78.1",
                          "--signal-map", pin, "--run-dir", run, "--quiet", "--duration", "14"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    procs.append(d)
    sock = os.path.join(run, "events.sock")
    def probe_time():
        out = subprocess.run(["bpftool", "-j", "map", "lookup", "pinned", pin, "key", "0", "0", "0", "0"], capture_output=True, text=True).stdout
        v = bytes(int(x, 16) for x in json.loads(out)["value"])
        return struct.unpack_from("=QQQ", v)[2]
    t0 = time.monotonic_ns()
    while not os.path.exists(sock): time.sleep(0.01)
    time.sleep(2.0)
    flood_start = time.monotonic_ns()
    pid = os.fork()
    if pid == 0:
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, n + 64))
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        held, errs = [], {}
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2.0)
            try: s.connect(sock); held.append(s)
            except OSError as e: errs[e.errno] = errs.get(e.errno, 0) + 1; s.close()
        print(f"  flood as uid {uid}: {len(held)} of {n} connected, errors {errs}", flush=True)
        time.sleep(8)
        os._exit(0)
    procs.append(None)
    # A legitimate subscriber (root) joins 1 s into the flood.
    worst, samples, first_line_ms = 0, 0, None
    joined = None
    sub = None
    while time.monotonic_ns() < flood_start + 9e9:
        now = time.monotonic_ns()
        if sub is None and now > flood_start + 1e9:
            sub = True
            def subscribe():
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.settimeout(15)
                joined = time.monotonic_ns()
                try:
                    c.connect(sock); line = c.makefile().readline()
                    print(f"  legitimate subscriber (joined 1 s into the flood): first line after {(time.monotonic_ns() - joined) / 1e6:.1f} ms: {line.strip()[:70]}", flush=True)
                except OSError as e:
                    print(f"  legitimate subscriber: {e}", flush=True)
            import threading; threading.Thread(target=subscribe, daemon=True).start()
        try:
            pt = probe_time()
            now = time.monotonic_ns()
            if pt: worst = max(worst, now - pt); samples += 1
        except Exception:
            pass
        time.sleep(0.01)
    os.waitpid(pid, 0)
    print(f"  kernel map: worst staleness (sampled every ~10 ms from the flood's start for 9 s) of probe_time during the flood {worst/1e6:.0f} ms over {samples} samples")
    status = subprocess.run([exe, "probe", "status", "--run-dir", run], capture_output=True, text=True).stdout
    print("  " + "\n  ".join(l for l in status.splitlines() if "subscribers" in l or "kernel" in l))
    d.wait()
    err = d.stderr.read().decode(errors="replace").strip().splitlines()
    if err: print("  daemon stderr (first 3 of %d lines): %s" % (len(err), err[:3]))
finally:
    for p in procs:
        if p and p.poll() is None: p.kill(); p.wait()
    for ns in (cns, pns): subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if os.path.exists(pin): os.remove(pin)
    subprocess.run(["rm", "-rf", run])
