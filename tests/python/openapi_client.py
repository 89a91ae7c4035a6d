"""The official MCP Python SDK (mcp 2.3.0) as the client of `mcp-sandbox serve` (stdio) whose
config has an OpenAPI server. Driven by tests/openapi_serve.rs and tests/openapi_large_spec.rs.

usage: openapi_client.py <mcp-sandbox> <config> <search query> <codes.json>

Prints JSON lines: {"search": the search_tools text}, then for each code of codes.json
{"outcome": execute_code's structuredContent, "hwm_before": KiB, "hwm_after": KiB} (the serve
process's VmHWM before and after the call), then {"questions": the approval questions asked}.
Approval questions (elicitation) are approved when they name createNote, denied otherwise.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def serve_hwm():
    """VmHWM (KiB) of this process's child that runs `serve`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(") ", 1)[1].split()[1])
            if ppid != os.getpid():
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"serve" not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return None


async def main() -> None:
    exe, config, query, codes_file = sys.argv[1:5]
    with open(codes_file) as f:
        codes = json.load(f)
    questions = []

    async def on_elicit(context, params):
        questions.append(params.message)
        if "createNote" in params.message:
            return types.ElicitResult(action="accept", content={"decision": "approve once"})
        return types.ElicitResult(action="accept", content={"decision": "deny", "reason": "not today"})

    params = StdioServerParameters(command=exe, args=["serve", "--config", config], env=dict(os.environ))
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], elicitation_callback=on_elicit) as session:
            await session.initialize()
            found = await session.call_tool("search_tools", {"query": query})
            print(json.dumps({"search": "\n".join(getattr(c, "text", "") for c in found.content)}), flush=True)
            for code in codes:
                before = serve_hwm()
                r = await session.call_tool("execute_code", {"code": code})
                print(json.dumps({"outcome": r.structured_content, "hwm_before": before, "hwm_after": serve_hwm()}), flush=True)
    print(json.dumps({"questions": questions}))


asyncio.run(main())
