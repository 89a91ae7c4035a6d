import re
from datetime import timedelta

# Parse human durations ("1h30m", "45s", "2d4h") and add them up.
text = await mcp.fixture.echo(message="build:1h30m, test:45m20s, deploy:2d4h, verify:90s, bad:soon")
units = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
tasks = {}
for item in text.split(", "):
    name, spec = item.split(":")
    parts = re.findall(r"(\d+)([dhms])", spec)
    if not parts:
        print(f"cannot parse {name!r}: {spec!r}")
        continue
    kwargs = {}
    for num, unit in parts:
        kwargs[units[unit]] = int(num)
    tasks[name] = timedelta(**kwargs)
total = timedelta()
for d in tasks.values():
    total += d

def fmt(td):
    h, rem = divmod(int(td.total_seconds()), 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}"

for name, d in sorted(tasks.items(), key=lambda kv: kv[1]):
    print(f"{name:<7} {fmt(d):>10}")
{"tasks": {k: fmt(v) for k, v in tasks.items()}, "total": fmt(total), "total_str": str(total),
 "longest": max(tasks, key=lambda k: tasks[k]), "seconds": total.total_seconds()}
