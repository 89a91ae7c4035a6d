import re

# Call a tool with the wrong arguments, then read what the schema check said.
try:
    await mcp.fixture.add(a="1", c=2)
    outcome = "accepted"
except ValueError as e:
    text = str(e)
    code = text.split(":", 1)[0]
    missing = re.findall(r'"(\w+)" is a required property', text)
    unexpected = re.findall(r"'(\w+)' was unexpected", text)
    wrong_type = re.findall(r"/(\w+): .*? is not of type \"(\w+)\"", text)
    print("code:", code)
    print("missing:", missing, "unexpected:", unexpected, "wrong types:", wrong_type)
    outcome = {"code": code, "missing": missing, "unexpected": unexpected,
               "wrong_type": [list(w) for w in wrong_type]}
# Fix the call and retry.
fixed = await mcp.fixture.add(a=int("1"), b=2)
{"first": outcome, "fixed": fixed}
