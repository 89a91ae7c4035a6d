#!/usr/bin/env bash
# Runs the test suite several times with two CPU burners beside it (`stress-ng --cpu 2`, Debian's
# `stress-ng` package), to show that no test depends on the machine's speed (issue 42;
# CONTRIBUTING.md, "Tests and the machine's speed"). The burners are started before the
# first run and always stopped on exit (a trap), however the script ends.
#
#   scripts/stress-test.sh                     # 3 runs of the whole suite, release profile
#   RUNS=1 scripts/stress-test.sh -E 'test(/shutdown::/)'   # extra arguments go to nextest
#   PROFILE=inner scripts/stress-test.sh       # the inner-loop build (target/inner)
#
# Environment: RUNS (default 3), PROFILE (default release, as scripts/test.sh; `inner` or any
# cargo profile), TEST_THREADS (default 4, as scripts/test.sh), BURNERS (default 2).
# It builds what the profile needs first (`cargo build --workspace --bins`: the tests spawn
# those binaries), then runs `cargo nextest run` RUNS times (the test targets only, as scripts/test.sh:
# `--lib --bins --tests`, no examples), printing each run's result and a
# summary; it exits non-zero if any run failed. It does not run scripts/setup.sh: run it (or
# scripts/test.sh) once first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs="${RUNS:-3}"
profile="${PROFILE:-release}"
threads="${TEST_THREADS:-4}"
burners="${BURNERS:-2}"
case "$runs" in '' | *[!0-9]* | 0)
    echo "stress-test: RUNS must be a positive integer, not '$runs'" >&2
    exit 2
    ;;
esac
command -v stress-ng >/dev/null || {
    echo "stress-test: stress-ng not found (Debian: apt-get install stress-ng)" >&2
    exit 2
}
cargo nextest --version >/dev/null 2>&1 || {
    echo "stress-test: cargo-nextest not found (cargo install cargo-nextest)" >&2
    exit 2
}

echo "stress-test: building the workspace's binaries (profile $profile)"
cargo build --profile "$profile" --workspace --bins

stress_pid=""
stop_burners() {
    if [ -n "$stress_pid" ]; then
        # stress-ng stops its workers when its parent gets SIGTERM.
        kill -TERM "$stress_pid" 2>/dev/null || true
        wait "$stress_pid" 2>/dev/null || true
        stress_pid=""
    fi
}
trap stop_burners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "stress-test: starting stress-ng --cpu $burners"
stress-ng --cpu "$burners" --quiet &
stress_pid=$!

results=()
failed=0
for i in $(seq 1 "$runs"); do
    echo "stress-test: run $i of $runs (nextest, profile $profile, $threads test threads, $burners CPU burners)"
    start=$(date +%s)
    if cargo nextest run --cargo-profile "$profile" --workspace --lib --bins --tests --no-fail-fast \
        --test-threads "$threads" "$@"; then
        status="passed"
    else
        status="FAILED"
        failed=$((failed + 1))
    fi
    line="run $i: $status in $(($(date +%s) - start)) s"
    echo "stress-test: $line"
    results+=("$line")
done
stop_burners

echo "stress-test: summary ($burners CPU burners, profile $profile)"
for line in "${results[@]}"; do
    echo "  $line"
done
if [ "$failed" -gt 0 ]; then
    echo "stress-test: $failed of $runs runs failed"
    exit 1
fi
echo "stress-test: all $runs runs passed"
