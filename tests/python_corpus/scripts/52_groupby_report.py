import itertools
import json

# Group sorted sales by month with itertools.groupby.
sales = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"month": "2026-01", "amount": 120}, {"month": "2026-02", "amount": 80},
    {"month": "2026-01", "amount": 45}, {"month": "2026-03", "amount": 200},
    {"month": "2026-02", "amount": 15},
])))
sales.sort(key=lambda s: s["month"])
report = {}
for month, rows in itertools.groupby(sales, key=lambda s: s["month"]):
    rows = list(rows)
    report[month] = {"count": len(rows), "total": sum(r["amount"] for r in rows)}
    print(month, report[month]["total"])
report
