#!/usr/bin/env python3
"""Self-test of benches/ratio-check.py (run by .ci/run before the check itself):
a run equal to its baseline passes, a ratio worsened past twice its baseline fails, in both
directions, and a ratio the run did not measure (no anchor) is reported, not failed."""
import contextlib
import importlib.util
import io
import json
import tempfile
import unittest
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "ratio_check", Path(__file__).resolve().parent / "ratio-check.py"
)
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)

RUN = {
    "call_overhead_us": {"p50": 30.0},
    "socketpair_round_trip_us": {"p50": 40.0},
    "parallel_100_calls_ms": {"p50": 0.9},
    "concurrent_64_ms": {"p50": 30.0},
    "pooled_exec_ms": {"p50": 0.3},
    "cold_exec_ms": {"p50": 1.0},
    "mcp_call_added_pct": 50.0,
    "gateway_http_paced_added_ms": 0.45,
    "gateway_stdio_paced_added_ms": 0.24,
    "server_start_confined_ms": {"p50": 12.0},
    "server_start_unconfined_ms": {"p50": 8.0},
    "server_call_confined_us": {"p50": 60.0},
    "server_call_unconfined_us": {"p50": 50.0},
}
ANCHOR = {"cold_start_ms_p50": 0.4}


def baseline_of(run, anchor):
    return {n: {"baseline": v, "goal": 1} for n, v in rc.ratios(run, anchor).items()}


class RatioCheck(unittest.TestCase):
    def setUp(self):
        self.base = baseline_of(RUN, ANCHOR)

    def test_the_ratios_of_the_fixture(self):
        v = rc.ratios(RUN, ANCHOR)
        self.assertAlmostEqual(v["call_vs_socketpair_floor"], 0.75)
        self.assertAlmostEqual(v["promise_all_100_vs_one_call"], 30.0)
        self.assertAlmostEqual(v["concurrent_64_vs_pooled"], 100.0)
        self.assertAlmostEqual(v["mcp_added_pct"], 50.0)
        self.assertAlmostEqual(v["gateway_http_paced_added_vs_pooled"], 1.5)
        self.assertAlmostEqual(v["gateway_stdio_paced_added_vs_pooled"], 0.8)
        self.assertAlmostEqual(v["server_start_confined_vs_unconfined"], 1.5)
        self.assertAlmostEqual(v["server_call_confined_vs_unconfined"], 1.2)
        self.assertAlmostEqual(v["wasm_cold_vs_cold"], 0.4)
        self.assertAlmostEqual(v["wasm_cold_vs_pooled"], 0.4 / 0.3)

    def test_a_run_equal_to_its_baseline_passes(self):
        rows, failed = rc.check(rc.ratios(RUN, ANCHOR), self.base)
        self.assertFalse(failed)
        self.assertEqual({r[4] for r in rows}, {"ok"})

    def test_each_ratio_worsened_past_twice_fails_and_just_under_passes(self):
        for name, (_, lower, _) in rc.RATIOS.items():
            for factor, fails in ((2.05, True), (1.95, False)):
                values = rc.ratios(RUN, ANCHOR)
                values[name] = values[name] * factor if lower else values[name] / factor
                rows, failed = rc.check(values, self.base)
                self.assertEqual(failed, fails, f"{name} worsened {factor}x")
                verdict = dict((r[0], r[4]) for r in rows)[name]
                self.assertEqual(verdict, "WORSE than twice the baseline" if fails else "ok")

    def test_a_better_ratio_passes_in_either_direction(self):
        for name, (_, lower, _) in rc.RATIOS.items():
            values = rc.ratios(RUN, ANCHOR)
            values[name] = values[name] / 10 if lower else values[name] * 10
            self.assertFalse(rc.check(values, self.base)[1], name)

    def test_a_worse_input_moves_its_ratio(self):
        # Twice and a bit the call's time, same floor: the call's ratio fails.
        run = json.loads(json.dumps(RUN))
        run["call_overhead_us"]["p50"] = 30.0 * 2.1
        run["parallel_100_calls_ms"]["p50"] = 0.9 * 2.1  # keeps promise_all's ratio equal
        rows, failed = rc.check(rc.ratios(run, ANCHOR), self.base)
        self.assertTrue(failed)
        bad = [r[0] for r in rows if r[4] != "ok"]
        self.assertEqual(bad, ["call_vs_socketpair_floor"])

    def test_without_the_anchor_its_ratios_are_not_measured_and_do_not_fail(self):
        rows, failed = rc.check(rc.ratios(RUN, None), self.base)
        self.assertFalse(failed)
        verdicts = dict((r[0], r[4]) for r in rows)
        self.assertEqual(verdicts["wasm_cold_vs_cold"], "not measured")
        self.assertEqual(verdicts["wasm_cold_vs_pooled"], "not measured")

    def test_a_baseline_missing_a_ratio_is_an_error(self):
        del self.base["mcp_added_pct"]
        with self.assertRaises(ValueError):
            rc.check(rc.ratios(RUN, ANCHOR), self.base)

    def test_main_exit_codes_and_write_baseline(self):
        with tempfile.TemporaryDirectory() as d:
            run, base, anchor = Path(d, "run.json"), Path(d, "base.json"), Path(d, "a.json")
            run.write_text(json.dumps(RUN))
            anchor.write_text("npm noise\n" + json.dumps(ANCHOR) + "\n")
            base.write_text(json.dumps({n: {"baseline": 1.0, "goal": 2} for n in rc.RATIOS}))
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(
                    rc.main([str(run), "--baseline", str(base), "--anchor", str(anchor), "--write-baseline"]), 0
                )
                written = json.loads(base.read_text())
                self.assertEqual(written["concurrent_64_vs_pooled"], {"baseline": 100.0, "goal": 2})
                self.assertEqual(rc.main([str(run), "--baseline", str(base), "--anchor", str(anchor)]), 0)
                worse = dict(RUN, mcp_call_added_pct=101.0)
                run.write_text(json.dumps(worse))
                self.assertEqual(rc.main([str(run), "--baseline", str(base), "--anchor", str(anchor)]), 1)
                self.assertEqual(rc.main([str(Path(d, "missing.json")), "--baseline", str(base)]), 2)


if __name__ == "__main__":
    unittest.main()
