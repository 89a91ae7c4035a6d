"""The official MCP Python SDK (tests/python/requirements.txt) as a client of `mcp-sandbox serve`,
measuring what each answer costs the client. Driven by tests/serve_output_budget.rs and
tests/serve_state.rs (a list of calls in one session).

usage: budget_client.py stdio <mcp-sandbox> <config> <state> CALLS
       budget_client.py http <url> <token or -> CALLS

CALLS is a JSON array of execute_code arguments, run in order in one session; an item
{"tool": NAME, "arguments": {...}} calls another tool; an item's "_meta" object is sent as the
request's `_meta` (e.g. a W3C traceparent). Prints one JSON line:
{"tools": {name: description}, "results": [{"is_error", "out", "text", "bytes"} or
{"protocol_error": message}]}, where `bytes` is the text content (UTF-8) and the
structuredContent (compact JSON, UTF-8) together: what the answer puts in the client's context.

A string in CALLS may name part of an earlier answer as {{R<i>:<JSON pointer>}} (the
structuredContent of result i): it is replaced by that string before the call is sent
(tests/serve_secrets.rs passes back a placeholder the gateway returned). With MCP_RAW_LOG set,
every byte `serve` wrote to the client over stdio is also copied to that file.
"""

import asyncio
import json
import os
import re
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def cost(text, structured):
    body = b"" if structured is None else json.dumps(
        structured, separators=(",", ":"), ensure_ascii=False
    ).encode()
    return len(text.encode()) + len(body)


def pointer(value, path):
    for part in path.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def resolve(value, results):
    if isinstance(value, str):
        return re.sub(
            r"\{\{R(\d+):([^}]*)\}\}",
            lambda m: str(pointer(results[int(m.group(1))]["out"], m.group(2))),
            value,
        )
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    return value


async def drive(session, calls):
    await asyncio.wait_for(session.initialize(), 30)
    tools = await session.list_tools()
    report = {"tools": {t.name: t.description for t in tools.tools}, "results": []}
    for args in calls:
        name = "execute_code"
        args = dict(args)
        meta = args.pop("_meta", None)
        if "tool" in args and "arguments" in args:
            name, args = args["tool"], args["arguments"]
        args = resolve(args, report["results"])
        try:
            r = await asyncio.wait_for(session.call_tool(name, args, meta=meta), 120)
        except MCPError as e:
            report["results"].append({"protocol_error": str(e)})
            continue
        text = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
        report["results"].append({
            "is_error": bool(r.is_error),
            "out": r.structured_content,
            "text": text,
            "bytes": cost(text, r.structured_content),
        })
    return report


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        exe, config, state, calls = sys.argv[2:6]
        command, args = exe, ["serve", "--config", config, "--state", state]
        raw = os.environ.get("MCP_RAW_LOG")
        if raw:
            # The same server, its stdout also copied byte for byte to `raw`.
            command, args = "sh", ["-c", 'exec "$0" "$@" | tee -a "$MCP_RAW_LOG"', exe, *args]
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                report = await drive(session, json.loads(calls))
    elif mode == "http":
        url, token, calls = sys.argv[2:5]
        headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    report = await drive(session, json.loads(calls))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
