#!/bin/sh
# The linker cargo calls (.cargo/config.toml): the C compiler driver, with mold when it is
# installed (Debian's `mold`; scripts/setup.sh installs it). Linking the host binary and the test
# binaries is several seconds each with GNU ld and a fraction of that with mold. Without mold the
# build links exactly as before, so nothing requires it.
if command -v mold >/dev/null 2>&1; then
    exec "${CC:-cc}" -fuse-ld=mold "$@"
fi
exec "${CC:-cc}" "$@"
