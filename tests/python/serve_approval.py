"""The official MCP Python SDK (mcp 2.3.0) as the client of `mcp-sandbox serve` answering the
approval questions of calls that a policy `ask` rule matches, with an elicitation callback.
Driven by tests/serve_approval.rs.

usage: serve_approval.py MODE <mcp-sandbox> <config> [serve args...]

MODE: approve | approve_tool | deny | never | no_capability | cancel | parallel
Prints one JSON line: {"outcome": the execute_code structuredContent (or null),
"questions": the elicitation messages seen, "schema": the first requested schema,
"cancelled": whether the server withdrew an open question (notifications/cancelled)}.
"""

import asyncio
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

CODE = """
const r = [];
for (const m of ["one", "two"]) {
  try { r.push(await mcp.fixture.echo({message: m})); }
  catch (e) { r.push([e.code, e.message]); }
}
return r;
"""


# Works ~200 ms of CPU first, so its runner is recognisable among pre-started (idle) ones.
BUSY_CODE = "let x = 0; for (let i = 0; i < 3e6; i++) x += i;\n" + CODE


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def stat(pid):
    """(comm, state, utime+stime ticks) or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    head, rest = text.rsplit(") ", 1)
    fields = rest.split()
    return head.split(" (", 1)[1], fields[0], int(fields[11]) + int(fields[12])


def busy_runners():
    """Runners (grandchildren of this process, under serve) that used >= 30 ms of CPU."""
    found = []
    for serve in children(os.getpid()):
        for r in children(serve):
            s = stat(r)
            if s and s[0] == "sandbox-runner" and s[2] >= 3:
                found.append(r)
    return found


def alive(pid):
    s = stat(pid)
    return s is not None and s[1] not in ("Z", "X")


async def main() -> None:
    mode, exe, config = sys.argv[1:4]
    extra = sys.argv[4:]
    questions = []
    schema = []
    cancelled = []
    asked = asyncio.Event()

    inflight = [0, 0]  # now, most at once

    async def on_elicit(context, params):
        questions.append(params.message)
        schema.append(params.requested_schema)
        asked.set()
        if mode == "parallel":
            inflight[0] += 1
            inflight[1] = max(inflight[1], inflight[0])
            await anyio.sleep(0.2)
            inflight[0] -= 1
            return types.ElicitResult(action="accept", content={"decision": "approve once"})
        if mode == "approve":
            return types.ElicitResult(action="accept", content={"decision": "approve once"})
        if mode == "approve_tool":
            return types.ElicitResult(
                action="accept",
                content={"decision": "approve this tool for the rest of this execution"},
            )
        if mode == "deny":
            return types.ElicitResult(
                action="accept", content={"decision": "deny", "reason": "not on a Friday"}
            )
        if mode == "no_decision":
            # A client that fills in the form wrongly: "yes" is not one of the choices.
            return types.ElicitResult(action="accept", content={"decision": "yes"})
        # never / cancel: nobody answers. The server withdraws the question with
        # notifications/cancelled, which makes the SDK cancel this handler.
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        return types.ElicitResult(action="cancel")

    params = StdioServerParameters(
        command=exe, args=["serve", "--config", config, *extra], env=dict(os.environ)
    )
    kwargs = {}
    if mode != "no_capability":
        kwargs["elicitation_callback"] = on_elicit
    outcome = None
    report = {}
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], **kwargs) as session:
            await session.initialize()
            if mode == "cancel":
                async with anyio.create_task_group() as tg:
                    async def call():
                        await session.call_tool("execute_code", {"code": BUSY_CODE})

                    tg.start_soon(call)
                    await asyncio.wait_for(asked.wait(), 20)
                    runners = busy_runners()
                    tg.cancel_scope.cancel()
                left = runners
                for _ in range(150):
                    left = [r for r in runners if alive(r)]
                    if not left:
                        break
                    await anyio.sleep(0.02)
                report["runners_during_question"] = len(runners)
                report["runners_left"] = len(left)
                # The server must still serve after the cancellation.
                r = await session.call_tool("execute_code", {"code": "return 41 + 1"})
                outcome = r.structured_content
                await anyio.sleep(0.3)
            elif mode == "parallel":
                # Three calls waiting at once in one execution, and a second execution.
                code = ("return await Promise.all([mcp.fixture.echo({message: 'a'}), "
                        "mcp.fixture.echo({message: 'b'}), mcp.fixture.echo({message: 'c'})])")
                results = [None, None]

                async def one(i):
                    results[i] = await session.call_tool("execute_code", {"code": code})

                async with anyio.create_task_group() as tg:
                    tg.start_soon(one, 0)
                    tg.start_soon(one, 1)
                outcome = results[0].structured_content
                report["second"] = results[1].structured_content["result"]
                report["most_at_once"] = inflight[1]
            else:
                r = await session.call_tool("execute_code", {"code": CODE})
                outcome = r.structured_content
    print(json.dumps({
        "outcome": outcome,
        "questions": questions,
        "schema": schema[0] if schema else None,
        "cancelled": bool(cancelled),
        **report,
    }))


if __name__ == "__main__":
    asyncio.run(main())
