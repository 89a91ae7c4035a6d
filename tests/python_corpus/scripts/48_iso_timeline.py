from datetime import datetime, timedelta
import json

# Sort incidents by time, measure time-to-resolve, format a timeline.
incidents = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"id": "INC-3", "opened": "2026-04-02T22:15:00", "closed": "2026-04-03T01:45:00"},
    {"id": "INC-1", "opened": "2026-04-01T09:00:00", "closed": "2026-04-01T09:20:30"},
    {"id": "INC-2", "opened": "2026-04-01T17:30:00", "closed": None},
])))
as_of = datetime(2026, 4, 3, 12, 0)
rows = []
for inc in sorted(incidents, key=lambda i: datetime.fromisoformat(i["opened"])):
    opened = datetime.fromisoformat(inc["opened"])
    closed = datetime.fromisoformat(inc["closed"]) if inc["closed"] else None
    dur = (closed or as_of) - opened
    rows.append({"id": inc["id"], "opened": opened.strftime("%d/%m %H:%M"),
                 "minutes": int(dur.total_seconds() // 60), "open": closed is None,
                 "overnight": closed is not None and closed.date() > opened.date()})
    print(f"{inc['id']} {opened:%Y-%m-%d %H:%M} {'OPEN' if closed is None else str(dur)}")
sla = timedelta(hours=2)
{"timeline": rows, "breaches": [r["id"] for r in rows if r["minutes"] > sla.total_seconds() / 60],
 "as_of": as_of.isoformat(), "next_review": (as_of + timedelta(days=1, hours=-3)).isoformat()}
