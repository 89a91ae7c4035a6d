import json

# A tool that answers JSON as text: parse it, pick fields, handle bad text.
answers = [
    await mcp.fixture.echo(message=json.dumps({"status": "ok", "items": [1, 2, 3]})),
    await mcp.fixture.echo(message="not json"),
]
parsed = []
for a in answers:
    try:
        data = json.loads(a)
        parsed.append({"status": data["status"], "count": len(data["items"])})
    except json.JSONDecodeError:
        parsed.append({"status": "unparseable", "count": 0})
parsed
