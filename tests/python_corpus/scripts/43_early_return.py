import json

# Return early from the top level when the input is empty, else summarize.
raw = await mcp.fixture.echo(message=json.dumps({"rows": [{"v": 4}, {"v": 9}, {"v": 1}]}))
data = json.loads(raw)
if not data.get("rows"):
    print("nothing to do")
    return {"status": "empty"}
values = [r["v"] for r in data["rows"]]
print(f"{len(values)} rows")
for v in values:
    if v > 8:
        return {"status": "stopped", "at": v, "seen": values[: values.index(v) + 1]}
{"status": "complete", "values": values}
