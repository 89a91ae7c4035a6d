import asyncio

# Star-unpacking of tool results and dict merging.
first, *middle, last = await asyncio.gather(
    *[mcp.fixture.echo(message=w) for w in ["alpha", "beta", "gamma", "delta"]]
)
head, *tail = "2026-11-27T10:00:00".split("T")
(a, b), c = (1, 2), 3
defaults = {"retries": 3, "timeout": 10, "verbose": False}
overrides = {"timeout": 30, "verbose": True}
config = {**defaults, **overrides, "source": "cli"}
def describe(*args, sep=", ", **kwargs):
    parts = [str(x) for x in args] + [f"{k}={v}" for k, v in sorted(kwargs.items())]
    return sep.join(parts)
line = describe(*middle, *tail, **config)
print(line)
swap_x, swap_y = 5, 9
swap_x, swap_y = swap_y, swap_x
{"first": first, "middle": middle, "last": last, "date": head, "time": tail,
 "abc": [a, b, c], "config": config, "line": line, "swapped": [swap_x, swap_y],
 "merged_list": [*middle, *[last] * 2]}
