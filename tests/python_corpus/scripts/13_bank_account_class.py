class Account:
    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError(f"deposit must be positive, got {amount}")
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError(f"insufficient funds: balance {self.balance}, asked {amount}")
        self.balance -= amount
        self.history.append(("withdraw", amount))

    def __repr__(self):
        return f"Account({self.owner!r}, balance={self.balance})"

acct = Account("ada", 100)
errors = []
for op, amount in [("deposit", 50), ("withdraw", 30), ("withdraw", 500), ("deposit", -5), ("deposit", 20)]:
    try:
        getattr(acct, op)(amount)
    except ValueError as e:
        errors.append(str(e))
        print("rejected:", e)
confirmation = await mcp.fixture.echo(message=f"{acct!r} after {len(acct.history)} operations")
print(confirmation)
{"balance": acct.balance, "history": [list(h) for h in acct.history], "errors": errors, "confirmation": confirmation}
