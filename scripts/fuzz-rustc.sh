#!/bin/sh
# RUSTC_WRAPPER for scripts/fuzz.sh: adds libFuzzer's coverage instrumentation (the flags
# cargo-fuzz passes) only to the crates whose code the fuzz targets explore: the project's own
# (the runner's protocol, the host's session and script reading, the targets), the JavaScript
# parser and transformer they drive (oxc_*), and the JSON decoder under the frame decoder
# (serde_json). The rest of the tree (tokio, rustls, the MCP client, telemetry, ICU, …) is
# compiled plainly: no fuzz target reaches it with data worth guiding, and instrumenting it made
# the fuzz build the third-longest step of CI.
# Usage (by cargo): fuzz-rustc.sh <rustc> <args...>
rustc="$1"
shift
# Build scripts and proc macros run on the host without libFuzzer's runtime: cargo passes
# `--target` (scripts/fuzz.sh builds with one) only to the crates of the fuzz binaries.
crate=""
target=""
prev=""
for a in "$@"; do
    [ "$prev" = "--crate-name" ] && crate="$a"
    [ "$prev" = "--target" ] && target="$a"
    prev="$a"
done
[ -n "$target" ] || exec "$rustc" "$@"
case "$crate" in
mcp_sandbox | mcp_sandbox_fuzz | sandbox_runner | frame_decoder | session_bytes | script_parse | oxc_* | serde_json)
    exec "$rustc" "$@" -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
        -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
        -Cllvm-args=-sanitizer-coverage-pc-table \
        -Cllvm-args=-sanitizer-coverage-trace-compares
    ;;
*)
    exec "$rustc" "$@"
    ;;
esac
