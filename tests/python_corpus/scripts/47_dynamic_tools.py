import asyncio

# Pick tools by name at run time; use both call forms.
plan = [
    ("echo", {"message": "dict form"}),
    ("add", {"a": 2.5, "b": 4}),
    ("get_customer", {"id": 42}),
]
answers = []
for name, args in plan:
    tool = getattr(mcp.fixture, name)
    answers.append(await tool(args))
kw = await mcp.fixture.add(a=7, b=8)
mixed = await asyncio.gather(getattr(mcp.fixture, "echo")(message="via getattr"), mcp.fixture.add({"a": 1, "b": 1}))
for name, ans in zip([p[0] for p in plan], answers):
    print(f"{name}: {type(ans).__name__}")
{"answers": answers, "kw": kw, "mixed": mixed, "float_sum": answers[1]["sum"]}
