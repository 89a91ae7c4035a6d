"""A remote MCP server on the official MCP Python SDK (mcp 2.3.0, MCPServer over streamable HTTP)
that demands `Authorization: Bearer <token>`, for tests/remote_secrets.rs and tests/remote_tls.rs.

usage: bearer_server.py PORT [CERTFILE KEYFILE]

The expected token is read from the environment variable BEARER_SERVER_TOKEN. Requests without
it get 401 with `WWW-Authenticate: Bearer`. Prints "listening on port PORT" to stderr when ready.
With CERTFILE and KEYFILE it serves HTTPS.
"""

import os
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

TOKEN = os.environ["BEARER_SERVER_TOKEN"]

server = MCPServer("bearer-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ValueError(f"failed: {reason}")


def require_bearer(app):
    expected = f"Bearer {TOKEN}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != expected:
                await send({
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain")],
                })
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    port = int(sys.argv[1])
    tls = {}
    if len(sys.argv) == 4:
        tls = {"ssl_certfile": sys.argv[2], "ssl_keyfile": sys.argv[3]}
    app = require_bearer(server.streamable_http_app())
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **tls)
    uv = uvicorn.Server(config)

    original_startup = uv.startup

    async def startup(*args, **kwargs):
        await original_startup(*args, **kwargs)
        print(f"listening on port {port}", file=sys.stderr, flush=True)

    uv.startup = startup
    uv.run()


if __name__ == "__main__":
    main()
