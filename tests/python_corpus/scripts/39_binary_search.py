# Find thresholds in a sorted list with a hand-written binary search.
raw = await mcp.fixture.echo(message="3,8,15,15,23,42,57,91,104,230")
xs = [int(x) for x in raw.split(",")]

def bisect_left(seq, target):
    lo, hi = 0, len(seq)
    while lo < hi:
        mid = (lo + hi) // 2
        if seq[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo

queries = [1, 15, 16, 91, 500]
found = {}
for q in queries:
    i = bisect_left(xs, q)
    hit = i < len(xs) and xs[i] == q
    found[str(q)] = {"index": i, "hit": hit, "next": xs[i] if i < len(xs) else None}
    print(f"{q:>4}: index {i}{' (hit)' if hit else ''}")
{"found": found, "n": len(xs)}
