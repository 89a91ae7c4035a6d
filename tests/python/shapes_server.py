"""A stdio MCP server on the official MCP Python SDK (mcp 2.3.0, MCPServer) whose answers have
the shapes the value boundaries must keep, for tests/value_boundaries.rs. Over stdio, or over
streamable HTTP with `--http PORT` (prints "listening on port PORT" to stderr when ready).

Tools:
- nested {levels} -> structuredContent nested `levels` levels deep: {"k": {"k": … 1}};
- ordered -> structuredContent {"zeta": 1, "alpha": 2, "mid": {"y": 1, "b": 2}}, keys in that
  (not alphabetical) order, as every MCP SDK keeps them.
"""

import json
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

server = MCPServer("shapes")


def answer(value) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(value))],
        structured_content=value,
    )


@server.tool(structured_output=False)
def nested(levels: int) -> CallToolResult:
    """A value nested `levels` levels deep."""
    value = 1
    for _ in range(levels):
        value = {"k": value}
    return answer(value)


@server.tool(structured_output=False)
def ordered() -> CallToolResult:
    """An object whose keys are not in alphabetical order."""
    return answer({"zeta": 1, "alpha": 2, "mid": {"y": 1, "b": 2}})


def serve_http(port: int) -> None:
    import uvicorn

    uv = uvicorn.Server(
        uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    original_startup = uv.startup

    async def startup(*args, **kwargs):
        await original_startup(*args, **kwargs)
        print(f"listening on port {port}", file=sys.stderr, flush=True)

    uv.startup = startup
    uv.run()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        serve_http(int(sys.argv[2]))
    else:
        server.run()
