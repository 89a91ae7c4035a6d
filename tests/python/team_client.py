"""The official MCP Python SDK (tests/python/requirements.txt) as an authenticated client of
`mcp-sandbox serve --http`. Driven by tests/serve_auth.rs, tests/serve_principal_policy.rs and
tests/audit_log.rs.

usage: team_client.py URL TOKEN CALLS
  TOKEN  a bearer token, or - for none
  CALLS  a JSON array of execute_code arguments, run in order in one session; an item
         {"tool": NAME, "arguments": {...}} calls another tool (save_capability, …)
  $TEAM_CA_FILE  for an https URL: the only CA certificate trusted

Prints one JSON line: {"results": [{"is_error": bool, "out": structuredContent}, ...]}, or
{"error": "...", "status": HTTP status or null} when the session could not be used.
"""

import asyncio
import json
import os
import ssl
import sys

import httpx2

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation


def status_of(e):
    """The HTTP status inside an exception (or exception group), if any."""
    seen = [e]
    while seen:
        x = seen.pop()
        response = getattr(x, "response", None)
        code = getattr(response, "status_code", None)
        if isinstance(code, int):
            return code
        seen.extend(getattr(x, "exceptions", []) or [])
        for nxt in (x.__cause__, x.__context__):
            if nxt is not None and nxt not in seen:
                seen.append(nxt)
    return None


async def main() -> None:
    url, token, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
    results = []
    try:
        ca = os.environ.get("TEAM_CA_FILE")
        http = (
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(30, read=300),
                verify=ssl.create_default_context(cafile=ca),
            )
            if ca
            else create_mcp_http_client(headers=headers)
        )
        async with http:
            async with streamable_http_client(url, http_client=http) as streams:
                async with ClientSession(
                    streams[0], streams[1], client_info=Implementation(name="team-client", version="1")
                ) as session:
                    await asyncio.wait_for(session.initialize(), 30)
                    for args in calls:
                        name = "execute_code"
                        if "tool" in args and "arguments" in args:
                            name, args = args["tool"], args["arguments"]
                        r = await asyncio.wait_for(session.call_tool(name, args), 60)
                        results.append({"is_error": bool(r.is_error), "out": r.structured_content})
    except BaseException as e:  # noqa: BLE001 - report whatever ended the session
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        print(json.dumps({"error": repr(e)[:2000], "status": status_of(e), "results": results}))
        return
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    asyncio.run(main())
