import json
from collections import defaultdict

# The tool answers JSON text; parse it and group orders by status.
payload = json.dumps({"orders": [
    {"id": 1, "status": "shipped", "total": 25.5, "customer": "acme"},
    {"id": 2, "status": "pending", "total": 10.0, "customer": "globex"},
    {"id": 3, "status": "shipped", "total": 99.99, "customer": "acme"},
    {"id": 4, "status": "cancelled", "total": 5.25, "customer": "initech"},
    {"id": 5, "status": "pending", "total": 42.0, "customer": "acme"},
]})
raw = await mcp.fixture.echo(message=payload)
orders = json.loads(raw)["orders"]

by_status = defaultdict(list)
for o in orders:
    by_status[o["status"]].append(o)

summary = {}
for status in sorted(by_status):
    group = by_status[status]
    summary[status] = {
        "count": len(group),
        "total": round(sum(o["total"] for o in group), 2),
        "ids": [o["id"] for o in group],
    }
    print(f"{status:<10} {summary[status]['count']:>2} orders  {summary[status]['total']:>8.2f}")
summary
