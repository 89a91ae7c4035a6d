import json

# Rank tickets: priority first, then oldest, then id.
tickets = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"id": "T-7", "priority": "low", "age_h": 50, "assignee": "bo"},
    {"id": "T-2", "priority": "high", "age_h": 3, "assignee": None},
    {"id": "T-9", "priority": "medium", "age_h": 30, "assignee": "al"},
    {"id": "T-4", "priority": "high", "age_h": 12, "assignee": "al"},
    {"id": "T-1", "priority": "medium", "age_h": 30, "assignee": "cy"},
])))
rank = {"high": 0, "medium": 1, "low": 2}
ordered = sorted(tickets, key=lambda t: (rank[t["priority"]], -t["age_h"], t["id"]))
for t in ordered:
    print(f"{t['id']:<4} {t['priority']:<7} {t['age_h']:>3}h {t['assignee'] or '-'}")
unassigned_last = sorted(tickets, key=lambda t: (t["assignee"] is None, t["assignee"] or ""))
by_name = sorted(tickets, key=lambda t: t["id"], reverse=True)
{
    "order": [t["id"] for t in ordered],
    "by_assignee": [t["id"] for t in unassigned_last],
    "desc_ids": [t["id"] for t in by_name],
    "oldest": max(tickets, key=lambda t: t["age_h"])["id"],
}
