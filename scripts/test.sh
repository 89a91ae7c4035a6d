#!/usr/bin/env bash
# Runs every test from a fresh clone: installs what the tests need (scripts/setup.sh: pinned npm
# MCP servers, a Python venv with the MCP SDK, the workspace binaries), then `cargo test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
cargo test --workspace "$@"
