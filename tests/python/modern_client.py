"""The official MCP Python SDK's default `Client` (mode "auto": it probes `server/discover` and
speaks MCP 2026-07-28 to a server that offers it, with no session) beside clients pinned to the
legacy handshake, driving one `mcp-sandbox serve`. Driven by tests/session_handles*.rs.

usage: modern_client.py PLAN

PLAN is JSON:
  {"url": "http://…/mcp"                      (HTTP), or
   "stdio": [exe, config, state]              (each client starts its own `serve` over stdio),
   "clients": {NAME: {"token": T?, "mode": "auto" | "legacy" | "2026-07-28", "url": U?}},
   (a client's own "url" sends it to another gateway)
   "steps": [STEP, …]}
STEP is one of
  {"as": NAME, "call": TOOL, "args": {...}, "keep": {VAR: FIELD}}
      a tool call; "$VAR" anywhere in args is replaced by a kept value; "keep" keeps fields of
      this answer's structuredContent (e.g. {"h": "session", "e": "execution_id"});
  {"sleep": MS}
Prints one JSON line: {"versions": {NAME: negotiated protocol version}, "steps": [...]}, each
call step with is_error, out (structuredContent), text, or error {code, message, data} for a
protocol error.
"""

import asyncio
import contextlib
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def substitute(value, kept):
    if isinstance(value, str) and value.startswith("$") and value[1:] in kept:
        return kept[value[1:]]
    if isinstance(value, dict):
        return {k: substitute(v, kept) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, kept) for v in value]
    return value


async def call(client, step, kept):
    args = substitute(step.get("args", {}), kept)
    out = {"as": step["as"], "call": step["call"]}
    try:
        r = await asyncio.wait_for(client.call_tool(step["call"], args), 120)
    except MCPError as e:
        out["error"] = {"code": e.error.code, "message": e.error.message, "data": e.error.data}
        return out
    out["is_error"] = bool(r.is_error)
    out["out"] = r.structured_content
    out["text"] = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    for var, field in step.get("keep", {}).items():
        if r.structured_content and field in r.structured_content:
            kept[var] = r.structured_content[field]
    return out


def transport_of(plan, spec):
    url = spec.get("url", plan.get("url"))
    if url:
        headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    exe, config, state = plan["stdio"]
    return StdioServerParameters(
        command=exe, args=["serve", "--config", config, "--state", state], env=dict(os.environ)
    )


async def main() -> None:
    plan = json.loads(sys.argv[1])
    report = {"versions": {}, "steps": []}
    kept = {}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, spec in plan["clients"].items():
            client = Client(transport_of(plan, spec), mode=spec.get("mode", "auto"))
            clients[name] = await stack.enter_async_context(client)
            report["versions"][name] = clients[name].protocol_version
        for step in plan["steps"]:
            if "sleep" in step:
                await asyncio.sleep(step["sleep"] / 1000)
                continue
            report["steps"].append(await call(clients[step["as"]], step, kept))
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
