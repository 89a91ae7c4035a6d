import asyncio

# Look up several customers at once and build a contact sheet without secrets.
ids = [3, 1, 2]
records = await asyncio.gather(*[mcp.fixture.get_customer(id=i) for i in ids])
sheet = sorted(
    ({"id": r["id"], "name": r["name"], "email": r["email"]} for r in records),
    key=lambda r: r["id"],
)
domains = {r["email"].split("@")[1] for r in sheet}
print(f"{len(sheet)} contacts, domains: {sorted(domains)}")
sheet
