"""The official MCP Python SDK (mcp 2.3.0) as a client of `mcp-sandbox serve --http` running in the
OCI image under podman, from outside the container. Driven by tests/container_image.rs.

usage: container_client.py <url>

Runs one script that calls the fixture server inside the container; prints "OK" and the outcome's
isolation layers as JSON when the result is right.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            code = "const r = await mcp.fixture.add({a: 40, b: 2}); return r;"
            r = await session.call_tool("execute_code", {"code": code})
            out = r.structured_content
            assert not r.is_error and out["success"] is True, out
            kinds = [(t["type"], t["tool"]) for t in out["traces"]]
            assert kinds == [("tool_start", "fixture:add"), ("tool_end", "fixture:add")], kinds
            print("OK")
            print(json.dumps({"result": out["result"], "isolation": out["metrics"]["isolation"]}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
