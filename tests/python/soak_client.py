"""The official MCP Python SDK as a well-behaved client during tests/serve_soak.rs: over
streamable HTTP, calls execute_code `return 1+1` every 250 ms for SECONDS seconds and prints the
slowest answer. Usage: soak_client.py <url> <seconds>"""

import asyncio
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, seconds = sys.argv[1], float(sys.argv[2])
    slowest, calls = 0.0, 0
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                t = time.monotonic()
                r = await session.call_tool("execute_code", {"code": "return 1+1"})
                took = time.monotonic() - t
                assert r.structured_content["result"] == 2, r
                slowest = max(slowest, took)
                calls += 1
                await asyncio.sleep(0.25)
    print(f"CALLS {calls} SLOWEST_MS {slowest * 1000:.0f}")


if __name__ == "__main__":
    asyncio.run(main())
