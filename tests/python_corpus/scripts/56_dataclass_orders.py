from dataclasses import dataclass

@dataclass
class Line:
    product: str
    qty: int
    price: float = 1.0
    discount: float = 0.0

    def total(self):
        return round(self.qty * self.price * (1 - self.discount), 2)

@dataclass
class Order:
    oid: str
    customer: str
    lines: list

    def total(self):
        return round(sum(l.total() for l in self.lines), 2)

cust = await mcp.fixture.get_customer(id=12)
orders = [
    Order("O-1", cust["name"], [Line("pen", 10, 1.5), Line("pad", 2, 4.0, 0.25)]),
    Order("O-2", cust["name"], [Line("ink", 3, 7.99, 0.1)]),
    Order("O-3", "Bob", [Line("clip", 100)]),
]
for o in sorted(orders, key=lambda o: o.total(), reverse=True):
    print(f"{o.oid} {o.customer:<12} {o.total():>8.2f}")
o2 = Order("O-2", cust["name"], [Line("ink", 3, 7.99, 0.1)])
{"totals": {o.oid: o.total() for o in orders}, "equal_orders": o2 == orders[1],
 "line_repr": repr(orders[0].lines[1]), "email": cust["email"]}
