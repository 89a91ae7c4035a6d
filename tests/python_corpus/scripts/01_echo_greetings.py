# Greet a list of users through the echo tool and collect the answers.
users = ["ada", "grace", "linus"]
greetings = []
for i, name in enumerate(users, start=1):
    text = await mcp.fixture.echo(message=f"Hello, {name.title()}! You are #{i}.")
    print(text)
    greetings.append(text)
{"count": len(greetings), "greetings": greetings, "longest": max(greetings, key=len)}
