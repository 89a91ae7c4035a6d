# Money in integer cents; split a bill and format amounts.
items = {"pizza": 2450, "salad": 1175, "drinks": 1830, "dessert": 990}
people = ["ana", "ben", "cho"]
subtotal = 0
for cents in items.values():
    subtotal = (await mcp.fixture.add(a=subtotal, b=cents))["sum"]
tip = subtotal * 18 // 100
total = subtotal + tip
share, remainder = divmod(total, len(people))
shares = {p: share + (1 if i < remainder else 0) for i, p in enumerate(people)}

def money(cents):
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"

for p, amount in shares.items():
    print(f"{p:<4} pays {money(amount):>8}")
{"subtotal": money(subtotal), "tip": money(tip), "total": money(total),
 "shares": {p: money(c) for p, c in shares.items()}, "check": sum(shares.values()) == total,
 "negative": money(-12345), "big": money(123456789)}
