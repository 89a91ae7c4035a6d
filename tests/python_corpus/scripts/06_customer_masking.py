import asyncio
import re

# Fetch customers concurrently and mask their sensitive fields before returning them.
ids = [3, 14, 15]
customers = await asyncio.gather(*[mcp.fixture.get_customer(id=i) for i in ids])

def mask_card(card):
    digits = re.sub(r"\D", "", card)
    return "**** **** **** " + digits[-4:]

def mask_email(email):
    user, _, domain = email.partition("@")
    return user[0] + "*" * (len(user) - 1) + "@" + domain

safe = []
for c in customers:
    row = {
        "id": c["id"],
        "name": c["name"],
        "email": mask_email(c["email"]),
        "card": mask_card(c["card"]),
        "has_api_key": c["api_key"].startswith("sk_live_"),
    }
    print(f"{row['id']:>3} {row['name']:<14} {row['email']:<18} {row['card']}")
    safe.append(row)
safe
