"""A stdio MCP server on the official MCP Python SDK that tries the network when asked, for
tests/server_network.rs (issue 59). Each tool returns JSON text.

- fetch {url, ca}: GET with httpx (the SDK's own client; trust_env, so HTTPS_PROXY) trusting `ca`;
- connect {target}: a raw `CONNECT target` to the proxy in HTTPS_PROXY, the answer's first line;
- direct {host, port}: a TCP connection without the proxy, and the errno it ends with.
"""

import errno
import json
import os
import socket
import ssl
from urllib.parse import urlparse

import httpx2
from mcp.server.mcpserver import MCPServer

server = MCPServer("net")


@server.tool()
def fetch(url: str, ca: str) -> str:
    """GET a URL through the environment's proxy."""
    try:
        with httpx2.Client(verify=ssl.create_default_context(cafile=ca), trust_env=True) as c:
            r = c.get(url, timeout=20)
            return json.dumps({"ok": True, "status": r.status_code, "body": r.text})
    except Exception as e:
        return json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"})


@server.tool()
def connect(target: str) -> str:
    """A raw CONNECT through the proxy: the first line of its answer and its body."""
    proxy = urlparse(os.environ["HTTPS_PROXY"])
    with socket.create_connection((proxy.hostname, proxy.port), timeout=20) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        data = b""
        # A refusal is answered and closed: read to the end. A tunnel stays open: stop at its head.
        while not (data.startswith(b"HTTP/1.1 200") and b"\r\n\r\n" in data):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    head, _, body = data.decode(errors="replace").partition("\r\n\r\n")
    return json.dumps({"status": head.split("\r\n")[0], "body": body.strip()})


@server.tool()
def direct(host: str, port: int) -> str:
    """A TCP connection that ignores the proxy."""
    try:
        socket.create_connection((host, port), timeout=5).close()
        return json.dumps({"ok": True})
    except OSError as e:
        return json.dumps({"ok": False, "errno": errno.errorcode.get(e.errno, str(e.errno))})


if __name__ == "__main__":
    server.run()
