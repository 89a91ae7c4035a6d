import re
from collections import Counter

# Extract levels, times and request ids from log lines a tool returns.
log = await mcp.fixture.echo(message="\n".join([
    "2026-03-01 10:00:01 INFO  req=ab12 GET /api/users 200 12ms",
    "2026-03-01 10:00:02 WARN  req=cd34 GET /api/orders 429 3ms",
    "2026-03-01 10:00:05 ERROR req=ef56 POST /api/orders 500 250ms",
    "2026-03-01 10:01:00 INFO  req=gh78 GET /api/users 200 8ms",
    "malformed line",
    "2026-03-01 10:02:30 ERROR req=ij90 GET /api/items 503 1200ms",
]))
pattern = re.compile(r"^(\S+) (\S+) (\w+)\s+req=(\w+) (\w+) (\S+) (\d{3}) (\d+)ms$")
entries, skipped = [], 0
for line in log.splitlines():
    m = pattern.match(line)
    if not m:
        skipped += 1
        continue
    day, time, level, req, method, path, status, ms = m.groups()
    entries.append({"time": time, "level": level, "req": req, "path": path,
                    "status": int(status), "ms": int(ms)})
levels = Counter(e["level"] for e in entries)
slow = [e["req"] for e in entries if e["ms"] > 100]
errors = [f"{e['time']} {e['path']} -> {e['status']}" for e in entries if e["status"] >= 500]
for line in errors:
    print(line)
{"levels": dict(sorted(levels.items())), "slow": slow, "errors": errors, "skipped": skipped,
 "p_max_ms": max(e["ms"] for e in entries)}
