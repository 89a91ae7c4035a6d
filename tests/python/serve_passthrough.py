"""The official MCP Python SDK (mcp 2.3.0) as the client of `mcp-sandbox serve`, seeing what a
downstream server says while an execution's call runs: its progress notifications as progress of
the `execute_code` request, its log messages in the outcome's logs. Driven by
tests/serve_passthrough.rs.

usage: serve_passthrough.py <mcp-sandbox> <config> CODE [with_token|without_token]
Prints one JSON line: {"outcome": structuredContent, "progress": [[progress, total, message]…]}.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    exe, config, code, mode = sys.argv[1:5]
    progress = []

    async def on_progress(p, total, message):
        progress.append([p, total, message])

    params = StdioServerParameters(command=exe, args=["serve", "--config", config], env=dict(os.environ))
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            cb = on_progress if mode == "with_token" else None
            r = await session.call_tool("execute_code", {"code": code}, progress_callback=cb)
            await asyncio.sleep(0.2)  # notifications written just before the answer
    print(json.dumps({"outcome": r.structured_content, "progress": progress}))


if __name__ == "__main__":
    asyncio.run(main())
