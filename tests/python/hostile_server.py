"""A hostile stdio MCP server on the official MCP Python SDK (mcp 2.3.0, MCPServer): each tool
tries something a confined server must not be able to do and reports exactly what the kernel
said, for the tests/server_confine_*.rs tests.

Tools (each returns JSON text: {"ok": bool, "errno": "ENOENT"|..., ...}):
- read {path}: opens and reads the file (or lists the directory);
- write {path}: creates the file and writes "x";
- ptrace {pid}: PTRACE_ATTACH to pid, and whether /proc/<pid> is visible at all;
- syscall {name}: mount / bpf / keyctl / unshare / perf_event_open through libc;
- fork_bomb {limit}: forks sleeping children until refused or `limit` reached, then reaps them;
- fill {path, mb}: appends 1 MiB blocks to the file until refused or `mb` reached;
- fill_files {directory, count}: writes `count` synced 1 MiB files into the directory, 50 ms apart;
- run_copy {src, dest}: copies the executable `src` to `dest` and runs the copy;
- whoami: uid, gid, pid, ppid, hostname, HOME, TMPDIR, the working directory and the Landlock
  wrapper's report (MCP_SANDBOX_LANDLOCK).
"""

import ctypes
import errno
import json
import os
import signal
import socket
import time

from mcp.server.mcpserver import MCPServer

# A write past RLIMIT_FSIZE fails with EFBIG instead of killing the server.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

libc = ctypes.CDLL(None, use_errno=True)
server = MCPServer("hostile")


def refused(e: OSError, **more) -> str:
    return json.dumps({"ok": False, "errno": errno.errorcode.get(e.errno, str(e.errno)), **more})


@server.tool()
def read(path: str) -> str:
    """Reads a file (or lists a directory)."""
    try:
        if os.path.isdir(path):
            return json.dumps({"ok": True, "entries": sorted(os.listdir(path))})
        with open(path, "rb") as f:
            data = f.read(1 << 20)
        return json.dumps({"ok": True, "bytes": len(data), "text": data[:400].decode("utf-8", "replace")})
    except OSError as e:
        return refused(e)


@server.tool()
def write(path: str) -> str:
    """Creates a file and writes one byte."""
    try:
        with open(path, "w") as f:
            f.write("x")
        return json.dumps({"ok": True})
    except OSError as e:
        return refused(e)


@server.tool()
def ptrace(pid: int) -> str:
    """PTRACE_ATTACH to pid."""
    visible = os.path.exists(f"/proc/{pid}")
    r = libc.ptrace(16, pid, None, None)
    if r == 0:
        libc.ptrace(17, pid, None, None)
        return json.dumps({"ok": True, "visible": visible})
    e = ctypes.get_errno()
    return json.dumps({"ok": False, "errno": errno.errorcode.get(e, str(e)), "visible": visible})


SYSCALLS = {  # x86_64 numbers
    "mount": (165, lambda: (b"none", b"/tmp", b"tmpfs", 0, None)),
    "bpf": (321, lambda: (0, None, 0)),
    "keyctl": (250, lambda: (0, 0, 0, 0, 0)),
    "unshare": (272, lambda: (0x10000000,)),
    "perf_event_open": (298, lambda: (None, 0, -1, -1, 0)),
}


@server.tool()
def syscall(name: str) -> str:
    """Makes one system call a server never needs."""
    nr, args = SYSCALLS[name]
    r = libc.syscall(nr, *args())
    if r >= 0:
        return json.dumps({"ok": True})
    e = ctypes.get_errno()
    return json.dumps({"ok": False, "errno": errno.errorcode.get(e, str(e))})


@server.tool()
def fork_bomb(limit: int) -> str:
    """Forks sleeping children until refused or `limit`, then kills and reaps them."""
    children = []
    outcome = {"ok": True}
    try:
        while len(children) < limit:
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    except OSError as e:
        outcome = {"ok": False, "errno": errno.errorcode.get(e.errno, str(e.errno))}
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    for pid in children:
        os.waitpid(pid, 0)
    return json.dumps({**outcome, "forked": len(children)})


@server.tool()
def fill(path: str, mb: int) -> str:
    """Appends 1 MiB blocks until refused or `mb` MiB."""
    block = b"x" * (1 << 20)
    written = 0
    try:
        with open(path, "wb", buffering=0) as f:
            while written < mb:
                f.write(block)
                written += 1
        return json.dumps({"ok": True, "mb": written})
    except OSError as e:
        return refused(e, mb=written)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


@server.tool()
def fill_files(directory: str, count: int) -> str:
    """Writes `count` files of 1 MiB each into `directory`, each synced, 50 ms apart (a slow
    filler: a bound checked now and then must catch it before it is done)."""
    block = b"x" * (1 << 20)
    os.makedirs(directory, exist_ok=True)
    written = 0
    try:
        while written < count:
            with open(os.path.join(directory, f"f{written}"), "wb", buffering=0) as f:
                f.write(block)
                os.fsync(f.fileno())
            written += 1
            time.sleep(0.05)
        return json.dumps({"ok": True, "files": written})
    except OSError as e:
        return refused(e, files=written)


@server.tool()
def run_copy(src: str, dest: str) -> str:
    """Copies an executable and runs the copy."""
    try:
        with open(src, "rb") as f, open(dest, "wb") as g:
            g.write(f.read())
        os.chmod(dest, 0o755)
    except OSError as e:
        return refused(e, step="copy")
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(dest, [dest])
            except OSError as e:
                os._exit(100 + (e.errno or 0) % 100)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code >= 100:
            err = code - 100
            return json.dumps({"ok": False, "errno": errno.errorcode.get(err, str(err)), "step": "exec"})
        return json.dumps({"ok": True, "exit": code})
    except OSError as e:
        return refused(e, step="fork")


@server.tool()
def whoami() -> str:
    """Who and where the server is."""
    return json.dumps(
        {
            "uid": os.getuid(),
            "gid": os.getgid(),
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "hostname": socket.gethostname(),
            "home": os.environ.get("HOME"),
            "tmpdir": os.environ.get("TMPDIR"),
            "cwd": os.getcwd(),
            "landlock": os.environ.get("MCP_SANDBOX_LANDLOCK"),
        }
    )


if __name__ == "__main__":
    server.run()
