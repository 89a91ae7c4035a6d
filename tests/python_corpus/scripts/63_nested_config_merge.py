# Merge a user's settings over defaults, reporting unknown keys.
defaults = {"theme": "light", "editor": {"tabs": 4, "wrap": False}, "langs": ["en"]}
user = {"editor": {"wrap": True}, "langs": ["en", "fr"], "colour": "blue"}
unknown = []
def merge(base, over, path=""):
    out = dict(base)
    for k, v in over.items():
        if k not in base:
            unknown.append(path + k)
            continue
        if isinstance(v, dict) and isinstance(base[k], dict):
            out[k] = merge(base[k], v, path + k + ".")
        else:
            out[k] = v
    return out
merged = merge(defaults, user)
{"merged": merged, "unknown": unknown}
