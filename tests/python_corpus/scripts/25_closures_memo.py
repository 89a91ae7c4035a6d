# Closures: a call counter and a memoizing wrapper around a tool call.
def make_counter():
    count = 0
    def bump(n=1):
        nonlocal count
        count += n
        return count
    return bump

calls = make_counter()
cache = {}

async def cached_add(a, b):
    key = (a, b)
    if key not in cache:
        calls()
        cache[key] = (await mcp.fixture.add(a=a, b=b))["sum"]
    return cache[key]

def scaler(factor):
    return lambda x: x * factor

results = []
for a, b in [(1, 2), (3, 4), (1, 2), (3, 4), (5, 6)]:
    results.append(await cached_add(a, b))
double, triple = scaler(2), scaler(3)
print(f"tool calls: {calls(0)} for {len(results)} lookups")
{"results": results, "tool_calls": calls(0), "cached_keys": sorted([list(k) for k in cache]),
 "scaled": [double(x) + triple(x) for x in results]}
