"""The official MCP Python SDK as the client of `mcp-sandbox serve` (stdio) whose configured
server is remote (streamable HTTP): the agent's code calls the remote tools through the
sandbox. Driven by tests/remote_via_serve.rs.

usage: remote_via_serve.py <mcp-sandbox> <config>

Prints the structuredContent of each execute_code answer as one JSON line.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CODES = [
    # A remote tool, called like a stdio one.
    'return await mcp.ev["get-sum"]({ a: 2, b: 3 })',
    # Schema validation and policy hold for it too.
    'try { await mcp.ev["get-sum"]({ a: "two" }) } catch (e) { return e.code }',
    'try { await mcp.ev["get-env"]({}) } catch (e) { return e.code }',
]


async def main() -> None:
    exe, config = sys.argv[1:3]
    params = StdioServerParameters(command=exe, args=["serve", "--config", config], env=dict(os.environ))
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            found = await session.call_tool("search_tools", {"query": "sum"})
            print(json.dumps({"search": "\n".join(getattr(c, "text", "") for c in found.content)}))
            for code in CODES:
                r = await session.call_tool("execute_code", {"code": code})
                print(json.dumps(r.structured_content))


asyncio.run(main())
