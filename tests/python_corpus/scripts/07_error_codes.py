# Call tools that fail and read the error code from the message.
results = []
for msg in ["quota exceeded", "not found: /reports/q3", "upstream: connection reset"]:
    try:
        await mcp.fixture.fail(message=msg)
        results.append({"msg": msg, "ok": True})
    except RuntimeError as e:
        code, _, detail = str(e).partition(": ")
        print(f"failed with {code}: {detail}")
        results.append({"msg": msg, "ok": False, "code": code, "detail": detail})
codes = sorted({r["code"] for r in results if not r["ok"]})
{"results": results, "codes": codes}
