#!/usr/bin/env python3
"""Checks that the host's imports run one way (docs/architecture.md).

Two checks, exit 1 on any violation:

1. Layers. Every `crate::…` path in a file under src/ names the top unit it reaches; that unit's
   layer must be the file's own or one below it, and the units form no circle. Exceptions are
   listed in ALLOWED with the reason; the list is printed so a reviewer sees them.
2. Files. No import circle between two or more files. Each `crate::…`, `super::…` and `self::…`
   path (use groups expanded) is resolved to the file that defines the module it names; the
   strongly connected components of that graph with more than one file are printed, each one a
   circle to break (usually by moving what both files share into a small file of its own).

Lines inside `#[cfg(test)]` modules and comment lines are skipped (tests may reach anything).
`scripts/check_layers_test.py` is this script's self-test.
"""
import pathlib
import re
import sys

# Top to bottom. A layer may import its own and any later layer.
LAYERS = [
    ["main", "front"],
    ["sandbox"],
    ["telemetry"],
    ["exec"],
    ["gate"],
    ["tools"],
    ["config"],
    ["script", "store"],
    ["context"],
    ["error", "trace", "term"],
]
RANK = {name: i for i, group in enumerate(LAYERS) for name in group}

# (importing unit, imported unit): why it is allowed. Keep this empty if you can.
ALLOWED = {}

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
PATH = re.compile(r"\bcrate::([a-z_]+)")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# A path starting at crate/super/self, optionally ending in a `{…}` group (expanded below).
ROOTED = re.compile(r"\b(crate|super|self)((?:\s*::\s*" + IDENT + r")*)(\s*::\s*\{)?")


def unit_of(rel: pathlib.PurePath) -> str:
    return rel.parts[0].removesuffix(".rs")


def code_lines(text: str):
    """Lines outside `#[cfg(test)]` modules and comments (tests may reach anything)."""
    in_tests = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#[cfg(test)]"):
            in_tests = True
        if in_tests:
            continue
        if stripped.startswith("//"):
            continue
        yield line


def module_of(rel: pathlib.PurePath) -> tuple:
    """The module path a file defines: `a/b.rs` and `a/b/mod.rs` are `a::b`; lib.rs and main.rs
    are the crate root."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def group_end(text: str, start: int) -> int:
    """Index just past the `}` closing the group whose `{` is at text[start - 1]."""
    depth = 1
    i = start
    while i < len(text) and depth:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
        i += 1
    return i


def split_top(body: str):
    """The comma-separated items of a use group, nested groups kept whole."""
    depth, item = 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            yield item
            item = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        item += ch
    yield item


def expand(prefix: list, body: str):
    """Every path a use group names: `a::{b, c::{d, e}}` gives a::b, a::c::d, a::c::e."""
    for item in split_top(body):
        item = re.sub(r"\s+as\s+" + IDENT, "", item).strip()
        if not item:
            continue
        head, sep, rest = item.partition("{")
        segs = [s.strip() for s in head.split("::") if s.strip()]
        if sep:
            yield from expand(prefix + segs, rest[: rest.rfind("}")])
        else:
            yield prefix + [s for s in segs if s not in ("self", "*")]


def paths_in(text: str):
    """(root, segments) of every crate/super/self path in code."""
    for m in ROOTED.finditer(text):
        root = m.group(1)
        segs = [s.strip() for s in m.group(2).split("::") if s.strip()]
        if m.group(3):
            body = text[m.end() : group_end(text, m.end()) - 1]
            for path in expand(segs, body):
                yield root, path
        else:
            yield root, segs


def file_graph(src: pathlib.Path, why=None):
    """{file: set of files it imports}, files relative to src; `why` gets, per edge, the first
    path that made it."""
    files = sorted(src.rglob("*.rs"))
    modules = {module_of(p.relative_to(src)): p.relative_to(src) for p in files}
    edges = {}
    for path in files:
        rel = path.relative_to(src)
        me = module_of(rel)
        text = "\n".join(code_lines(path.read_text()))
        for root, segs in paths_in(text):
            if root == "crate":
                target = list(segs)
            else:
                base = list(me)
                if root == "super":
                    base = base[:-1]
                while segs and segs[0] == "super":
                    segs = segs[1:]
                    base = base[:-1]
                target = base + list(segs)
            # The longest prefix that is a file's module (the rest names items in it).
            for n in range(len(target), -1, -1):
                hit = modules.get(tuple(target[:n]))
                if hit is not None:
                    break
            if hit is not None and hit != rel:
                edges.setdefault(rel, set()).add(hit)
                if why is not None:
                    why.setdefault((rel, hit), "::".join([root] + list(segs)))
    return edges


def circles(edges):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def check(src: pathlib.Path):
    """(violations, unit import count, file import count)."""
    edges = {}
    bad = []
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        unit = unit_of(rel)
        if unit == "lib":
            continue
        for line in code_lines(path.read_text()):
            for target in PATH.findall(line):
                if target == unit:
                    continue
                edges.setdefault(unit, set()).add(target)
                if target not in RANK or unit not in RANK:
                    bad.append(f"src/{rel}: unknown unit {unit} -> {target}")
                elif RANK[target] < RANK[unit] and (unit, target) not in ALLOWED:
                    bad.append(
                        f"src/{rel}: {unit} imports {target}, a higher layer: {line.strip()}"
                    )
    # No circle between units (a circle inside one layer would pass the rank test).
    for comp in circles(edges):
        bad.append("import circle between folders: " + ", ".join(comp))
    why = {}
    graph = file_graph(src, why)
    for comp in circles(graph):
        names = ", ".join(f"src/{p}" for p in comp)
        links = "".join(
            f"\n    src/{a} -> src/{b} ({why[(a, b)]})"
            for a in comp
            for b in sorted(graph.get(a, ()))
            if b in comp
        )
        bad.append(f"import circle between {len(comp)} files: {names}{links}")
    return bad, sum(len(v) for v in edges.values()), sum(len(v) for v in graph.values())


def main() -> int:
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    bad, units, files = check(src)
    for (a, b), why in ALLOWED.items():
        print(f"allowed: {a} -> {b}: {why}")
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} layering violation(s); see docs/architecture.md")
        return 1
    print(f"layers ok: {units} unit imports, all downward; {files} file imports, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
