#!/usr/bin/env bash
# The inner loop: build the workspace's binaries in the `inner` profile (target/inner: dependencies
# optimized once, the project's own crates incremental; Cargo.toml [profile.inner]) and run the
# tests whose names
# match the given nextest filter, e.g.
#   scripts/dev-test.sh 'test(/policy_flows::/)'
#   scripts/dev-test.sh 'test(/^context::flow::/)'      # unit tests of one module
#   scripts/dev-test.sh                                  # every test, in the inner profile
# The tests spawn the binaries next to them (target/inner), so the binaries are built first.
# Needs what scripts/setup.sh installs (npm servers, .venv, PostgreSQL, Chromium) for the tests
# that use them; it does not run setup itself (that would build the release profile too).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
say() { printf 'dev-test [%3ds]: %s\n' "$SECONDS" "$*"; }
cargo nextest --version >/dev/null 2>&1 || {
    echo "cargo-nextest not found: cargo install cargo-nextest (or use cargo test)" >&2
    exit 1
}
say "cargo build --profile inner --workspace --bins"
cargo build --profile inner --workspace --bins --quiet
filter="${1:-all()}"
shift || true
say "cargo nextest run -E '$filter'"
cargo nextest run --cargo-profile inner --workspace --lib --bins --tests --no-fail-fast --test-threads "${TEST_THREADS:-4}" -E "$filter" "$@"
say "done"
