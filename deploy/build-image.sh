#!/usr/bin/env bash
# Builds the mcp-sandbox OCI image without a container registry: a root made from Debian's
# packages with mmdebstrap, the two release binaries, imported with `podman import`. It is the same
# image deploy/Containerfile describes (which needs a registry for its base images).
#
#   deploy/build-image.sh [--tag NAME] [--bin-dir DIR] [--suite SUITE] [--tar PATH]
#
#   --tag NAME     the image's name (default localhost/mcp-sandbox:latest)
#   --bin-dir DIR  where mcp-sandbox and sandbox-runner are (default target/release: build them
#                  first with `cargo build --release --workspace`)
#   --suite SUITE  the Debian suite of the base (default bookworm)
#   --tar PATH     also keep the root as a tar file (for `podman import` elsewhere)
#
# Needs root (or a user with subordinate ids for mmdebstrap's unshare mode), mmdebstrap and podman
# (Debian: apt-get install mmdebstrap podman). Prints the image's size when done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tag=localhost/mcp-sandbox:latest
bin_dir=target/release
suite=bookworm
keep_tar=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --tag) tag="$2"; shift 2 ;;
        --bin-dir) bin_dir="$2"; shift 2 ;;
        --suite) suite="$2"; shift 2 ;;
        --tar) keep_tar="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "build-image: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
say() { printf 'build-image: %s\n' "$*" >&2; }
for tool in mmdebstrap podman; do
    command -v "$tool" >/dev/null 2>&1 || {
        say "missing '$tool': apt-get install $tool"
        exit 1
    }
done
for bin in mcp-sandbox sandbox-runner; do
    [[ -x "$bin_dir/$bin" ]] || {
        say "no $bin_dir/$bin: build it first (cargo build --release --workspace) or pass --bin-dir"
        exit 1
    }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mode=root
[[ "$(id -u)" == 0 ]] || mode=unshare

# The base: only what the binaries load (glibc, libgcc's unwinder) and the CA certificates the
# gateway trusts for remote MCP servers, OpenAPI sources and PostgreSQL over TLS. `extract` runs no
# maintainer script, so nothing runs in the root at build time; no shell, no package manager.
say "mmdebstrap $suite (libc6, libgcc-s1, ca-certificates, bubblewrap)"
mmdebstrap --quiet --mode="$mode" --variant=extract \
    --include=libc6,libgcc-s1,ca-certificates,bubblewrap \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$suite" "$root"

# What ca-certificates' maintainer script would make: the bundle rustls-native-certs reads.
mkdir -p "$root/etc/ssl/certs"
cat "$root"/usr/share/ca-certificates/mozilla/*.crt > "$root/etc/ssl/certs/ca-certificates.crt"
# Users: root, and mcp-sandbox (10001) for running as non-root (then the runner keeps that uid:
# the `uid` layer is unavailable; docs/deploy.md).
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nmcp-sandbox:x:10001:10001:mcp-sandbox:/var/lib/mcp-sandbox:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nmcp-sandbox:x:10001:\nnogroup:x:65534:\n' > "$root/etc/group"
# Nothing of apt's or dpkg's state is needed at run time.
rm -rf "$root/var/lib/apt" "$root/var/cache/apt" "$root/var/lib/dpkg" "$root/var/log"/* \
    "$root/usr/share/ca-certificates/mozilla" "$root/usr/share/lintian" "$root/usr/share/gcc"
install -d -m 0755 "$root/usr/local/bin"
install -m 0755 "$bin_dir/mcp-sandbox" "$bin_dir/sandbox-runner" "$root/usr/local/bin/"
# The release build keeps line tables for backtraces; the image keeps the symbols only.
if command -v strip >/dev/null 2>&1; then
    strip --strip-debug "$root/usr/local/bin/mcp-sandbox" "$root/usr/local/bin/sandbox-runner"
fi
install -d -m 0755 "$root/etc/mcp-sandbox"
install -d -m 0700 -o 10001 -g 10001 "$root/var/lib/mcp-sandbox"
install -d -m 1777 "$root/tmp"
echo '{"mcpServers": {}}' > "$root/etc/mcp-sandbox/mcp.json"

tar="$work/root.tar"
tar --numeric-owner -C "$root" -cf "$tar" .
if [[ -n "$keep_tar" ]]; then
    cp "$tar" "$keep_tar"
fi
say "podman import as $tag"
podman import --quiet \
    --change 'ENTRYPOINT ["/usr/local/bin/mcp-sandbox"]' \
    --change 'CMD ["serve", "--config", "/etc/mcp-sandbox/mcp.json", "--http", "127.0.0.1:8787", "--require-isolation", "all"]' \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    --change 'ENV MCP_SANDBOX_RUNNER=/usr/local/bin/sandbox-runner' \
    --change 'WORKDIR /var/lib/mcp-sandbox' \
    --change 'USER 0' \
    --change 'EXPOSE 8787/tcp' \
    --change 'STOPSIGNAL SIGTERM' \
    --change 'LABEL org.opencontainers.image.title=mcp-sandbox' \
    --change "LABEL org.opencontainers.image.description=runs AI-written code in locked-down runners; run it with --security-opt seccomp=deploy/seccomp.json" \
    "$tar" "$tag" >/dev/null
size="$(podman image inspect --format '{{.Size}}' "$tag")"
say "built $tag: $((size / 1024 / 1024)) MiB ($size bytes)"
echo "$tag"
