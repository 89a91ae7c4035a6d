#!/usr/bin/env bash
# Runs every test from a fresh clone: installs what the tests need (scripts/setup.sh: pinned npm
# MCP servers, a Python venv with the MCP SDK, one release build of the workspace's binaries,
# tests and benchmark), then runs the tests against that build.
#
# The tests run the release binaries (the ones users run, and the ones the benchmark measures),
# so CI compiles the dependency tree once for both. cargo-nextest (when installed) runs the test
# tests side by side, each in its own process; without it, `cargo test` runs them one at a time.
# nextest is given the test targets (`--lib --bins --tests`: every target with tests) so it does
# not also build the examples, which `cargo test` builds by default and no test runs (the
# `cargo test` fallback keeps its defaults: it also runs the doc tests).
# Extra arguments go to the test runner (e.g. `scripts/test.sh -E 'test(/serve_yield/)'`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --release --workspace --lib --bins --tests --no-fail-fast --test-threads "${TEST_THREADS:-4}" "$@"
else
    # One process runs every test of a binary; some count the process's own children and fds.
    echo "cargo-nextest not found: running the tests one at a time (cargo install cargo-nextest)"
    cargo test --release --workspace "$@" -- --test-threads 1
fi
