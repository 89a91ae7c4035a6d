import json

# Send a config as pretty JSON through the tool and check it comes back unchanged.
config = {
    "name": "nightly-export",
    "enabled": True,
    "retries": 3,
    "threshold": 0.75,
    "targets": ["s3://bucket/a", "s3://bucket/b"],
    "owner": None,
    "tags": {"team": "data", "tier": 2},
}
pretty = json.dumps(config, indent=2, sort_keys=True)
echoed = await mcp.fixture.echo(message=pretty)
back = json.loads(echoed)
print(pretty.splitlines()[0], "...", len(pretty.splitlines()), "lines")
compact = json.dumps(back, separators=(",", ":"))
print(compact)
{
    "same": back == config,
    "keys": sorted(back),
    "compact_len": len(compact),
    "pretty_lines": len(pretty.splitlines()),
    "unicode": json.dumps({"city": "Zürich"}),
    "unicode_raw": json.dumps({"city": "Zürich"}, ensure_ascii=False),
}
