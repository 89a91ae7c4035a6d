# Add up invoice lines with the add tool, keeping a running total.
lines = [
    {"sku": "A-100", "qty": 3, "unit_cents": 1299},
    {"sku": "B-220", "qty": 1, "unit_cents": 4550},
    {"sku": "C-031", "qty": 12, "unit_cents": 99},
]
total = 0
breakdown = []
for line in lines:
    amount = line["qty"] * line["unit_cents"]
    res = await mcp.fixture.add(a=total, b=amount)
    total = res["sum"]
    breakdown.append({"sku": line["sku"], "amount": amount, "running": total})
    print(f"{line['sku']}: {amount / 100:.2f} (running {total / 100:.2f})")
tax = round(total * 0.08)
grand = (await mcp.fixture.add(a=total, b=tax))["sum"]
{"subtotal_cents": total, "tax_cents": tax, "total": f"${grand / 100:,.2f}", "lines": breakdown}
