#!/usr/bin/env bash
# Bounded cargo-fuzz run of every target in fuzz/ (frame decoder, host session on arbitrary
# runner bytes). Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30)
#
# cargo-fuzz needs nightly flags; the stable toolchain accepts them with RUSTC_BOOTSTRAP=1.
# Sanitizers are off (-s none): ASan needs a nightly std build that cannot be downloaded here;
# libFuzzer's coverage instrumentation still works. Seeds live in fuzz/corpus/<target> (kept
# small in git); new inputs go to a temporary directory, crashes to fuzz/artifacts/<target>.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${1:-30}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz (once)"
    cargo install cargo-fuzz --locked
fi
# The session target replays its input through the fake runner.
cargo build -p mcp-sandbox-fixtures --bin fake-runner
export FAKE_RUNNER="$PWD/target/debug/fake-runner"

cd fuzz
for target in frame_decoder session_bytes; do
    cargo fuzz build -O -s none "$target"
    out="$(mktemp -d)"
    echo "fuzzing $target for $secs s"
    if ! cargo fuzz run -O -s none "$target" "$out" "corpus/$target" -- \
        -max_total_time="$secs" -max_len=32768 -print_final_stats=1 >"$out.log" 2>&1; then
        tail -n 40 "$out.log"
        echo "fuzz target $target failed; the input is in fuzz/artifacts/$target" >&2
        exit 1
    fi
    tail -n 3 "$out.log"
    rm -rf "$out" "$out.log"
done
