import json
import re

# Validate records from a tool and collect every problem.
records = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"id": 1, "email": "ada@example.com", "age": 36, "country": "UK"},
    {"id": 2, "email": "not-an-email", "age": 17, "country": "US"},
    {"id": "3", "email": "bob@example.org", "age": None, "country": "FR"},
    {"id": 4, "email": "eve@example.net", "age": 130, "country": "XX"},
])))
EMAIL = re.compile(r"^[\w.+-]+@[\w-]+\.[a-z]{2,}$")
COUNTRIES = {"UK", "US", "FR", "DE"}
problems = []
for r in records:
    rid = r.get("id")
    if not isinstance(rid, int):
        problems.append({"id": rid, "field": "id", "error": f"expected int, got {type(rid).__name__}"})
    if not EMAIL.match(r.get("email", "")):
        problems.append({"id": rid, "field": "email", "error": "invalid format"})
    age = r.get("age")
    if age is None:
        problems.append({"id": rid, "field": "age", "error": "missing"})
    elif not 18 <= age <= 120:
        problems.append({"id": rid, "field": "age", "error": f"out of range: {age}"})
    if r.get("country") not in COUNTRIES:
        problems.append({"id": rid, "field": "country", "error": f"unknown {r.get('country')!r}"})
valid = [r["id"] for r in records if not any(p["id"] == r["id"] for p in problems)]
print(json.dumps(problems[:2]))
{"valid": valid, "problem_count": len(problems), "problems": problems}
