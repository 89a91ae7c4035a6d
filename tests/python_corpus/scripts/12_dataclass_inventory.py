from dataclasses import dataclass

@dataclass
class Item:
    sku: str
    name: str
    qty: int
    price: float

    def value(self):
        return self.qty * self.price

stock = [
    Item("K-1", "keyboard", 12, 49.9),
    Item("M-2", "mouse", 40, 19.5),
    Item("S-3", "screen", 3, 229.0),
    Item("C-4", "cable", 150, 4.25),
]
low = [i for i in stock if i.qty < 10]
total = 0.0
for item in stock:
    r = await mcp.fixture.add(a=total, b=item.value())
    total = r["sum"]
for i in sorted(stock, key=lambda i: i.value(), reverse=True):
    print(f"{i.sku} {i.name:<9} {i.qty:>4} x {i.price:>7.2f} = {i.value():>8.2f}")
{
    "total_value": round(total, 2),
    "low_stock": [i.sku for i in low],
    "most_valuable": max(stock, key=lambda i: i.value()).name,
    "first": repr(stock[0]),
}
