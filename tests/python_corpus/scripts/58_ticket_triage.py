# Triage support tickets: priority by keywords, then a summary per priority.
tickets = [
    {"id": 101, "title": "Checkout fails with 500", "body": "urgent: customers cannot pay"},
    {"id": 102, "title": "Typo on pricing page", "body": "minor wording issue"},
    {"id": 103, "title": "Login slow", "body": "takes 10s sometimes"},
    {"id": 104, "title": "Data export broken", "body": "URGENT export returns empty file"},
]
def priority(t):
    text = (t["title"] + " " + t["body"]).lower()
    if "urgent" in text or "500" in text:
        return "p1"
    if "slow" in text or "broken" in text:
        return "p2"
    return "p3"
buckets = {}
for t in tickets:
    buckets.setdefault(priority(t), []).append(t["id"])
for p in sorted(buckets):
    print(f"{p}: {', '.join(str(i) for i in buckets[p])}")
note = await mcp.fixture.echo(message=f"{len(buckets.get('p1', []))} urgent tickets")
{"buckets": buckets, "note": note}
