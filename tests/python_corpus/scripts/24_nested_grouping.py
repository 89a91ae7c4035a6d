from collections import defaultdict
import json

# Count events per day and per type, nested.
events = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"day": "2026-05-01", "type": "login", "user": "a"},
    {"day": "2026-05-01", "type": "login", "user": "b"},
    {"day": "2026-05-01", "type": "purchase", "user": "a"},
    {"day": "2026-05-02", "type": "login", "user": "a"},
    {"day": "2026-05-02", "type": "logout", "user": "a"},
    {"day": "2026-05-03", "type": "purchase", "user": "c"},
    {"day": "2026-05-03", "type": "purchase", "user": "c"},
])))
per_day = defaultdict(lambda: defaultdict(int))
users_per_type = defaultdict(set)
for e in events:
    per_day[e["day"]][e["type"]] += 1
    users_per_type[e["type"]].add(e["user"])
table = {day: dict(sorted(types.items())) for day, types in sorted(per_day.items())}
for day, types in table.items():
    print(day, " ".join(f"{k}={v}" for k, v in types.items()))
busiest = max(table, key=lambda d: sum(table[d].values()))
{"table": table, "busiest": busiest,
 "users_per_type": {t: sorted(u) for t, u in sorted(users_per_type.items())}}
