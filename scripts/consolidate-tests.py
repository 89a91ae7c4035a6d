#!/usr/bin/env python3
"""Keeps tests/integration.rs listing every behaviour file in tests/ (one test binary for all of
them: one compile and one link instead of one per file). Also rewrites a file's own
`mod common;`/`mod pg_support;`/`mod serve_support;` (the habit of one-binary-per-file tests) into `use crate::…;`.
Run it after adding a test file: scripts/consolidate-tests.py
With --check (CI) it changes nothing and fails if a file would change: with `autotests = false`
a test file that is not listed would never be compiled."""
import pathlib, re, sys

check = "--check" in sys.argv[1:]
stale = []


def put(p, text):
    if p.read_text() != text:
        stale.append(p.name)
        if not check:
            p.write_text(text)


tests = pathlib.Path(__file__).resolve().parent.parent / "tests"
shared = ["common", "pg_support", "serve_support"]
files = sorted(p.stem for p in tests.glob("*.rs") if p.name != "integration.rs")
for stem in files:
    p = tests / f"{stem}.rs"
    s = p.read_text()
    put(p, re.sub(r"^mod (common|pg_support|serve_support);$", r"use crate::\1;", s, flags=re.M))
lines = [
    "//! Every integration test of the host, one file per behaviour, compiled into one test binary",
    "//! (one compile and one link instead of one per file). Run one behaviour with",
    "//! `cargo nextest run --test integration <file>::` or `cargo test --test integration <file>::`.",
    "//! Kept in sync by scripts/consolidate-tests.py.",
    "",
]
lines += [f"mod {m};" for m in shared]
lines.append("")
lines += [f"mod {m};" for m in files]
put(tests / "integration.rs", "\n".join(lines) + "\n")
if check and stale:
    sys.exit(f"tests/integration.rs is out of date ({', '.join(stale)}): run scripts/consolidate-tests.py")
