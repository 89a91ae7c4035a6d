# Format a report table with str.format and f-strings.
rows = [("Widgets", 1234, 0.0825), ("Gadgets", 56, 0.5), ("Doohickeys", 789012, 0.000123)]
head = "{:<12}|{:>10}|{:>9}".format("product", "units", "share")
lines = [head, "-" * len(head)]
for name, units, share in rows:
    lines.append("{:<12}|{:>10,}|{:>9.2%}".format(name, units, share))
total = sum(u for _, u, _ in rows)
lines.append(f"{'TOTAL':<12}|{total:>10,}|{sum(s for *_, s in rows):>9.1%}")
report = "\n".join(lines)
echoed = await mcp.fixture.echo(message=report)
for line in echoed.splitlines():
    print(line)
samples = [
    f"{3.14159:.3f}", f"{42:05d}", f"{255:x}", f"{255:#o}", f"{1e6:.2e}",
    f"{'left':<8}|", f"{'mid':^9}|", f"{-7:+d}", "{0}-{1}-{0}".format("a", "b"),
    "{name} is {age} years".format(name="Ada", age=36), f"{True!s:>6}", f"{[1, 2]!r}",
]
{"lines": len(echoed.splitlines()), "samples": samples, "width": len(head)}
