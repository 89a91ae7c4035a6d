# try/except/else/finally ordering, and cleanup that always runs.
events = []

async def with_cleanup(kind):
    events.append(f"open {kind}")
    try:
        if kind == "bad":
            await mcp.fixture.fail(message="write failed")
        value = await mcp.fixture.echo(message=f"{kind} done")
    except RuntimeError as e:
        events.append(f"error {kind}: {str(e).split(':', 1)[0]}")
        return None
    else:
        events.append(f"ok {kind}")
        return value
    finally:
        events.append(f"close {kind}")

results = [await with_cleanup(k) for k in ["good", "bad", "other"]]
for e in events:
    print(e)
try:
    try:
        raise KeyError("missing-key")
    finally:
        events.append("inner finally")
except KeyError as e:
    events.append(f"outer caught {e}")
{"results": results, "events": events}
