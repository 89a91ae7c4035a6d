import asyncio

# Shape customer records with comprehensions.
ids = list(range(1, 7))
records = await asyncio.gather(*[mcp.fixture.get_customer(id=i) for i in ids])
by_id = {r["id"]: r for r in records}
emails = [r["email"] for r in records if r["id"] % 2 == 0]
domains = {r["email"].split("@")[1] for r in records}
initials = {r["id"]: "".join(w[0] for w in r["name"].split()) for r in records}
grid = [[i * j for j in range(1, 4)] for i in range(1, 4)]
flat = [x for row in grid for x in row if x % 2 == 1]
pairs = [(a, b) for a in ids for b in ids if a < b and (a + b) % 5 == 0]
print("even emails:", emails)
print("pairs:", pairs)
{
    "ids": sorted(by_id),
    "even_emails": emails,
    "domains": sorted(domains),
    "initials": initials[1],
    "grid": grid,
    "odd_cells": flat,
    "pairs": [list(p) for p in pairs],
    "lengths": {k: len(v) for k, v in records[0].items() if isinstance(v, str)},
}
