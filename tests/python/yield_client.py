"""The official MCP Python SDK (tests/python/requirements.txt) as a client of `mcp-sandbox serve`
for yielded executions (execute_code's yield_after_ms, wait_execution, cancel_execution).
Driven by tests/serve_yield.rs.

usage: yield_client.py stdio <mcp-sandbox> <config> <state> STEPS
       yield_client.py http <url> <serve pid> STEPS

STEPS is a JSON array run in order; each step is one of
  {"call": TOOL, "args": {...}, "session": NAME?, "progress": bool?, "save": KEY?}
      a tool call; "$KEY" anywhere in args is replaced by the execution_id saved under KEY;
      "save" keeps this answer's execution_id under KEY;
  {"sleep": MS}
  {"runners": KEY}        the serve process's runners that have used CPU, kept under KEY;
  {"gone": KEY, "within_ms": MS}   whether they all exit within MS.
Sessions are opened by name on first use (HTTP; stdio has one session, "A"). Prints one JSON
line: {"tools": {name: description}, "steps": [...]}, each call step with elapsed_ms, is_error,
out (structuredContent), text, progress messages, or error {code, message, data} for a protocol
error.
"""

import asyncio
import contextlib
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    head, rest = s.rsplit(") ", 1)
    comm = head.split(" (", 1)[1]
    fields = rest.split()
    return comm, int(fields[1]), int(fields[11]) + int(fields[12])


def children(pid):
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            st = stat(int(e))
            if st and st[1] == pid:
                out.append((int(e), st[0], st[2]))
    return out


def busy_runners(serve_pid):
    """Runners of serve that have used at least 30 ms of CPU (pooled ones have used none)."""
    return [p for p, comm, ticks in children(serve_pid) if comm == "sandbox-runner" and ticks >= 3]


def substitute(value, saved):
    if isinstance(value, str) and value.startswith("$") and value[1:] in saved:
        return saved[value[1:]]
    if isinstance(value, dict):
        return {k: substitute(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    return value


async def call(session, step, saved):
    args = substitute(step.get("args", {}), saved)
    progress = []

    async def on_progress(p, total, message):
        progress.append([p, message])

    cb = on_progress if step.get("progress") else None
    started = time.monotonic()
    out = {"call": step["call"]}
    try:
        r = await asyncio.wait_for(session.call_tool(step["call"], args, progress_callback=cb), 120)
    except MCPError as e:
        out["error"] = {"code": e.error.code, "message": e.error.message, "data": e.error.data}
        out["elapsed_ms"] = (time.monotonic() - started) * 1000
        return out
    out["elapsed_ms"] = (time.monotonic() - started) * 1000
    out["is_error"] = bool(r.is_error)
    out["out"] = r.structured_content
    out["text"] = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    if cb:
        await asyncio.sleep(0.2)  # notifications sent just before the answer
        out["progress"] = progress
    if "save" in step and r.structured_content and "execution_id" in r.structured_content:
        saved[step["save"]] = r.structured_content["execution_id"]
    return out


async def drive(open_session, serve_pid, steps):
    sessions = {}
    saved = {}
    runners = {}
    report = {"steps": []}
    async with contextlib.AsyncExitStack() as stack:

        async def session_named(name):
            if name not in sessions:
                s = await stack.enter_async_context(open_session(name))
                await asyncio.wait_for(s.initialize(), 30)
                sessions[name] = s
                if "tools" not in report:
                    tools = await s.list_tools()
                    report["tools"] = {t.name: t.description for t in tools.tools}
                    report["schemas"] = {t.name: t.input_schema for t in tools.tools}
            return sessions[name]

        await session_named("A")
        for step in steps:
            if "sleep" in step:
                await asyncio.sleep(step["sleep"] / 1000)
                report["steps"].append({"slept": step["sleep"]})
            elif "runners" in step:
                runners[step["runners"]] = busy_runners(serve_pid())
                report["steps"].append({"runners": runners[step["runners"]]})
            elif "gone" in step:
                pids = runners[step["gone"]]
                end = time.monotonic() + step["within_ms"] / 1000
                while any(stat(p) for p in pids) and time.monotonic() < end:
                    await asyncio.sleep(0.02)
                report["steps"].append({"gone": not any(stat(p) for p in pids), "pids": pids})
            else:
                s = await session_named(step.get("session", "A"))
                report["steps"].append(await call(s, step, saved))
    return report


@contextlib.asynccontextmanager
async def stdio_session(exe, config, state):
    params = StdioServerParameters(
        command=exe, args=["serve", "--config", config, "--state", state], env=dict(os.environ)
    )
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            yield session


@contextlib.asynccontextmanager
async def http_session(url):
    async with create_mcp_http_client() as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                yield session


def stdio_serve_pid():
    kids = [p for p, comm, _ in children(os.getpid()) if comm == "mcp-sandbox"]
    return kids[0] if kids else -1


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        exe, config, state, steps = sys.argv[2:6]
        opened = []

        def open_session(name):
            if opened:
                raise SystemExit("stdio has one session")
            opened.append(name)
            return stdio_session(exe, config, state)

        report = await drive(open_session, stdio_serve_pid, json.loads(steps))
    elif mode == "http":
        url, pid, steps = sys.argv[2:5]
        report = await drive(lambda _name: http_session(url), lambda: int(pid), json.loads(steps))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
