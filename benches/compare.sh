#!/usr/bin/env bash
# Runs this project's benchmark and both anchors of ../shared/anchors in one invocation, on the
# same machine, and prints the figures side by side with ratios (anchor / ours: > 1 means we are
# faster). Usage: benches/compare.sh [path to shared/anchors]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
anchors=${1:-../shared/anchors}
[ -d "$anchors" ] || { echo "anchors not found at $anchors (pass the path)" >&2; exit 2; }
out=target/bench
mkdir -p "$out"

echo "==> mcp-sandbox (cargo bench --bench sandbox)" >&2
cargo build --release --workspace --bins --quiet
cargo bench --bench sandbox --quiet > "$out/sandbox.stdout"
echo "==> anchor: Deno Worker bridge" >&2
"$anchors/deno-worker-bridge/run" > "$out/deno.json"
echo "==> anchor: QuickJS-in-WebAssembly in Node" >&2
"$anchors/quickjs-wasm/run" > "$out/qjswasm.json"

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
ours = json.load(open(f"{out}/sandbox.json"))
def last_json(path):
    lines = [l for l in open(path).read().splitlines() if l.strip().startswith("{")]
    return json.loads(lines[-1])
deno, wasm = last_json(f"{out}/deno.json"), last_json(f"{out}/qjswasm.json")
rows = [
    ("start one execution, p50 (ms)", "cold_start_ms_p50", ours["cold_exec_ms"]["p50"], ours["pooled_exec_ms"]["p50"]),
    ("start one execution, p99 (ms)", "cold_start_ms_p99", ours["cold_exec_ms"]["p99"], ours["pooled_exec_ms"]["p99"]),
    ("one tool call (µs)", "per_call_us", ours["call_overhead_us"]["p50"], None),
]
extra = [
    ("zygote fork → ready, p50 / p99 (ms)", ours["zygote_fork_ms"]["p50"], ours["zygote_fork_ms"]["p99"]),
    ("cold, zygote (default), p50 / p99 (ms)", ours["cold_exec_ms"]["p50"], ours["cold_exec_ms"]["p99"]),
    ("cold, exec'd runner, p50 / p99 (ms)", ours["exec_spawned_cold_ms"]["p50"], ours["exec_spawned_cold_ms"]["p99"]),
    ("pooled, p50 / p99 (ms)", ours["pooled_exec_ms"]["p50"], ours["pooled_exec_ms"]["p99"]),
    ("64 executions at once, p50 / p99 (ms)", ours["concurrent_64_ms"]["p50"], ours["concurrent_64_ms"]["p99"]),
    ("100 calls in one Promise.all, p50 / p99 (ms)", ours["parallel_100_calls_ms"]["p50"], ours["parallel_100_calls_ms"]["p99"]),
    ("runner PSS mid-execution, p50 / p99 (KiB)", ours["runner_pss_kib"]["p50"], ours["runner_pss_kib"]["p99"]),
]
print(f"{'':34}{'ours cold':>11}{'ours pooled':>13}{'deno worker':>13}{'qjs-wasm':>10}{'deno/ours':>11}{'wasm/ours':>11}")
for label, key, cold, pooled in rows:
    best = pooled if pooled is not None else cold
    d, w = deno.get(key), wasm.get(key)
    ratio = lambda a: f"{a / best:.1f}x" if isinstance(a, (int, float)) and best else "-"
    fmt = lambda v: f"{v:.3f}" if isinstance(v, (int, float)) else "-"
    print(f"{label:34}{fmt(cold):>11}{fmt(pooled):>13}{fmt(d):>13}{fmt(w):>10}{ratio(d):>11}{ratio(w):>11}")
print()
for label, p50, p99 in extra:
    print(f"{label:42}{p50:>10.3f}{p99:>10.3f}")
print(f"{'executions/s with 1 / 2 / 8 submitters':42}" + "".join(f"{ours['execs_per_sec'][k]:>8}" for k in ("1", "2", "8")))
print(f"{'socketpair round trip, no sandbox (µs)':42}{ours['socketpair_round_trip_us']['p50']:>10.1f}{ours['socketpair_round_trip_us']['p99']:>10.1f}")
print(f"{'real MCP call: direct / through the sandbox (µs)':42}{ours['mcp_direct_call_us']['p50']:>10.1f}{ours['mcp_call_us']['p50']:>10.1f}")
print()
print("the gateway end to end (`serve`, return 1+1, one keep-alive client; Rust client in the benchmark):")
for label, key in (("serve --http, p50 / p99 (ms)", "gateway_http_exec_ms"), ("serve over stdio, p50 / p99 (ms)", "gateway_stdio_exec_ms")):
    print(f"{label:42}{ours[key]['p50']:>10.3f}{ours[key]['p99']:>10.3f}")
print(f"{'added to the pooled execution: HTTP / stdio (ms)':42}{ours['gateway_http_added_ms']:>10.3f}{ours['gateway_stdio_added_ms']:>10.3f}")
# Paced: each request 3 ms after the previous answer (the pool refilled, as between an agent's
# turns): the like-for-like comparison with the pooled execution.
for label, key in (("paced, serve --http, p50 / p99 (ms)", "gateway_http_paced_exec_ms"), ("paced, serve over stdio, p50 / p99 (ms)", "gateway_stdio_paced_exec_ms")):
    if key in ours:
        print(f"{label:42}{ours[key]['p50']:>10.3f}{ours[key]['p99']:>10.3f}")
if "gateway_http_paced_added_ms" in ours:
    print(f"{'paced, added: HTTP / stdio (ms)':42}{ours['gateway_http_paced_added_ms']:>10.3f}{ours['gateway_stdio_paced_added_ms']:>10.3f}")
print(f"{'serve --http executions/s, 1 / 8 / 64 clients':42}" + "".join(f"{ours['gateway_http_execs_per_sec'][k]:>8}" for k in ("1", "8", "64")))
print(f"{'8 HTTP clients vs the library with 8 (%)':42}{ours['gateway_http_8_clients_pct']:>10.1f}")
if "redaction_mb_per_s" in ours:
    r = ours["redaction_mb_per_s"]
    print(f"{'redaction, 10 MiB / 100k matches: p50 / min (MiB/s)':42}{r['p50']:>10.1f}{r['min']:>10.1f}")
if "telemetry_added_us" in ours:
    t = ours["telemetry_exec_ms"]
    print(f"{'one call, telemetry off / on, p50 (ms)':42}{t['off']['p50']:>10.3f}{t['on']['p50']:>10.3f}")
    print(f"{'added by telemetry, p50 (µs)':42}{ours['telemetry_added_us']:>10.1f}")
print()
print("ours: lockdown on (seccomp, landlock, namespaces, uid drop, rlimits); anchors: no OS isolation.")
json.dump({"ours": ours, "deno_worker": deno, "quickjs_wasm": wasm}, open(f"{out}/compare.json", "w"), indent=2)
print(f"all figures: {out}/compare.json")
PY
echo
echo "the ratios of this run beside benches/ratio-baseline.json (issue 61):"
python3 benches/ratio-check.py --anchor "$out/qjswasm.json" "$out/sandbox.json"
