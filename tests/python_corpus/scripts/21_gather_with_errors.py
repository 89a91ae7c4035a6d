import asyncio

# Run several calls concurrently; one failing must not lose the others.
async def safe(label, coro):
    try:
        return {"label": label, "ok": True, "value": await coro}
    except Exception as e:
        return {"label": label, "ok": False, "error": type(e).__name__,
                "code": str(e).split(":", 1)[0]}

results = await asyncio.gather(
    safe("sum", mcp.fixture.add(a=40, b=2)),
    safe("echo", mcp.fixture.echo(message="still here")),
    safe("boom", mcp.fixture.fail(message="disk full")),
    safe("bad-args", mcp.fixture.echo(text="wrong key")),
    safe("cust", mcp.fixture.get_customer(id=99)),
)
for r in results:
    status = "ok " if r["ok"] else "ERR"
    print(status, r["label"], r.get("value", r.get("code")))
ok = [r["label"] for r in results if r["ok"]]
failed = {r["label"]: [r["error"], r["code"]] for r in results if not r["ok"]}
{"ok": ok, "failed": failed, "sum": results[0]["value"]["sum"]}
