#!/bin/bash
# RUSTC_WRAPPER of scripts/fuzz.sh: libFuzzer's coverage instrumentation (the flags cargo-fuzz
# passes), `--cfg fuzzing`, debug assertions and overflow checks for the project's own crates
# (the runner's protocol, the host's session and script reading, the fuzz targets). Every other
# crate is compiled exactly as the release build compiles it, so the fuzz build reuses the release
# build's files for them (scripts/fuzz.sh): no dependency is built twice.
# Called by cargo as `fuzz-rustc.sh <rustc> <args…>` (with a workspace wrapper in between for the
# fuzz crate itself). Bash, not sh: dash drops cargo's variables whose names are not identifiers.
rustc="$1"
shift
crate=""
prev=""
for arg in "$@"; do
    [[ "$prev" == "--crate-name" ]] && crate="$arg"
    prev="$arg"
done
case "$crate" in
mcp_sandbox | sandbox_runner | mcp_sandbox_fuzz | frame_decoder | session_bytes | script_parse)
    exec "$rustc" "$@" -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
        -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
        -Cllvm-args=-sanitizer-coverage-pc-table \
        -Cllvm-args=-sanitizer-coverage-trace-compares \
        --cfg fuzzing -Cdebug-assertions=on -Coverflow-checks=on
    ;;
*)
    exec "$rustc" "$@"
    ;;
esac
