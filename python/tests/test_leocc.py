"""The Python package against the real crates: traces, the simulator, eval results."""

import json
import os
import subprocess
import tempfile
import threading
import unittest

import pandas as pd

import leocc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUNDLED = os.path.join(REPO, "traces", "starlink-down-60s.trace")


class TraceTest(unittest.TestCase):
    def test_generate_save_load_round_trip(self):
        t = leocc.Trace.generate("starlink-up", duration_s=20, seed=3)
        self.assertAlmostEqual(t.duration_s, 20.0, places=1)
        self.assertTrue(t.reconfigurations_s, "generated traces carry ground truth")
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "up.trace")
            t.save(p)
            back = leocc.Trace.load(p)
            self.assertEqual(back.reconfigurations_s, t.reconfigurations_s)
            self.assertTrue(back.series().equals(t.series()))

    def test_stats_and_series_agree(self):
        t = leocc.Trace.load(BUNDLED)
        s = t.stats()
        df = t.series()
        self.assertEqual(list(df.columns), ["t_s", "capacity_mbps", "owd_ms"])
        self.assertEqual(len(df), 600)
        # The mean of the 100 ms bins is the stat's mean capacity.
        self.assertAlmostEqual(df["capacity_mbps"].mean(), s["capacity_mbps"]["mean"], delta=0.5)
        self.assertGreater(df["owd_ms"].min(), 0)

    def test_bad_input_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.txt")
            with open(bad, "w") as f:
                f.write("1\n2\nfast\n")
            with self.assertRaisesRegex(ValueError, r"bad\.txt:3"):
                leocc.Trace.load(bad)
        with self.assertRaises(OSError):
            leocc.Trace.load("/nonexistent/leocc.trace")
        with self.assertRaisesRegex(ValueError, "starlink-down"):
            leocc.Trace.generate("leo")


