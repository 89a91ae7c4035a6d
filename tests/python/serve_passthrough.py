"""The official MCP Python SDK (mcp 2.3.0) as the client of `mcp-sandbox serve`, seeing what a
downstream server says while an execution's call runs: its progress notifications as progress of
the `execute_code` request, its log messages in the outcome's logs. Driven by
tests/serve_passthrough.rs.

usage: serve_passthrough.py <mcp-sandbox> <config> CODE MODE
MODE: with_token | without_token (progress) | answering | not_answering (a client with and
without elicitation and sampling callbacks, for the downstream server's requests).
Prints one JSON line: {"outcome": structuredContent, "progress": [[progress, total, message]…],
"asked": [what the callbacks were asked], "asked_params": [each request's params, whole]}. With
MCP_RAW_LOG set, every byte `serve` wrote to the client is also copied to that file.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main() -> None:
    exe, config, code, mode = sys.argv[1:5]
    progress = []

    async def on_progress(p, total, message):
        progress.append([p, total, message])

    asked = []
    asked_params = []

    async def on_elicit(context, params):
        asked.append(["elicit", params.message])
        asked_params.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if "name" in params.requested_schema.get("properties", {}):  # the everything server
            return types.ElicitResult(action="accept", content={"name": "Ada"})
        return types.ElicitResult(action="accept", content={"colour": "green"})

    async def on_sample(context, params):
        asked.append(["sample", params.messages[0].content.text])
        asked_params.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="hi from the client"),
            model="test-model",
        )

    kwargs = {}
    if mode == "answering":
        kwargs = {"elicitation_callback": on_elicit, "sampling_callback": on_sample}
    command, args = exe, ["serve", "--config", config]
    if os.environ.get("MCP_RAW_LOG"):
        # The same server, its stdout also copied byte for byte to MCP_RAW_LOG.
        command, args = "sh", ["-c", 'exec "$0" "$@" | tee -a "$MCP_RAW_LOG"', exe, *args]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], **kwargs) as session:
            await session.initialize()
            cb = on_progress if mode in ("with_token", "answering") else None
            r = await session.call_tool("execute_code", {"code": code}, progress_callback=cb)
            await asyncio.sleep(0.2)  # notifications written just before the answer
    print(json.dumps({"outcome": r.structured_content, "progress": progress, "asked": asked, "asked_params": asked_params}))


if __name__ == "__main__":
    asyncio.run(main())
