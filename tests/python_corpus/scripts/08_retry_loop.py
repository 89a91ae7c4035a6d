# Retry a flaky operation: the first attempts fail, the third succeeds.
MAX_ATTEMPTS = 5
attempt = 0
answer = None
history = []
while attempt < MAX_ATTEMPTS:
    attempt += 1
    try:
        if attempt < 3:
            await mcp.fixture.fail(message=f"503 busy (attempt {attempt})")
        answer = await mcp.fixture.echo(message=f"report ready after {attempt} attempts")
        history.append("ok")
        break
    except RuntimeError as e:
        code = str(e).split(":", 1)[0]
        history.append(code)
        backoff_ms = 100 * 2 ** (attempt - 1)
        print(f"attempt {attempt} failed ({code}); would wait {backoff_ms} ms")
else:
    answer = "gave up"
{"attempts": attempt, "answer": answer, "history": history}
