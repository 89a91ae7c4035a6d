"""The official MCP Python SDK (mcp 2.3.0) as the client of `mcp-sandbox serve` answering the
approval questions of calls that a policy `ask` rule matches, with an elicitation callback.
Driven by tests/serve_approval.rs.

usage: serve_approval.py MODE <mcp-sandbox> <config> [serve args...]

MODE: approve | approve_tool | deny | never | no_capability | cancel
Prints one JSON line: {"outcome": the execute_code structuredContent (or null),
"questions": the elicitation messages seen, "schema": the first requested schema,
"cancelled": whether the client saw notifications/cancelled for its question}.
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


async def main() -> None:
    mode, exe, config = sys.argv[1:4]
    extra = sys.argv[4:]
    questions = []
    schema = []
    cancelled = []
    asked = asyncio.Event()

    async def on_elicit(context, params):
        questions.append(params.message)
        schema.append(params.requested_schema)
        asked.set()
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
        # never / cancel: nobody answers.
        await anyio.sleep(60)
        return types.ElicitResult(action="cancel")

    async def on_message(message):
        if isinstance(message, types.ServerNotification) or hasattr(message, "root"):
            root = getattr(message, "root", message)
            if getattr(root, "method", None) == "notifications/cancelled":
                cancelled.append(True)

    params = StdioServerParameters(
        command=exe, args=["serve", "--config", config, *extra], env=dict(os.environ)
    )
    kwargs = {"message_handler": on_message}
    if mode != "no_capability":
        kwargs["elicitation_callback"] = on_elicit
    outcome = None
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], **kwargs) as session:
            await session.initialize()
            if mode == "cancel":
                async with anyio.create_task_group() as tg:
                    async def call():
                        await session.call_tool("execute_code", {"code": CODE})

                    tg.start_soon(call)
                    await asyncio.wait_for(asked.wait(), 20)
                    tg.cancel_scope.cancel()
                # The server must still serve after the cancellation.
                r = await session.call_tool("execute_code", {"code": "return 41 + 1"})
                outcome = r.structured_content
                await anyio.sleep(0.3)
            else:
                r = await session.call_tool("execute_code", {"code": CODE})
                outcome = r.structured_content
    print(json.dumps({
        "outcome": outcome,
        "questions": questions,
        "schema": schema[0] if schema else None,
        "cancelled": bool(cancelled),
    }))


if __name__ == "__main__":
    asyncio.run(main())
