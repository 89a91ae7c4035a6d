#!/bin/bash
# cargo's `build.rustc-workspace-wrapper` (.cargo/config.toml): called as
# `rustc-workspace-wrapper.sh <rustc> <args…>` for the workspace's own crates only.
#
# The one thing it changes: a test harness (`--test`: a crate's unit tests, tests/integration.rs)
# is compiled at opt-level 0, whatever the profile says. The tests run the release binaries (what
# users run, what the benchmark measures); the harnesses only drive them and check logic, and at
# opt-level 3 they were most of the tests' build: the library's unit tests 193 s and the
# integration crate 154 s of CPU on the CI machine, against 42 s and 25 s at opt-level 0
# (CONTRIBUTING.md). Dependencies are never wrapped: they stay at the profile's level.
# The benchmark (`harness = false`) is not a `--test` crate and keeps the profile's level.
#
# Bash, not sh: cargo's CARGO_BIN_EXE_<name-with-dashes> variables must reach rustc, and dash
# drops variables whose names are not shell identifiers.
rustc="$1"
shift
for arg in "$@"; do
    if [[ "$arg" == "--test" ]]; then
        exec "$rustc" "$@" -C opt-level=0
    fi
done
exec "$rustc" "$@"
