"""Two tenants' clients at once against `mcp-sandbox serve --http`, each the official MCP Python
SDK with an elicitation callback that records what it was asked (and accepts). Driven by
tests/serve_tenant_isolation.rs.

usage: tenant_clients.py URL PLAN
  PLAN  a JSON array of clients: {"name", "token", "delay_s", "calls": [execute_code arguments]};
        each client opens its own session, waits delay_s, then makes its calls in order.

Prints one JSON line: {name: {"results": [structuredContent…], "asked": [elicitation messages]}}
or {name: {"error": "..."}} for a client whose session failed.
"""

import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation


async def client(url, plan):
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    results = []
    try:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {plan['token']}"})
        async with http:
            async with streamable_http_client(url, http_client=http) as streams:
                async with ClientSession(
                    streams[0],
                    streams[1],
                    client_info=Implementation(name=plan["name"], version="1"),
                    elicitation_callback=on_elicit,
                ) as session:
                    await asyncio.wait_for(session.initialize(), 30)
                    await asyncio.sleep(plan.get("delay_s", 0))
                    for args in plan["calls"]:
                        r = await asyncio.wait_for(session.call_tool("execute_code", args), 60)
                        results.append(r.structured_content)
                    # Whatever a server sends a moment after the last answer.
                    await asyncio.sleep(plan.get("linger_s", 0))
    except BaseException as e:  # noqa: BLE001 - report whatever ended the session
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return {"error": repr(e)[:2000], "results": results, "asked": asked}
    return {"results": results, "asked": asked}


async def main() -> None:
    url, plans = sys.argv[1], json.loads(sys.argv[2])
    outs = await asyncio.gather(*(client(url, p) for p in plans))
    print(json.dumps({p["name"]: o for p, o in zip(plans, outs)}))


if __name__ == "__main__":
    asyncio.run(main())
