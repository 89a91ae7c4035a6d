#!/usr/bin/env python3
"""Runs test262's intl402 tests through `mcp-sandbox run` (one execution each), outside CI.

Usage: scripts/test262-intl.py TEST262_DIR [--filter SUBSTRING] [--jobs N] [--failures FILE]

Each test is the harness (assert.js, sta.js, the files its front matter `includes`) followed by
the test, run as the script of one execution with a 10 s timeout. Temporal tests and module
tests are skipped (QuickJS has neither). Prints pass/fail counts per directory, and fails (exit
1) if any execution ended by a signal or seccomp: a crash must never happen.
"""
import argparse, concurrent.futures, json, os, pathlib, re, subprocess, sys, collections

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(os.environ.get("MCP_SANDBOX_BIN", ROOT / "target" / "release" / "mcp-sandbox"))
ASYNC_GLUE = """
let __settle; const __done = new Promise((r) => { __settle = r; });
function $DONE(e) { __settle(e === undefined ? 'PASS' : 'FAIL ' + (e && e.message || e)); }
"""
ASYNC_TAIL = "\nconst __r = await __done; if (__r !== 'PASS') throw new Error(__r);\n"


def meta(text):
    m = re.search(r"/\*---(.*?)---\*/", text, re.S)
    body = m.group(1) if m else ""
    inc = re.search(r"includes:\s*\[(.*?)\]", body, re.S)
    includes = [s.strip() for s in inc.group(1).split(",") if s.strip()] if inc else []
    if not inc:
        block = re.search(r"includes:\s*\n((?:\s+-\s*\S+\n)+)", body)
        if block:
            includes = re.findall(r"-\s*(\S+)", block.group(1))
    flags = re.search(r"flags:\s*\[(.*?)\]", body)
    flags = [s.strip() for s in flags.group(1).split(",")] if flags else []
    neg = re.search(r"negative:\s*\n\s*phase:\s*(\w+)\s*\n\s*type:\s*(\w+)", body)
    return includes, flags, neg.groups() if neg else None


def run_one(test262, path):
    text = path.read_text()
    includes, flags, negative = meta(text)
    if "module" in flags:
        return path, "skip", ""
    harness = "".join((test262 / "harness" / f).read_text() + "\n" for f in ["assert.js", "sta.js", *includes])
    strict = "'use strict';\n" if "onlyStrict" in flags else ""
    script = strict + harness + (ASYNC_GLUE if "async" in flags else "") + text
    if "async" in flags:
        script += ASYNC_TAIL
    try:
        p = subprocess.run([str(BIN), "run", "-", "--json", "--timeout-ms", "10000"], input=script,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return path, "fail", "host timeout"
    try:
        out = json.loads(p.stdout)
    except ValueError:
        return path, "fail", (p.stderr or p.stdout)[-300:]
    err = out.get("error") or {}
    if err.get("signal") or err.get("code") == "RUNNER_CRASHED":
        return path, "crash", json.dumps(err)[:300]
    if negative:
        ok = not out.get("success") and negative[1] in (err.get("message") or "")
        return path, "pass" if ok else "fail", "" if ok else "expected " + negative[1]
    return path, ("pass" if out.get("success") else "fail"), (err.get("message") or "")[:300]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test262", type=pathlib.Path)
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--failures")
    a = ap.parse_args()
    tests = sorted(p for p in (a.test262 / "test" / "intl402").rglob("*.js")
                   if "/Temporal/" not in str(p) and not p.name.endswith("_FIXTURE.js") and a.filter in str(p))
    results = collections.defaultdict(collections.Counter)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for path, status, why in ex.map(lambda p: run_one(a.test262, p), tests):
            parts = path.relative_to(a.test262 / "test" / "intl402").parts
            group = parts[0] if len(parts) > 1 else "(top level)"
            results[group][status] += 1
            if status in ("fail", "crash"):
                failures.append(f"{status} {path.relative_to(a.test262)}: {why}")
    total = collections.Counter()
    for group in sorted(results):
        c = results[group]
        total.update(c)
        print(f"{group:28} pass {c['pass']:4}  fail {c['fail']:4}  crash {c['crash']}  skip {c['skip']}")
    run = total["pass"] + total["fail"] + total["crash"]
    print(f"{'total':28} pass {total['pass']:4}  fail {total['fail']:4}  crash {total['crash']}  skip {total['skip']}"
          f"  ({100.0 * total['pass'] / max(run, 1):.1f} % of {run} run)")
    if a.failures:
        pathlib.Path(a.failures).write_text("\n".join(failures) + "\n")
    sys.exit(1 if total["crash"] else 0)


if __name__ == "__main__":
    main()
