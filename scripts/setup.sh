#!/usr/bin/env bash
# Installs everything the tests need, from a fresh clone, and is safe to run again:
#   - the pinned reference MCP servers and TypeScript (npm ci, from package-lock.json),
#   - a Python venv at .venv with tests/python/requirements.txt (the official MCP Python SDK),
#   - Chromium (Debian's `chromium`, with apt-get, only when it is missing) for tests/ui_web.rs,
#   - one release build of the workspace: the binaries (mcp-sandbox, sandbox-runner, the fixtures),
#     the test binaries and the benchmark, with one feature set so nothing is compiled twice.
#   - PostgreSQL's server binaries (Debian's postgresql package) when initdb is missing.
# Needs only the Rust toolchain, node/npm and python3 (and apt-get as root for PostgreSQL and Chromium when missing).
# Nothing is downloaded at test time.
# `scripts/setup.sh --no-build` installs everything but builds nothing (CI times the build apart).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=1
[[ "${1:-}" == "--no-build" ]] && build=0

say() { printf 'setup [%3ds]: %s\n' "$SECONDS" "$*"; }
need() {
    command -v "$1" >/dev/null 2>&1 || { say "missing '$1' ($2)" >&2; exit 1; }
}
# Content hash of the given files, used to skip steps whose inputs did not change.
stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

need cargo "install the Rust toolchain: https://rustup.rs"
need node "install Node.js >= 20"
need npm "install npm (comes with Node.js)"
need python3 "install Python >= 3.10"

# --- PostgreSQL (the tests of the PostgreSQL state store start servers of their own) ---
# Only when no initdb is found: Debian's `postgresql` package, through apt-get (needs root).
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
    say "postgresql present"
elif command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    say "apt-get install postgresql"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    # The package starts a cluster of its own; the tests do not use it.
    command -v service >/dev/null 2>&1 && service postgresql stop >/dev/null 2>&1 || true
else
    say "missing PostgreSQL (initdb): install Debian's postgresql package (apt-get install postgresql)" >&2
    exit 1
fi

# --- bubblewrap: every stdio MCP server starts confined in it (tools/catalog/confine) ---
if command -v bwrap >/dev/null 2>&1; then
    say "bubblewrap present"
elif command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    say "apt-get install bubblewrap"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
else
    say "missing bubblewrap (bwrap): install Debian's bubblewrap package (apt-get install bubblewrap)" >&2
    exit 1
fi

# --- npm: reference MCP servers + TypeScript, exactly as locked ---
npm_stamp="$(stamp_of package.json package-lock.json)"
if [[ -f node_modules/.setup-stamp && "$(cat node_modules/.setup-stamp)" == "$npm_stamp" ]]; then
    say "node_modules up to date"
else
    say "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$npm_stamp" > node_modules/.setup-stamp
fi

# --- Python venv with the MCP Python SDK ---
py_stamp="$(stamp_of tests/python/requirements.txt)"
if [[ -x .venv/bin/python && -f .venv/.setup-stamp && "$(cat .venv/.setup-stamp)" == "$py_stamp" ]]; then
    say ".venv up to date"
else
    if [[ ! -x .venv/bin/python ]]; then
        say "python3 -m venv .venv"
        python3 -m venv .venv || {
            say "could not create a venv (on Debian/Ubuntu: apt-get install python3-venv)" >&2
            exit 1
        }
    fi
    say "pip install -r tests/python/requirements.txt"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
    echo "$py_stamp" > .venv/.setup-stamp
fi

# --- Chromium for the web view's browser test (tests/ui_web.rs); apt-get only when missing ---
if command -v chromium >/dev/null 2>&1; then
    say "chromium present"
elif command -v apt-get >/dev/null 2>&1; then
    say "apt-get install chromium"
    sudo_=""
    [[ $(id -u) -eq 0 ]] || sudo_="sudo"
    $sudo_ apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq chromium >/dev/null
else
    say "missing 'chromium' (the browser test needs it; install Debian's chromium package)" >&2
    exit 1
fi

# --- mold, the linker scripts/linker.sh uses when present (apt-get only when missing) ---
# Optional: without it the build links with the system linker, only slower.
if command -v mold >/dev/null 2>&1; then
    say "mold present"
elif command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    say "apt-get install mold"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mold >/dev/null 2>&1 ||
        say "could not install mold: linking with the system linker"
else
    say "mold not found: linking with the system linker (apt-get install mold links faster)"
fi

# --- The deployment's tests (tests/container_image.rs, tests/deploy_files.rs): Debian's podman
# and mmdebstrap build and run the image offline, systemd-analyze verifies the unit. apt-get only
# when missing; without root the image test says it is skipped and why. ---
deploy_missing=()
command -v podman >/dev/null 2>&1 || deploy_missing+=(podman)
command -v mmdebstrap >/dev/null 2>&1 || deploy_missing+=(mmdebstrap)
command -v runc >/dev/null 2>&1 || deploy_missing+=(runc)
command -v systemd-analyze >/dev/null 2>&1 || deploy_missing+=(systemd)
command -v newuidmap >/dev/null 2>&1 || deploy_missing+=(uidmap)
if [[ ${#deploy_missing[@]} == 0 ]]; then
    say "podman, mmdebstrap, systemd-analyze present"
elif command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    say "apt-get install ${deploy_missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${deploy_missing[@]}" runc uidmap >/dev/null
else
    say "missing ${deploy_missing[*]}: the image test is skipped (apt-get install ${deploy_missing[*]})"
fi

# --- A subordinate id range for uid 65534, the user tests/isolation_non_root.rs runs the gateway
# as: a gateway that is not root maps its runners to the last id of its user's range
# (docs/deploy.md). Added once, as root; a range the machine already gives that uid is kept. ---
if [[ "$(id -u)" == 0 ]]; then
    for f in /etc/subuid /etc/subgid; do
        if ! grep -qE '^(65534|nobody):' "$f" 2>/dev/null; then
            say "$f: range 300000-365535 for uid 65534 (tests/isolation_non_root.rs)"
            echo "65534:300000:65536" >>"$f"
        fi
    done
fi

# --- Rust (tests spawn the binaries from target/release) ---
# The binaries are the ones the README's `cargo build --release --workspace` makes (the same
# features: Cargo.toml unifies bitflags' so the dev-dependencies change no dependency), so after
# that command this step compiles only the test harnesses and the benchmark. Not the examples:
# examples/profile is a profiling aid no test runs (76 s of CPU in CI's build; `cargo clippy
# --all-targets` still compiles it, and `cargo build --release --example profile` builds it).
# In CI, `--timings` leaves target/cargo-timings/cargo-timing.html: where the build's time went.
if [[ $build == 0 ]]; then
    say "done (--no-build)"
    exit 0
fi
timings=()
[[ "${CI:-}" == true ]] && timings=(--timings)
say "cargo build --release --workspace --lib --bins --tests --benches"
cargo build --release --workspace --lib --bins --tests --benches --quiet "${timings[@]}"

say "done"
