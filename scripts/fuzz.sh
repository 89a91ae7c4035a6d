#!/usr/bin/env bash
# Bounded libFuzzer run of every target in fuzz/ (the [[bin]]s of fuzz/Cargo.toml: frame decoder,
# host session on arbitrary runner bytes, script parsing), side by side.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30)
#        scripts/fuzz.sh --build-only          (build the targets, run none: CI builds them
#                                               beside the tests, then runs them)
#
# Built with plain cargo (no cargo-fuzz to compile first; `cargo fuzz run <target>` works the
# same if you have it) into target/fuzz, which starts as a copy of target/release made of hard
# links: the fuzz build compiles every dependency exactly as the release build does (same lock,
# same profile, same features: scripts/fuzz-tree-check.py says where that stops holding), so it
# compiles only the project's own crates, which scripts/fuzz-rustc.sh instruments with the flags
# cargo-fuzz passes (`-s none`: no sanitizer, since ASan needs a nightly std that cannot be
# downloaded here) plus debug assertions and overflow checks. The dependencies are not
# instrumented: coverage guides the fuzzer through the project's code.
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

# Seed target/fuzz with the release build's files (hard links: no copy, no disk). Files already
# there are kept; cargo's lock file is never shared (two builds may run at once).
if [[ -d target/release/.fingerprint ]]; then
    mkdir -p target/fuzz/release
    cp -aln target/release/. target/fuzz/release/ 2>/dev/null ||
        echo "fuzz: not every file of target/release could be linked into target/fuzz; the build compiles what is missing"
    if [[ target/fuzz/release/.cargo-lock -ef target/release/.cargo-lock ]]; then
        rm -f target/fuzz/release/.cargo-lock
    fi
fi
python3 scripts/fuzz-tree-check.py
CARGO_TARGET_DIR="$PWD/target/fuzz" RUSTC_WRAPPER="$PWD/scripts/fuzz-rustc.sh" \
    cargo build --manifest-path fuzz/Cargo.toml --release --bins --quiet
[[ $build_only == 1 ]] && exit 0

# The session target replays its input through the fake runner; any profile's build will do.
fake="${FAKE_RUNNER:-}"
if [[ -z "$fake" ]]; then
    for p in target/release/fake-runner target/debug/fake-runner; do
        [[ -x "$p" ]] && { fake="$PWD/$p"; break; }
    done
fi
if [[ -z "$fake" ]]; then
    cargo build -p mcp-sandbox-fixtures --bin fake-runner --quiet
    fake="$PWD/target/debug/fake-runner"
fi
export FAKE_RUNNER="$fake"

bin_dir="target/fuzz/release"
targets="$(awk '/^\[\[bin\]\]/ {b=1} b && /^name = / {gsub(/"/, "", $3); print $3; b=0}' fuzz/Cargo.toml)"

# Every target at once, each for $secs seconds: they are independent single-threaded processes.
declare -A pids logs
for target in $targets; do
    out="$(mktemp -d)"
    logs[$target]="$out"
    mkdir -p "fuzz/artifacts/$target" "fuzz/corpus/$target"
    echo "fuzzing $target for $secs s"
    "$bin_dir/$target" "$out" "fuzz/corpus/$target" \
        -artifact_prefix="fuzz/artifacts/$target/" -max_total_time="$secs" -max_len=32768 \
        -print_final_stats=1 >"$out.log" 2>&1 &
    pids[$target]=$!
done
failed=""
for target in $targets; do
    out="${logs[$target]}"
    if wait "${pids[$target]}"; then
        echo "== $target"
        tail -n 5 "$out.log"
    else
        echo "== $target FAILED"
        tail -n 40 "$out.log"
        failed="$failed $target"
    fi
    rm -rf "$out" "$out.log"
done
if [[ -n "$failed" ]]; then
    echo "fuzz target(s)$failed failed; the inputs are in fuzz/artifacts/<target>" >&2
    exit 1
fi
