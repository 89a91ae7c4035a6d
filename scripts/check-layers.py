#!/usr/bin/env python3
"""Checks that the host's imports run one way (docs/architecture.md).

Every `crate::…` path in a file under src/ names the module it reaches; the module's layer must be
the file's own or one below it. A file may import from its own folder freely, but the folders
themselves must form no circle. Exceptions are listed in ALLOWED with the reason; the list is
printed so a reviewer sees them. Exit 1 on any violation.
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


def unit_of(path: pathlib.Path) -> str:
    rel = path.relative_to(SRC)
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


def main() -> int:
    edges = {}
    bad = []
    for path in sorted(SRC.rglob("*.rs")):
        unit = unit_of(path)
        if unit == "lib":
            continue
        for n, line in enumerate(code_lines(path.read_text()), 1):
            for target in PATH.findall(line):
                if target == unit:
                    continue
                edges.setdefault(unit, set()).add(target)
                if target not in RANK or unit not in RANK:
                    bad.append(f"{path.relative_to(SRC.parent)}: unknown unit {unit} -> {target}")
                elif RANK[target] < RANK[unit] and (unit, target) not in ALLOWED:
                    bad.append(
                        f"{path.relative_to(SRC.parent)}: {unit} imports {target}, a higher layer: {line.strip()}"
                    )
    # No circle between units (a circle inside one layer would pass the rank test).
    seen, stack = set(), []

    def visit(u):
        if u in stack:
            bad.append("import circle: " + " -> ".join(stack[stack.index(u):] + [u]))
            return
        if u in seen:
            return
        seen.add(u)
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            visit(v)
        stack.pop()

    for u in sorted(edges):
        visit(u)
    for (a, b), why in ALLOWED.items():
        print(f"allowed: {a} -> {b}: {why}")
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} layering violation(s); see docs/architecture.md")
        return 1
    print(f"layers ok: {sum(len(v) for v in edges.values())} unit imports, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
