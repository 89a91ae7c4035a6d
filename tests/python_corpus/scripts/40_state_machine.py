# Drive an order through a state machine; illegal moves are reported, not applied.
TRANSITIONS = {
    "new": {"pay": "paid", "cancel": "cancelled"},
    "paid": {"ship": "shipped", "refund": "refunded"},
    "shipped": {"deliver": "delivered", "lose": "lost"},
    "lost": {"refund": "refunded"},
}
class Order:
    def __init__(self, oid):
        self.oid = oid
        self.state = "new"
        self.trail = ["new"]
    def apply(self, action):
        allowed = TRANSITIONS.get(self.state, {})
        if action not in allowed:
            raise ValueError(f"{self.oid}: cannot {action} when {self.state}")
        self.state = allowed[action]
        self.trail.append(self.state)

orders = {oid: Order(oid) for oid in ["A1", "B2"]}
script = [("A1", "pay"), ("A1", "ship"), ("B2", "ship"), ("A1", "deliver"), ("B2", "cancel"), ("B2", "pay")]
rejected = []
for oid, action in script:
    try:
        orders[oid].apply(action)
    except ValueError as e:
        rejected.append(str(e))
        await mcp.fixture.echo(message=f"audit: {e}")
        print("rejected:", e)
{"states": {k: o.state for k, o in orders.items()}, "trails": {k: o.trail for k, o in orders.items()},
 "rejected": rejected, "terminal": sorted(s for s in ["delivered", "cancelled", "refunded"] if s not in TRANSITIONS)}
