# Classify failures by exception type and by the code in the message.
attempts = [
    ("fail", {"message": "backend exploded"}),
    ("echo", {"wrong": 1}),
    ("add", {"a": 1, "b": "two"}),
    ("get_customer", {"id": -5}),
    ("echo", {"message": "fine"}),
]
report = []
for tool, args in attempts:
    fn = getattr(mcp.fixture, tool)
    try:
        value = await fn(args)
        report.append({"tool": tool, "outcome": "ok", "value": value})
    except PermissionError as e:
        report.append({"tool": tool, "outcome": "denied", "code": str(e).split(":", 1)[0]})
    except TimeoutError as e:
        report.append({"tool": tool, "outcome": "timeout", "code": str(e).split(":", 1)[0]})
    except ValueError as e:
        report.append({"tool": tool, "outcome": "bad-args", "code": str(e).split(":", 1)[0]})
    except RuntimeError as e:
        report.append({"tool": tool, "outcome": "failed", "code": str(e).split(":", 1)[0],
                       "why": str(e).split(": ", 1)[1][:40]})
for r in report:
    print(r["tool"], "->", r["outcome"], r.get("code", ""))
{"report": report, "failures": sum(1 for r in report if r["outcome"] != "ok")}