class SimulateTest(unittest.TestCase):
    def test_matches_the_cli(self):
        run = leocc.simulate(BUNDLED, "leocc", duration_s=10, seed=2)
        cli = subprocess.run(
            [os.path.join(REPO, "target", "release", "leocc"), "sim", "--trace", BUNDLED, "--cc", "leocc",
             "--duration", "10", "--seed", "2", "--json", "--quiet"],
            capture_output=True, text=True)
        if cli.returncode != 0:
            self.skipTest("target/release/leocc is not built: " + cli.stderr[-200:])
        want = json.loads(cli.stdout.strip().splitlines()[-1])
        want.pop("timeseries", None)
        self.assertEqual(run.summary, want)

    def test_timeseries_and_flows(self):
        run = leocc.simulate(BUNDLED, flows="cubic@0-10,leocc@2-10", duration_s=10)
        self.assertEqual(list(run.flows["cc"]), ["cubic", "leocc"])
        ts = run.timeseries
        self.assertEqual(list(ts.columns), ["t_s", "flow", "flow_cc", "throughput_mbps", "rtt_ms", "cwnd", "pacing_mbps", "inflight"])
        self.assertEqual(set(ts["flow_cc"]), {"cubic", "leocc"})
        self.assertGreater(ts[ts.flow == 1]["throughput_mbps"].mean(), 10)

    def test_params_and_errors(self):
        self.assertIn("leocc", leocc.controls())
        params = leocc.list_params("leocc")
        self.assertIn("delta_rtt_us", list(params["name"]))
        bbr3 = leocc.list_params("bbr3").set_index("name")
        self.assertLess(bbr3.loc["loss_thresh", "min"], bbr3.loc["loss_thresh", "default"])
        with self.assertRaisesRegex(ValueError, "unknown congestion control"):
            leocc.simulate(BUNDLED, "warp", duration_s=1)
        with self.assertRaisesRegex(ValueError, "no_such"):
            leocc.simulate(BUNDLED, "leocc", duration_s=1, params=["leocc.no_such=1"])

    def test_threads_run_in_parallel_and_agree(self):
        out = {}

        def one(seed):
            out[seed] = leocc.simulate(BUNDLED, "bbr", duration_s=5, seed=seed).summary

        threads = [threading.Thread(target=one, args=(s,)) for s in (1, 2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(out[1], leocc.simulate(BUNDLED, "bbr", duration_s=5, seed=1).summary)


class ResultsTest(unittest.TestCase):
    def test_read_results_and_timeseries_skip_a_torn_line(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "ts"))
            rows = []
            for i, cc in enumerate(["cubic", "leocc"]):
                with open(os.path.join(d, "ts", f"r{i}.csv"), "w") as f:
                    f.write("cc,seed,t_s,flow\n%s,1,0.1,0\n%s,1,0.2,0\n" % (cc, cc))
                rows.append({"key": f"k{i}", "cc": cc, "throughput_mbps": 10.0 * (i + 1), "timeseries": f"ts/r{i}.csv"})
            # A run that wrote no time series (a testbed video session) has no `timeseries`.
            rows.append({"key": "k-none", "cc": "bbr", "throughput_mbps": 5.0})
            with open(os.path.join(d, "results.jsonl"), "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows) + '{"key": "k2", "cc": "bb')
            res = leocc.read_results(d)
            self.assertEqual(list(res["cc"]), ["cubic", "leocc", "bbr"])
            ts = leocc.read_timeseries(d)
            self.assertEqual(len(ts), 4)
            self.assertEqual(list(ts[ts.key == "k1"]["cc"]), ["leocc", "leocc"])
            one = leocc.read_timeseries(d, runs=res[res.cc == "leocc"])
            self.assertEqual(set(one["key"]), {"k1"})

    def test_a_row_of_a_newer_schema_is_refused_naming_the_line(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "results.jsonl"), "w") as f:
                f.write(json.dumps({"key": "a", "schema": leocc.RESULTS_SCHEMA}) + "\n")
                f.write(json.dumps({"key": "b", "schema": leocc.RESULTS_SCHEMA + 1}) + "\n")
            with self.assertRaisesRegex(ValueError, r"results.jsonl:2: written by a newer leocc"):
                leocc.read_results(d)

    def test_folded_parts_and_unfolded_csvs_read_as_one_frame(self):
        exe = os.path.join(REPO, "target", "release", "leocc")
        if not os.path.exists(exe):
            self.skipTest("target/release/leocc is not built")
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([exe, "eval", "--trace", BUNDLED, "--cc", "leocc,cubic", "--runs", "1", "--queue", "500",
                            "--duration", "5", "-o", d], check=True, capture_output=True)
            self.assertEqual(sorted(os.listdir(os.path.join(d, "ts"))), ["part-00000.parquet"])
            res = leocc.read_results(d)
            self.assertEqual(set(res["schema"]), {leocc.RESULTS_SCHEMA})
            ts = leocc.read_timeseries(d)
            self.assertEqual(set(ts["key"]), set(res["key"]))
            self.assertEqual(str(ts["flow"].dtype), "int64")
            self.assertEqual(str(ts["throughput_mbps"].dtype), "float64")
            self.assertEqual(len(ts[ts.key == res["key"][0]]), 50)
            # A run recorded after the fold (its CSV not folded yet) joins the frame.
            with open(os.path.join(d, "ts", "late.csv"), "w") as f:
                f.write("cc,seed,t_s,flow,throughput_mbps\nbbr,1,0.1,0,12.5\n")
            with open(os.path.join(d, "results.jsonl"), "a") as f:
                f.write(json.dumps({"key": "late", "cc": "bbr", "timeseries": "ts/late.csv"}) + "\n")
            both = leocc.read_timeseries(d)
            self.assertEqual(len(both), len(ts) + 1)
            late = leocc.read_timeseries(d, runs=leocc.read_results(d).query("key == 'late'"))
            self.assertEqual(list(late["throughput_mbps"]), [12.5])
            # A run made again (`bench fidelity --rerun`) lands in a newer part: its new series
            # replaces the folded one, and the other runs' stay.
            again = ts[ts.key == res["key"][0]].head(3).assign(throughput_mbps=99.0)
            again.to_parquet(os.path.join(d, "ts", "part-00001.parquet"), index=False)
            ts2 = leocc.read_timeseries(d)
            self.assertEqual(list(ts2[ts2.key == res["key"][0]]["throughput_mbps"]), [99.0] * 3)
            self.assertEqual(len(ts2[ts2.key == res["key"][1]]), 50)


if __name__ == "__main__":
    unittest.main()
