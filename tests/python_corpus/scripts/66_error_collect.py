# Call a tool for each input, keep going after failures, report both.
inputs = ["ok-1", "bad", "ok-2"]
done, errors = [], []
for item in inputs:
    try:
        if item == "bad":
            await mcp.fixture.fail(message=f"cannot process {item}")
        done.append(await mcp.fixture.echo(message=item))
    except RuntimeError as e:
        code, _, why = str(e).partition(": ")
        errors.append({"item": item, "code": code, "why": why})
print(f"{len(done)} done, {len(errors)} failed")
{"done": done, "errors": errors}
