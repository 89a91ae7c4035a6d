# A lazy generator pipeline over tool output (needs `yield`).
raw = await mcp.fixture.echo(message="\n".join(f"{i},{i * i % 7}" for i in range(12)))

def parse(lines):
    for line in lines:
        a, b = line.split(",")
        yield int(a), int(b)

def only_even(pairs):
    for a, b in pairs:
        if b % 2 == 0:
            yield a, b

def take(n, it):
    for i, x in enumerate(it):
        if i >= n:
            return
        yield x

picked = list(take(4, only_even(parse(raw.splitlines()))))
print(picked)
{"picked": [list(p) for p in picked], "total": sum(a for a, _ in picked)}
