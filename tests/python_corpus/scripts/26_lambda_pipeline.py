# Apply a pipeline of named transformations to text fetched from a tool.
text = await mcp.fixture.echo(message="  Hello,   World!  Welcome to   Code Mode.  ")
steps = [
    ("strip", lambda s: s.strip()),
    ("squash", lambda s: " ".join(s.split())),
    ("lower", lambda s: s.lower()),
    ("no_punct", lambda s: "".join(c for c in s if c.isalnum() or c == " ")),
    ("snake", lambda s: s.replace(" ", "_")),
]
trace = []
value = text
for name, fn in steps:
    value = fn(value)
    trace.append({"step": name, "value": value})
    print(f"{name:>9}: {value!r}")
ops = {"len": len, "upper": lambda s: s.upper(), "words": lambda s: s.count("_") + 1}
{"final": value, "trace": trace, "stats": {k: f(value) for k, f in ops.items()}}
