import re

# Walrus operator in loops and comprehensions.
raw = await mcp.fixture.echo(message="id=17;id=x;id=42;noise;id=7;id=1000")
ids = [int(m.group(1)) for part in raw.split(";") if (m := re.fullmatch(r"id=(\d+)", part))]
big = [y for x in ids if (y := x * 3) > 30]
queue = list(ids)
taken = []
while (n := len(queue)) > 2:
    taken.append(queue.pop(0))
    print(f"took {taken[-1]}, {n - 1} left")
if (total := sum(ids)) > 1000:
    print("large total:", total)
{"ids": ids, "big": big, "taken": taken, "left": queue, "total": total}
