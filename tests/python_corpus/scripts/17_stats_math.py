import math

# Summary statistics of latencies the tool reports, computed by hand.
raw = await mcp.fixture.echo(message="120 95 101 87 340 110 99 105 93 1020")
xs = sorted(int(t) for t in raw.split())
n = len(xs)
mean = sum(xs) / n
median = (xs[n // 2 - 1] + xs[n // 2]) / 2 if n % 2 == 0 else xs[n // 2]
var = sum((x - mean) ** 2 for x in xs) / (n - 1)
stdev = math.sqrt(var)

def percentile(p):
    k = (n - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

outliers = [x for x in xs if abs(x - mean) > 2 * stdev]
print(f"n={n} mean={mean:.1f} median={median} sd={stdev:.2f}")
print(f"p90={percentile(90):.1f} p99={percentile(99):.1f}")
{
    "mean": round(mean, 3),
    "median": median,
    "stdev": round(stdev, 3),
    "p90": round(percentile(90), 2),
    "outliers": outliers,
    "log10_max": round(math.log10(xs[-1]), 4),
    "geo_mean": round(math.exp(sum(math.log(x) for x in xs) / n), 3),
}
