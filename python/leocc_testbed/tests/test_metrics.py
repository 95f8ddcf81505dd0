"""The testbed's Prometheus metrics: served over HTTP, valid for Debian's promtool, right values."""

import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from leocc_testbed import jobs
from leocc_testbed.metrics import orchestrator_metrics, render, serve
from leocc_testbed.store import Store

JOB = 'name = "{n}"\ndish = "{d}"\n[schedule]\nkind = "once"\n[experiment]\nkind = "sim"\ntrace = "t"\ncc = "leocc"\n'


def promtool_check(text: str) -> None:
    if shutil.which("promtool") is None:
        pytest.skip("no promtool (scripts/setup.sh --all installs Debian's prometheus)")
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr


def test_the_orchestrators_metrics(tmp_path):
    st = Store(tmp_path / "s.db")
    now = time.time()
    a = st.add_job(jobs.parse(JOB.format(n="a", d="dish-a")), now - 30)
    st.add_job(jobs.parse(JOB.format(n="b", d="dish-a")), now + 600)
    st.add_job(jobs.parse(JOB.format(n="c", d="dish-b")), now - 5)
    run = st.runs("job_id = ?", (a,))[0]
    st.set_run(run.id, "running")
    srv = serve("127.0.0.1:0", lambda: orchestrator_metrics(st.path))
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    promtool_check(text)
    assert 'leocc_testbed_jobs{state="active"} 3.0' in text
    assert 'leocc_testbed_open_runs{dish="dish-a",state="queued"} 1.0' in text and 'leocc_testbed_open_runs{dish="dish-a",state="running"} 1.0' in text
    oldest = float(next(l for l in text.splitlines() if l.startswith("leocc_testbed_oldest_due_seconds")).split()[1])
    assert 4 <= oldest < 60, "c has waited about 5 s; a runs, b is not due"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "/", timeout=10)
    assert e.value.code == 404
    srv.shutdown()


def test_labels_are_escaped_and_nan_is_spelled_out():
    text = render([("x_info", "gauge", "A label with quotes.", [({"v": 'a"b\\c'}, 1)]), ("x_ratio", "gauge", "Nothing yet.", [({}, float("nan"))])])
    assert 'x_info{v="a\\"b\\\\c"} 1.0' in text and "x_ratio NaN" in text
    promtool_check(text)


def test_a_bad_address_is_a_clear_error():
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        serve("9465", lambda: [])
