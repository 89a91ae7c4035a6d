"""An MCP 2026-07-28 server on the official MCP Python SDK (mcp 2.3.0, MCPServer over stateless
streamable HTTP) whose tool asks its user through `input_required` (SEP-2322) instead of a
server-to-client request, for tests/input_required_downstream.rs.

usage: mrtr_server.py PORT

`confirm(text)`: without an answer it returns `input_required` asking "Send TEXT?" (a form with
a boolean `ok`) and requestState "asked:TEXT"; retried with the answer, it returns
"ACTION ok=OK state=STATE" (what it received). Prints "listening on port PORT" to stderr
when ready.
"""

import sys

import mcp_types as t
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("mrtr-server")


@server.tool()
async def confirm(text: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
    """Asks the user whether to send `text`."""
    answers = ctx.input_responses or {}
    if "ok" not in answers:
        form = t.ElicitRequestFormParams(
            message=f"Send {text}?",
            requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        )
        return t.InputRequiredResult(
            input_requests={"ok": t.ElicitRequest(params=form)}, request_state=f"asked:{text}"
        )
    a = answers["ok"]
    action = getattr(a, "action", None) or a.get("action")
    content = getattr(a, "content", None) if not isinstance(a, dict) else a.get("content")
    ok = (content or {}).get("ok")
    said = f"{action} ok={ok} state={ctx.request_state}"
    return t.CallToolResult(content=[t.TextContent(type="text", text=said)])


def main() -> None:
    port = int(sys.argv[1])
    app = server.streamable_http_app(stateless_http=True)
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    original_startup = uv.startup

    async def startup(*args, **kwargs):
        await original_startup(*args, **kwargs)
        print(f"listening on port {port}", file=sys.stderr, flush=True)

    uv.startup = startup
    uv.run()


if __name__ == "__main__":
    main()
