import json

# Merge contact lists from two sources, de-duplicated by normalized email.
a = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"email": "Ada@Example.com", "name": "Ada", "phone": None},
    {"email": "bob@example.com", "name": "Bob", "phone": "555-0101"},
])))
b = json.loads(await mcp.fixture.echo(message=json.dumps([
    {"email": "ada@example.com ", "name": "Ada Lovelace", "phone": "555-0100"},
    {"email": "cy@example.com", "name": "Cy", "phone": None},
])))
merged = {}
for source, rows in (("crm", a), ("billing", b)):
    for row in rows:
        key = row["email"].strip().lower()
        current = merged.setdefault(key, {"email": key, "sources": []})
        current["sources"].append(source)
        for field in ("name", "phone"):
            if row[field] and (field not in current or len(str(row[field])) > len(str(current[field] or ""))):
                current[field] = row[field]
            current.setdefault(field, None)
contacts = sorted(merged.values(), key=lambda c: c["email"])
for c in contacts:
    print(f"{c['email']:<18} {c['name']:<13} {c['phone'] or '-':<9} {'+'.join(c['sources'])}")
{"contacts": contacts, "duplicates": sum(1 for c in contacts if len(c["sources"]) > 1)}
