# Invoice lines totalled with the add tool, one call per line, sequentially.
lines = [("widget", 3, 250), ("gadget", 1, 1200), ("cable", 5, 99)]
total = 0
for name, qty, cents in lines:
    r = await mcp.fixture.add(a=total, b=qty * cents)
    total = r["sum"]
    print(f"{name:<7} {qty} x {cents / 100:.2f}")
print(f"total {total / 100:.2f}")
{"total_cents": total, "lines": len(lines)}
