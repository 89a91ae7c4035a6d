# Parse query strings by hand (no urllib): repeated keys, %-escapes, flags.
HEX = "0123456789abcdef"
def unquote(s):
    out, i = "", 0
    s = s.replace("+", " ")
    while i < len(s):
        if s[i] == "%" and i + 2 < len(s) and all(c in HEX for c in s[i + 1:i + 3].lower()):
            out += chr(int(s[i + 1:i + 3], 16))
            i += 3
        else:
            out += s[i]
            i += 1
    return out
def parse_qs(qs):
    params = {}
    for part in qs.lstrip("?").split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        params.setdefault(unquote(key), []).append(unquote(value) if sep else True)
    return params
url = await mcp.fixture.echo(message="https://x.test/search?q=code+mode%21&tag=py&tag=rust&page=2&debug&empty=")
base, _, query = url.partition("?")
params = parse_qs(query)
for k, v in params.items():
    print(f"{k} = {v}")
{"base": base, "params": params, "page": int(params["page"][0]) + 1, "tags": params["tag"]}
