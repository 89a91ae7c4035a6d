# A reusable async retry helper: retries only retryable codes, re-raises the rest.
RETRYABLE = {"TOOL_ERROR", "TIMEOUT"}
attempt_log = []

async def with_retry(label, make_call, attempts=3):
    last = None
    for n in range(1, attempts + 1):
        try:
            result = await make_call(n)
            attempt_log.append(f"{label}#{n}:ok")
            return result
        except Exception as e:
            code = str(e).split(":", 1)[0]
            attempt_log.append(f"{label}#{n}:{code}")
            if code not in RETRYABLE:
                raise
            last = e
    raise RuntimeError(f"GAVE_UP: {label} after {attempts} attempts ({last})")

async def flaky(n):
    if n < 2:
        return await mcp.fixture.fail(message="temporarily unavailable")
    return await mcp.fixture.echo(message=f"ok on attempt {n}")

async def always_bad(n):
    return await mcp.fixture.fail(message="still down")

async def bad_args(n):
    return await mcp.fixture.add(a=1)

outcomes = {"flaky": await with_retry("flaky", flaky)}
for label, fn in [("down", always_bad), ("args", bad_args)]:
    try:
        outcomes[label] = await with_retry(label, fn)
    except Exception as e:
        outcomes[label] = f"{type(e).__name__}: {str(e)[:60]}"
for line in attempt_log:
    print(line)
{"outcomes": outcomes, "attempts": attempt_log}
