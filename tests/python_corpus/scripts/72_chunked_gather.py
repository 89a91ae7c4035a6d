import asyncio

# Echo 10 messages, at most 4 calls at a time.
messages = [f"m{i}" for i in range(10)]
out = []
for start in range(0, len(messages), 4):
    chunk = messages[start:start + 4]
    out.extend(await asyncio.gather(*[mcp.fixture.echo(message=m) for m in chunk]))
print(f"{len(out)} echoed in {(len(messages) + 3) // 4} chunks")
out
