"""Run inside a network namespace whose only way out is the egress bridge (tests/egress_proxy.rs).

argv: CA file, the allowed HTTPS URL, the direct address "ip:port" of the same server, then
targets to try with a raw CONNECT. Prints one JSON line per attempt.
"""
import json
import os
import socket
import ssl
import sys
import urllib.request

ca, url, direct, targets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
proxy_host, proxy_port = "127.0.0.1", 3128


def out(**kw):
    print(json.dumps(kw), flush=True)


def attempt(name, fn):
    try:
        out(what=name, ok=True, value=fn())
    except Exception as e:  # the test asserts on the message
        out(what=name, ok=False, error=f"{type(e).__name__}: {e}")


def with_httpx():
    import httpx2

    with httpx2.Client(verify=ssl.create_default_context(cafile=ca), trust_env=True) as c:
        r = c.get(url)
        return [r.status_code, r.text]


def with_urllib():
    ctx = ssl.create_default_context(cafile=ca)
    with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
        return [r.status, r.read().decode()]


def direct_connect():
    host, port = direct.rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=5).close()
    return "connected"


def raw_connect(target):
    s = socket.create_connection((proxy_host, proxy_port), timeout=20)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
        if data.startswith(b"HTTP/1.1 200"):
            break
    s.close()
    return data.decode(errors="replace")


def socks(host, port):
    s = socket.create_connection((proxy_host, proxy_port), timeout=20)
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    name = host.encode()
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + int(port).to_bytes(2, "big"))
    reply = s.recv(10)
    s.close()
    return reply[1]


attempt("env", lambda: {k: os.environ.get(k) for k in ["HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]})
attempt("httpx", with_httpx)
attempt("urllib", with_urllib)
attempt("direct", direct_connect)
host_port = url.split("/")[2]
attempt("socks_allowed", lambda: socks(*host_port.rsplit(":", 1)))
attempt("socks_link_local", lambda: socks("169.254.169.254", 80))
for t in targets:
    attempt("connect " + t, lambda t=t: raw_connect(t))
