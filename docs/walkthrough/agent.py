"""An agent's side of `mcp-sandbox serve`: the official MCP Python SDK starts the gateway over
stdio (as Claude Desktop or any MCP client would, from the config snippet in
docs/walkthrough.md), lists its tools and sends one script through `execute_code`.

usage: python agent.py [MCP_SANDBOX]   (default: target/release/mcp-sandbox, from the repo root)
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SCRIPT = """
const file = await mcp.filesystem.read_text_file({ path: "notes.txt" });
console.log("read", file.content.length, "characters");
return file.content.split("\\n").filter(Boolean);
"""


async def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/mcp-sandbox"
    # The SDK passes a server only a few variables unless told: pass ours, so that `serve` uses
    # the same state file ($XDG_DATA_HOME) as the commands before.
    server = StdioServerParameters(
        command=binary,
        args=["serve", "--config", "docs/walkthrough/mcp.json"],
        env=dict(os.environ),
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("tools:", ", ".join(sorted(t.name for t in tools.tools)))
            result = await session.call_tool("execute_code", {"code": SCRIPT})
            print("isError:", result.is_error)
            print("what the model reads (text content):")
            for block in result.content:
                print(block.text)
            outcome = result.structured_content
            print("structuredContent.result:", json.dumps(outcome["result"]))
            print("calls:", [t["tool"] for t in outcome["traces"] if t["type"] == "tool_end"])


asyncio.run(main())
