#!/usr/bin/env python3
"""Says where fuzz/ would not share the release build's dependencies (scripts/fuzz.sh runs it).

The fuzz build reuses target/release's files for every crate that is compiled the same way in
both trees: the same version (fuzz/Cargo.lock against Cargo.lock) and the same profile
(fuzz/Cargo.toml's [profile.release] against the workspace's). A difference is not an error
(those crates are compiled again, correctly, only slower), so this prints what differs and how
to align it, and exits 0.
"""
import pathlib
import tomllib

root = pathlib.Path(__file__).resolve().parent.parent


def versions(lock):
    data = tomllib.loads((root / lock).read_text())
    out = {}
    for pkg in data.get("package", []):
        out.setdefault(pkg["name"], set()).add(pkg["version"])
    return out


main, fuzz = versions("Cargo.lock"), versions("fuzz/Cargo.lock")
drift = sorted(
    f"{name} {sorted(fuzz[name])} (workspace {sorted(main[name])})"
    for name in fuzz
    if name in main and not fuzz[name] <= main[name]
)
profiles = [
    tomllib.loads((root / manifest).read_text()).get("profile", {}).get("release")
    for manifest in ("Cargo.toml", "fuzz/Cargo.toml")
]
if drift:
    print("fuzz: fuzz/Cargo.lock has other versions than Cargo.lock, compiled again:", ", ".join(drift))
    print("fuzz: to share them: cp Cargo.lock fuzz/Cargo.lock && cargo metadata --manifest-path fuzz/Cargo.toml >/dev/null")
if profiles[0] != profiles[1]:
    print("fuzz: fuzz/Cargo.toml's [profile.release] differs from the workspace's: every dependency is compiled again; copy the workspace's")
