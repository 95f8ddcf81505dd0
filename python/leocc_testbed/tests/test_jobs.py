"""Job files, cron expressions and the store's follow-up rules (no cluster needed)."""

import calendar
import time
from datetime import datetime, timezone

import pytest

from leocc_testbed import jobs
from leocc_testbed.cron import Cron, CronError
from leocc_testbed.orchestrator import follow_up
from leocc_testbed.store import Store

GOOD = """
name = "evening"
dish = "dish-a"
overhead = false
retries = 1
[schedule]
kind = "cron"
cron = "*/30 18-22 * * *"
runs = 4
[experiment]
kind = "sim"
trace = "traces/starlink-down-60s.trace"
cc = "leocc"
duration_s = 20
"""


def test_a_good_job_parses_with_defaults_filled_in():
    j = jobs.parse(GOOD, "j.toml")
    assert (j.name, j.dish, j.overhead, j.retries) == ("evening", "dish-a", False, 1)
    assert j.schedule.kind == "cron" and j.schedule.runs == 4
    assert j.experiment.args == {"trace": "traces/starlink-down-60s.trace", "cc": "leocc", "duration_s": 20.0, "queue": "150ms", "loss": 0.0, "seed": 1}
    assert jobs.Job.from_json(j.to_json()) == j


@pytest.mark.parametrize(
    "edit, message",
    [
        (("duration_s = 20", "duration_s = 20\nshell = 'rm -rf /'"), "unknown key(s) shell"),
        (('kind = "sim"', 'kind = "bash"'), "experiment.kind: expected one of sim, emu"),
        (("duration_s = 20", "duration_s = -3"), "experiment.duration_s: -3 is outside 1..3600"),
        (('cc = "leocc"', 'cc = "leocc; reboot"'), "experiment.cc: 'leocc; reboot' is not a control's name"),
        (('cron = "*/30 18-22 * * *"', 'cron = "61 * * * *"'), "schedule.cron: minute '61': values must lie in 0-59"),
        (('dish = "dish-a"', 'dish = "../etc"'), "dish: '../etc' is not a terminal's name"),
        (('trace = "traces/starlink-down-60s.trace"\n', ""), "experiment.trace: required for kind sim"),
        (("runs = 4", "runs = 0"), "schedule.runs: 0 is outside 1..1000000"),
    ],
)
def test_bad_jobs_are_refused_naming_the_file_and_key(edit, message):
    with pytest.raises(jobs.SpecError) as e:
        jobs.parse(GOOD.replace(*edit), "j.toml")
    assert str(e.value).startswith("j.toml: ") and message in str(e.value), str(e.value)


def test_a_toml_syntax_error_names_the_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\ndish = \n')
    with pytest.raises(jobs.SpecError) as e:
        jobs.load(p)
    assert str(p) in str(e.value) and "line 2" in str(e.value)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(jobs.SpecError, match="cannot read"):
        jobs.load(tmp_path / "nope.toml")


def ts(*a):
    return float(calendar.timegm(datetime(*a, tzinfo=timezone.utc).timetuple()))


def test_cron_next_instants():
    assert Cron.parse("*/30 18-22 * * *").next_after(ts(2026, 11, 27, 17, 0, 0)) == ts(2026, 11, 27, 18, 0, 0)
    assert Cron.parse("*/30 18-22 * * *").next_after(ts(2026, 11, 27, 18, 0, 0)) == ts(2026, 11, 27, 18, 30, 0)
    assert Cron.parse("*/30 18-22 * * *").next_after(ts(2026, 11, 27, 22, 30, 0)) == ts(2026, 11, 28, 18, 0, 0)
    # Six fields: seconds first. Sunday is 0 and 7; 2026-11-29 is a Sunday.
    assert Cron.parse("*/10 * * * * *").next_after(ts(2026, 11, 27, 1, 2, 3)) == ts(2026, 11, 27, 1, 2, 10)
    assert Cron.parse("0 12 * * 7").next_after(ts(2026, 11, 27, 0, 0, 0)) == ts(2026, 11, 29, 12, 0, 0)
    assert Cron.parse("0 12 * * 0").next_after(ts(2026, 11, 27, 0, 0, 0)) == ts(2026, 11, 29, 12, 0, 0)
    # Both day fields restricted: either matches (the 1st, or any Friday).
    assert Cron.parse("0 0 1 * 5").next_after(ts(2026, 11, 27, 1, 0, 0)) == ts(2026, 12, 1, 0, 0, 0)
    with pytest.raises(CronError, match="matches no time"):
        Cron.parse("0 0 31 2 *").next_after(ts(2026, 1, 1, 0, 0, 0))
    with pytest.raises(CronError, match="expected 5 fields"):
        Cron.parse("* * *")


