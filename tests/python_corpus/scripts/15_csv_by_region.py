# The tool answers CSV text; parse it by hand and aggregate sales per region.
csv_text = await mcp.fixture.echo(message="""region,rep,units,price
north,alice,10,2.50
south,bob,4,10.00
north,carol,7,2.50
east,dan,12,1.25
south,erin,1,99.90
north,alice,3,2.50""")
lines = csv_text.strip().split("\n")
header = lines[0].split(",")
rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
totals = {}
reps = {}
for r in rows:
    revenue = int(r["units"]) * float(r["price"])
    totals[r["region"]] = totals.get(r["region"], 0) + revenue
    reps.setdefault(r["region"], set()).add(r["rep"])
ranking = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)
for region, revenue in ranking:
    print(f"{region:<6}{revenue:>9.2f}  reps: {', '.join(sorted(reps[region]))}")
{
    "rows": len(rows),
    "ranking": [[r, round(v, 2)] for r, v in ranking],
    "reps_per_region": {k: len(v) for k, v in sorted(reps.items())},
}
