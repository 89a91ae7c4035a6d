#!/usr/bin/env python3
"""The benchmark's ratios beside their committed baseline (issue 61).

usage: benches/ratio-check.py [--baseline FILE] [--anchor FILE] [--write-baseline] [SANDBOX_JSON]

SANDBOX_JSON is what the benchmark wrote (default target/bench/sandbox.json); --anchor is the
QuickJS-in-WebAssembly anchor's JSON line (`../shared/anchors/quickjs-wasm/run > FILE`), for the
two ratios against its cold start. Every ratio is taken within one run, so the machine's speed at
the time cancels out. Prints each ratio beside its baseline and the issue's goal, and exits 1
when one has worsened past twice its baseline (a lower-is-better ratio above 2 x baseline, a
higher-is-better one below baseline / 2). A ratio whose inputs the run lacks (no anchor given)
is printed as not measured and does not fail.

--write-baseline writes the ratios of this run into the baseline file (keeping each entry's
goal): commit it with a message that says why the baseline moved (docs/performance.md).
"""
import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = ROOT / "benches" / "ratio-baseline.json"
DEFAULT_RUN = ROOT / "target" / "bench" / "sandbox.json"


def p50(run, key):
    v = run.get(key)
    if isinstance(v, dict):
        v = v.get("p50")
    return v if isinstance(v, (int, float)) else None


def div(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


# name -> (what it is, lower_is_better, how it is computed from the run and the anchor)
RATIOS = {
    "call_vs_socketpair_floor": (
        "one tool call / the socketpair round trip (call_overhead_us / socketpair_round_trip_us)",
        True,
        lambda r, a: div(p50(r, "call_overhead_us"), p50(r, "socketpair_round_trip_us")),
    ),
    "promise_all_100_vs_one_call": (
        "100 calls in one Promise.all / one call (parallel_100_calls_ms / call_overhead_us)",
        True,
        lambda r, a: div(
            None if p50(r, "parallel_100_calls_ms") is None else p50(r, "parallel_100_calls_ms") * 1000,
            p50(r, "call_overhead_us"),
        ),
    ),
    "concurrent_64_vs_pooled": (
        "64 executions at once / one pooled execution (concurrent_64_ms / pooled_exec_ms)",
        True,
        lambda r, a: div(p50(r, "concurrent_64_ms"), p50(r, "pooled_exec_ms")),
    ),
    "mcp_added_pct": (
        "a real stdio MCP call through the sandbox, % added to the direct call (mcp_call_added_pct)",
        True,
        lambda r, a: r.get("mcp_call_added_pct") if isinstance(r.get("mcp_call_added_pct"), (int, float)) else None,
    ),
    "gateway_http_paced_added_vs_pooled": (
        "what serve --http adds, paced / one pooled execution (gateway_http_paced_added_ms / pooled_exec_ms)",
        True,
        lambda r, a: div(r.get("gateway_http_paced_added_ms"), p50(r, "pooled_exec_ms")),
    ),
    "gateway_stdio_paced_added_vs_pooled": (
        "what serve over stdio adds, paced / one pooled execution (gateway_stdio_paced_added_ms / pooled_exec_ms)",
        True,
        lambda r, a: div(r.get("gateway_stdio_paced_added_ms"), p50(r, "pooled_exec_ms")),
    ),
    "server_start_confined_vs_unconfined": (
        "a stdio MCP server's start (spawn -> tools listed) confined / unconfined (server_start_confined_ms / server_start_unconfined_ms)",
        True,
        lambda r, a: div(p50(r, "server_start_confined_ms"), p50(r, "server_start_unconfined_ms")),
    ),
    "server_call_confined_vs_unconfined": (
        "one call through a confined stdio MCP server / through the same server unconfined (server_call_confined_us / server_call_unconfined_us)",
        True,
        lambda r, a: div(p50(r, "server_call_confined_us"), p50(r, "server_call_unconfined_us")),
    ),
    "wasm_cold_vs_cold": (
        "the QuickJS-wasm anchor's cold start / our cold execution (higher is better)",
        False,
        lambda r, a: div(p50(a, "cold_start_ms_p50") if a else None, p50(r, "cold_exec_ms")),
    ),
    "wasm_cold_vs_pooled": (
        "the QuickJS-wasm anchor's cold start / our pooled execution (higher is better)",
        False,
        lambda r, a: div(p50(a, "cold_start_ms_p50") if a else None, p50(r, "pooled_exec_ms")),
    ),
}


def ratios(run, anchor):
    return {name: f(run, anchor) for name, (_, _, f) in RATIOS.items()}


def check(values, baseline):
    """Rows (name, value, baseline, goal, verdict) and whether any ratio worsened past 2x."""
    rows, failed = [], False
    for name, (_, lower, _) in RATIOS.items():
        entry = baseline.get(name)
        if entry is None:
            raise ValueError(f"the baseline has no entry for {name}: add one (--write-baseline)")
        base, goal, v = entry["baseline"], entry.get("goal"), values.get(name)
        if not isinstance(base, (int, float)) or base <= 0 or math.isnan(base):
            raise ValueError(f"the baseline of {name} must be a number > 0, not {base!r}")
        if v is None:
            verdict = "not measured"
        elif (lower and v > 2 * base) or (not lower and v < base / 2):
            verdict = "WORSE than twice the baseline"
            failed = True
        else:
            verdict = "ok"
        rows.append((name, v, base, goal, verdict))
    return rows, failed


def load_anchor(path):
    lines = [l for l in Path(path).read_text().splitlines() if l.strip().startswith("{")]
    if not lines:
        raise ValueError(f"{path} holds no JSON line (the anchor's output)")
    return json.loads(lines[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", nargs="?", default=str(DEFAULT_RUN))
    ap.add_argument("--baseline", default=str(DEFAULT_BASELINE))
    ap.add_argument("--anchor")
    ap.add_argument("--write-baseline", action="store_true")
    args = ap.parse_args(argv)
    try:
        run = json.loads(Path(args.run).read_text())
        anchor = load_anchor(args.anchor) if args.anchor else None
        baseline = json.loads(Path(args.baseline).read_text())
    except (OSError, ValueError) as e:
        print(f"ratio-check: {e}", file=sys.stderr)
        return 2
    values = ratios(run, anchor)
    if args.write_baseline:
        for name, v in values.items():
            if v is not None:
                baseline.setdefault(name, {})["baseline"] = round(v, 3)
        Path(args.baseline).write_text(json.dumps(baseline, indent=2) + "\n")
        print(f"ratio-check: wrote {args.baseline}; commit it saying why the baseline moved")
        return 0
    try:
        rows, failed = check(values, baseline)
    except ValueError as e:
        print(f"ratio-check: {e}", file=sys.stderr)
        return 2
    fmt = lambda x: "-" if x is None else f"{x:.3f}"
    print(f"{'ratio':38}{'this run':>10}{'baseline':>10}{'limit':>10}{'goal':>10}  verdict")
    for name, v, base, goal, verdict in rows:
        lower = RATIOS[name][1]
        limit = f"{'<=' if lower else '>='}{fmt(2 * base if lower else base / 2)}"
        g = "-" if goal is None else f"{'<=' if lower else '>='}{goal}"
        print(f"{name:38}{fmt(v):>10}{fmt(base):>10}{limit:>10}{g:>10}  {verdict}")
    if failed:
        print(
            "ratio-check: a ratio worsened past twice its baseline (benches/ratio-baseline.json); "
            "find what the hot path now pays (docs/performance.md), or, if the cost is meant, "
            "update the baseline in a commit that says why",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
