import json

# Dispatch on the shape of tool answers with `match` (structural pattern matching).
answers = [
    json.loads(await mcp.fixture.echo(message=json.dumps(x)))
    for x in [{"type": "user", "name": "ada"}, {"type": "error", "code": 404}, [1, 2, 3], "plain"]
]
out = []
for a in answers:
    match a:
        case {"type": "user", "name": name}:
            out.append(f"user {name}")
        case {"type": "error", "code": code} if code >= 400:
            out.append(f"error {code}")
        case [first, *rest]:
            out.append(f"list starting {first} (+{len(rest)})")
        case str(s):
            out.append(f"text {s}")
        case _:
            out.append("unknown")
print(out)
out
