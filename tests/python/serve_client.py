"""The official MCP Python SDK (mcp 2.3.0, tests/python/requirements.txt) as a real client of
`mcp-sandbox serve`, over stdio or streamable HTTP. Driven by tests/serve_python_sdk.rs.

usage: serve_client.py stdio <mcp-sandbox> <config> <data-dir>
       serve_client.py http <url> <data-dir>

Exits 0 and prints "OK <transport>" when every check passed; an AssertionError otherwise.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def check(session: ClientSession, data_dir: str) -> None:
    init = await session.initialize()
    assert init.server_info.name == "mcp-sandbox", init

    tools = await session.list_tools()
    by_name = {t.name: t for t in tools.tools}
    assert sorted(by_name) == [
        "cancel_execution", "execute_code", "list_capabilities", "list_state", "save_capability", "search_tools", "wait_execution"
    ], sorted(by_name)
    desc = by_name["execute_code"].description
    for needle in ["async function", "return", "mcp.<server>.<tool>", ".code", "Object.keys(mcp)"]:
        assert needle in desc, (needle, desc)
    assert "Unavailable: broken" in desc, desc
    assert by_name["execute_code"].input_schema["required"] == ["code"]

    # A script that calls the reference filesystem server and returns a value.
    path = os.path.join(data_dir, "notes.txt")
    code = (
        "const f = await mcp.filesystem.read_text_file({ path });\n"
        "const lines = f.content.split('\\n');\n"
        "console.log('read', lines.length, 'lines');\n"
        "return { first: lines[0], count: lines.length };"
    )
    r = await session.call_tool("execute_code", {"code": code, "context": {"path": path}})
    assert not r.is_error, text_of(r)
    out = r.structured_content
    assert out["success"] is True, out
    assert out["result"] == {"first": "alpha", "count": 3}, out
    assert out["logs"] == [{"level": "log", "message": "read 3 lines"}], out
    kinds = [(t["type"], t["tool"]) for t in out["traces"]]
    assert kinds == [("tool_start", "filesystem:read_text_file"), ("tool_end", "filesystem:read_text_file")], kinds
    summary = text_of(r)
    assert summary.startswith("ok ("), summary
    assert '"first": "alpha"' in summary and "filesystem:read_text_file ok" in summary, summary

    # TypeScript input.
    r = await session.call_tool(
        "execute_code",
        {"code": "interface N { n: number }\nconst x: N = { n: 20 };\nreturn x.n * 2 + (await Promise.resolve(2));", "language": "typescript"},
    )
    assert not r.is_error, text_of(r)
    assert r.structured_content["result"] == 42, r.structured_content

    # A failing script: a tool result with is_error and the code, not a protocol error.
    r = await session.call_tool("execute_code", {"code": "await mcp.filesystem.read_text_file({ path: 5 });"})
    assert r.is_error is True, r
    err = r.structured_content["error"]
    assert err["code"] == "INVALID_ARGUMENTS", err
    assert '/path: 5 is not of type "string"' in err["message"], err
    assert text_of(r).startswith("error INVALID_ARGUMENTS: "), text_of(r)

    r = await session.call_tool("execute_code", {"code": "const x = ;", "language": "typescript"})
    assert r.is_error is True
    assert r.structured_content["error"]["code"] == "SYNTAX_ERROR", r.structured_content
    assert "line 1, column 11" in r.structured_content["error"]["message"], r.structured_content

    r = await session.call_tool("execute_code", {"code": "throw new Error('boom')"})
    assert r.is_error is True and r.structured_content["error"]["code"] == "RUNTIME_ERROR", r.structured_content

    # The policy (config deny) holds for agents too.
    r = await session.call_tool(
        "execute_code",
        {"code": "await mcp.filesystem.write_file({ path: path + '.x', content: 'no' })", "context": {"path": path}},
    )
    assert r.is_error is True and r.structured_content["error"]["code"] == "PERMISSION_DENIED", r.structured_content
    assert not os.path.exists(path + ".x")

    # The broken server is reported; the others work.
    r = await session.call_tool("execute_code", {"code": "return await mcp.broken.anything({})"})
    assert r.is_error is True, r.structured_content
    assert "broken" in r.structured_content["error"]["message"], r.structured_content
    assert "unavailable" in r.structured_content["error"]["message"], r.structured_content

    # search_tools: TypeScript declarations, best match first.
    r = await session.call_tool("search_tools", {"query": "read text file"})
    assert not r.is_error, text_of(r)
    ts = text_of(r)
    assert "declare const mcp: {" in ts and "read_text_file(args: {" in ts, ts
    assert "path: string;" in ts, ts
    assert "// mcp.broken is unavailable:" in ts, ts
    assert r.structured_content["tools"][0] == "filesystem:read_text_file", r.structured_content
    r = await session.call_tool("search_tools", {"server": "filesystem"})
    assert "@denied calls fail with PERMISSION_DENIED" in text_of(r), text_of(r)
    r = await session.call_tool("search_tools", {"server": "broken"})
    assert r.is_error is True and "MCP server 'broken' is unavailable" in text_of(r), text_of(r)


async def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        exe, config, data_dir = sys.argv[2:5]
        params = StdioServerParameters(command=exe, args=["serve", "--config", config], env=dict(os.environ))
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await check(session, data_dir)
    elif mode == "http":
        url, data_dir = sys.argv[2:4]
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await check(session, data_dir)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(f"OK {mode}")


if __name__ == "__main__":
    asyncio.run(main())
