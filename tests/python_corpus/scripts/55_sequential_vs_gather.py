import asyncio

# The same calls sequentially and concurrently must give the same answers, in order.
pairs = [(i, i * i) for i in range(1, 8)]
sequential = []
for a, b in pairs:
    sequential.append((await mcp.fixture.add(a=a, b=b))["sum"])
concurrent = [r["sum"] for r in await asyncio.gather(*[mcp.fixture.add(a=a, b=b) for a, b in pairs])]
words = await asyncio.gather(*[mcp.fixture.echo(message=f"w{n}") for n in range(5)])
print("sequential:", sequential)
print("concurrent:", concurrent)
{"same": sequential == concurrent, "sums": concurrent, "words": words, "empty": await asyncio.gather()}
