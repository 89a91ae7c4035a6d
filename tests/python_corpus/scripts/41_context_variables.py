# Uses the --context variables `user`, `limits` and `tags` (see 41_context_variables.context.json).
greeting = await mcp.fixture.echo(message=f"hello {user['name']} ({user['role']})")
print(greeting)
quota_left = limits["max_calls"] - limits["used"]
allowed = quota_left > 0 and user["role"] in ("admin", "analyst")
doubled = {}
for t in tags[: limits["max_calls"]]:
    doubled[t] = await mcp.fixture.echo(message=t * 2)
{"greeting": greeting, "allowed": allowed, "quota_left": quota_left,
 "tags": doubled, "user_keys": sorted(user)}
