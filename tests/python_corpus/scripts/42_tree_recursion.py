import json

# Walk a nested JSON tree recursively: depth, leaf paths, totals.
tree = json.loads(await mcp.fixture.echo(message=json.dumps({
    "name": "root", "size": 1,
    "children": [
        {"name": "src", "size": 10, "children": [
            {"name": "main.rs", "size": 120, "children": []},
            {"name": "lib", "size": 5, "children": [{"name": "util.rs", "size": 40, "children": []}]},
        ]},
        {"name": "README.md", "size": 8, "children": []},
    ],
})))
def depth(node):
    return 1 + max((depth(c) for c in node["children"]), default=0)
def total(node):
    return node["size"] + sum(total(c) for c in node["children"])
def leaves(node, prefix=""):
    path = f"{prefix}/{node['name']}" if prefix else node["name"]
    if not node["children"]:
        return [path]
    out = []
    for c in node["children"]:
        out.extend(leaves(c, path))
    return out
for p in leaves(tree):
    print(p)
{"depth": depth(tree), "total": total(tree), "leaves": leaves(tree),
 "biggest_child": max(tree["children"], key=total)["name"]}
