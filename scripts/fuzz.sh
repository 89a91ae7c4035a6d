#!/usr/bin/env bash
# Bounded libFuzzer run of every target in fuzz/ (the [[bin]]s of fuzz/Cargo.toml: frame decoder,
# host session on arbitrary runner bytes, …).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30)
#        scripts/fuzz.sh --build-only          (build the targets, run none: CI builds them
#                                               beside the tests, then runs them)
#
# Built with plain cargo and the coverage flags that cargo-fuzz passes (`-s none`: no sanitizer,
# since ASan needs a nightly std that cannot be downloaded here), so a fresh machine does not
# compile cargo-fuzz first; `cargo fuzz run <target>` works the same if you have it. `--target`
# keeps the instrumentation off build scripts and proc macros. The fuzz crate's release profile is
# opt-level 1 with debug assertions (fuzz/Cargo.toml): a quicker compile, and checks stay on.
# Seeds live in fuzz/corpus/<target> (kept small in git); new inputs go to a temporary
# directory, crashes to fuzz/artifacts/<target>.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_only=0
if [[ "${1:-}" == "--build-only" ]]; then
    build_only=1
    shift
fi
secs="${1:-30}"

triple="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"

cargo build --manifest-path fuzz/Cargo.toml --release --target "$triple" --bins --quiet
[[ $build_only == 1 ]] && exit 0

# The session target replays its input through the fake runner; any profile's build will do.
fake="${FAKE_RUNNER:-}"
if [[ -z "$fake" ]]; then
    for p in target/release/fake-runner target/debug/fake-runner; do
        [[ -x "$p" ]] && { fake="$PWD/$p"; break; }
    done
fi
if [[ -z "$fake" ]]; then
    env -u RUSTFLAGS cargo build -p mcp-sandbox-fixtures --bin fake-runner --quiet
    fake="$PWD/target/debug/fake-runner"
fi
export FAKE_RUNNER="$fake"

bin_dir="fuzz/target/$triple/release"
targets="$(awk '/^\[\[bin\]\]/ {b=1} b && /^name = / {gsub(/"/, "", $3); print $3; b=0}' fuzz/Cargo.toml)"

for target in $targets; do
    out="$(mktemp -d)"
    mkdir -p "fuzz/artifacts/$target" "fuzz/corpus/$target"
    echo "fuzzing $target for $secs s"
    if ! "$bin_dir/$target" "$out" "fuzz/corpus/$target" \
        -artifact_prefix="fuzz/artifacts/$target/" -max_total_time="$secs" -max_len=32768 \
        -print_final_stats=1 >"$out.log" 2>&1; then
        tail -n 40 "$out.log"
        echo "fuzz target $target failed; the input is in fuzz/artifacts/$target" >&2
        exit 1
    fi
    tail -n 3 "$out.log"
    rm -rf "$out" "$out.log"
done