def once(**kw):
    return jobs.parse(
        'name = "o"\ndish = "d"\nretries = 1\nretry_delay_s = 5\nreschedule_after_s = 1800\n[schedule]\nkind = "once"\n'
        '[experiment]\nkind = "sim"\ntrace = "t"\ncc = "leocc"\n'
    )


def test_follow_up_rules(tmp_path):
    st = Store(tmp_path / "s.db")
    j = once()
    jid = st.add_job(j, 0.0)
    run = st.runs("job_id = ?", (jid,))[0]
    assert follow_up(j, run, "done", st, 100.0) == (None, "done")
    assert follow_up(j, run, "aborted", st, 100.0) == (("again", 1900.0), None)
    assert follow_up(j, run, "failed", st, 100.0) == (("retry", 105.0), None)
    st.finish(run, "failed", follow_up=("retry", 105.0), job_state=None)
    second = st.runs("job_id = ? AND state = 'queued'", (jid,))[0]
    assert (second.slot, second.attempt) == (1, 2)
    assert follow_up(j, second, "failed", st, 200.0) == (None, "failed"), "one retry allowed"
    cron = jobs.parse(GOOD)
    cid = st.add_job(cron, ts(2026, 11, 27, 18, 0, 0))
    crun = st.runs("job_id = ?", (cid,))[0]
    # An aborted cron run is not rescheduled: the next instant comes.
    assert follow_up(cron, crun, "aborted", st, ts(2026, 11, 27, 18, 0, 5)) == (("next", ts(2026, 11, 27, 18, 30, 0)), None)


def test_restart_requeues_what_was_running(tmp_path):
    st = Store(tmp_path / "s.db")
    jid = st.add_job(once(), time.time())
    run = st.runs()[0]
    st.set_run(run.id, "running")
    st.close()
    st = Store(tmp_path / "s.db")
    assert st.recover() == 1
    states = [(r.state, r.attempt) for r in st.runs("job_id = ?", (jid,))]
    assert states == [("interrupted", 1), ("queued", 1)], "an interruption is not the job's failure"


def test_an_iperf3_job_names_its_server_and_takes_only_its_keys():
    text = 'name = "i"\ndish = "d"\n[schedule]\nkind = "once"\n[experiment]\nkind = "iperf3"\nserver = "cloud-1"\ncc = "leocc"\n'
    j = jobs.parse(text, "i.toml")
    assert j.experiment.args == {"server": "cloud-1", "cc": "leocc", "duration_s": 10.0, "reverse": True, "port": 5201, "bitrate_mbps": 0.0}
    with pytest.raises(jobs.SpecError, match="unknown key.*trace"):
        jobs.parse(text + 'trace = "t"\n', "i.toml")
    with pytest.raises(jobs.SpecError, match="experiment.server: required"):
        jobs.parse(text.replace('server = "cloud-1"\n', ""), "i.toml")


def test_each_server_kind_checks_its_own_keys():
    head = 'name = "k"\ndish = "d"\n[schedule]\nkind = "once"\n[experiment]\nserver = "cloud-1"\n'
    q = jobs.parse(head + 'kind = "quic"\ncc = "bbr"\n', "q.toml")
    assert q.experiment.args["port"] == 4433 and q.experiment.args["reverse"] is True
    with pytest.raises(jobs.SpecError, match="experiment.cc: 'reno' is not one of leocc, cubic, newreno, bbr"):
        jobs.parse(head + 'kind = "quic"\ncc = "reno"\n', "q.toml")
    lt = jobs.parse(head + 'kind = "leotp"\nduration_s = 5\n', "l.toml")
    assert lt.experiment.args == {"server": "cloud-1", "duration_s": 5.0, "port": 5301}
    with pytest.raises(jobs.SpecError, match=r"unknown key\(s\) cc"):
        jobs.parse(head + 'kind = "leotp"\ncc = "bbr"\n', "l.toml")
    v = jobs.parse(head + 'kind = "video"\ncc = "bbr"\nchunks = 30\n', "v.toml")
    assert v.experiment.args["predictor"] == "harmonic" and v.experiment.args["chunks"] == 30
    with pytest.raises(jobs.SpecError, match="experiment.predictor: 'oracle' is not harmonic or leo"):
        jobs.parse(head + 'kind = "video"\ncc = "bbr"\npredictor = "oracle"\n', "v.toml")
