import json

# Deep-merge a settings patch from a tool into defaults, recording what changed.
defaults = {"db": {"host": "localhost", "port": 5432, "pool": {"min": 1, "max": 5}},
            "features": ["search"], "debug": False}
patch = json.loads(await mcp.fixture.echo(message=json.dumps(
    {"db": {"port": 6543, "pool": {"max": 20}}, "features": ["search", "export"], "debug": True,
     "region": "eu-west"})))
changes = []
def merge(base, over, path=""):
    out = dict(base)
    for k, v in over.items():
        here = f"{path}.{k}" if path else k
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            out[k] = merge(base[k], v, here)
        else:
            if base.get(k) != v:
                changes.append(here)
            out[k] = v
    return out
merged = merge(defaults, patch)
for c in changes:
    print("changed", c)
{"merged": merged, "changes": changes, "untouched_host": merged["db"]["host"],
 "defaults_intact": defaults["db"]["pool"]["max"] == 5}
