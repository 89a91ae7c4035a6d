import asyncio

# Compare tag sets from two tool answers.
left_raw, right_raw = await asyncio.gather(
    mcp.fixture.echo(message="python,rust,go,sql,docker"),
    mcp.fixture.echo(message="rust,sql,kubernetes,go,terraform"),
)
left, right = set(left_raw.split(",")), set(right_raw.split(","))
common = left & right
jaccard = len(common) / len(left | right)
print("common:", ", ".join(sorted(common)))
print(f"jaccard: {jaccard:.3f}")
frozen = frozenset(["go", "rust"])
{"common": sorted(common), "only_left": sorted(left - right), "only_right": sorted(right - left),
 "either_not_both": sorted(left ^ right), "jaccard": round(jaccard, 4),
 "subset": frozen.issubset(left), "disjoint": left.isdisjoint({"java"}),
 "union_size": len(left.union(right).union({"java"}))}
