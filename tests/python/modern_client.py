"""The official MCP Python SDK's default `Client` (mode "auto": it probes `server/discover` and
speaks MCP 2026-07-28 to a server that offers it, with no session) beside clients pinned to the
legacy handshake, driving one `mcp-sandbox serve`. Driven by tests/session_handles*.rs.

usage: modern_client.py PLAN

PLAN is JSON:
  {"url": "http://…/mcp"                      (HTTP), or
   "stdio": [exe, config, state]              (each client starts its own `serve` over stdio),
   "clients": {NAME: {"token": T?, "mode": "auto" | "legacy" | "2026-07-28", "url": U?,
                      "elicit": [DECISION, …]?}},
   (a client's own "url" sends it to another gateway; with "elicit" it declares elicitation and
   answers each question with the next decision of the form — "approve once", "deny", … —,
   "decline", or an object (the content of a server's own form); the messages it was asked are reported under "elicited")
   "steps": [STEP, …]}
STEP is one of
  {"as": NAME, "call": TOOL, "args": {...}, "keep": {VAR: FIELD}}
      a tool call; "$VAR" anywhere in args is replaced by a kept value; "keep" keeps fields of
      this answer's structuredContent (e.g. {"h": "session", "e": "execution_id"});
  {"as": NAME, "call_once": TOOL, "args": {...}, "input_responses": {...}?,
   "request_state": S?, "keep_state": VAR?}
      one round of a call, driven by hand (the SDK does not retry): an input_required answer is
      reported as {"input_required": {"keys": [...], "request_state": S, "messages": [...]}}
      and "keep_state" keeps S as VAR and its first key as VAR_key; "$~VAR" is VAR with one
      character in its middle changed (a tampered value);
  {"sleep": MS}
  {"wait_file": PATH}   waits (60 s at most) until PATH exists: the test did something meanwhile
Prints one JSON line: {"versions": {NAME: negotiated protocol version}, "steps": [...]}, each
call step with is_error, out (structuredContent), text, or error {code, message, data} for a
protocol error.
"""

import asyncio
import contextlib
import json
import os
import sys

import mcp_types as types

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def tampered(s):
    i = len(s) // 2
    return s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1 :]


def substitute(value, kept):
    if isinstance(value, str) and value.startswith("$~") and value[2:] in kept:
        return tampered(kept[value[2:]])
    if isinstance(value, str) and value.startswith("$") and value[1:] in kept:
        return kept[value[1:]]
    if isinstance(value, dict):
        return {substitute(k, kept): substitute(v, kept) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, kept) for v in value]
    return value


async def call(client, step, kept):
    args = substitute(step.get("args", {}), kept)
    out = {"as": step["as"], "call": step["call"]}
    try:
        r = await asyncio.wait_for(client.call_tool(step["call"], args), 120)
    except MCPError as e:
        out["error"] = {"code": e.error.code, "message": e.error.message, "data": e.error.data}
        return out
    out["is_error"] = bool(r.is_error)
    out["out"] = r.structured_content
    out["text"] = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    for var, field in step.get("keep", {}).items():
        if r.structured_content and field in r.structured_content:
            kept[var] = r.structured_content[field]
    return out


async def call_once(client, step, kept):
    args = substitute(step.get("args", {}), kept)
    out = {"as": step["as"], "call_once": step["call_once"]}
    try:
        r = await asyncio.wait_for(
            client.session.call_tool(
                step["call_once"],
                args,
                input_responses=substitute(step.get("input_responses"), kept),
                request_state=substitute(step.get("request_state"), kept),
                allow_input_required=True,
            ),
            120,
        )
    except MCPError as e:
        out["error"] = {"code": e.error.code, "message": e.error.message, "data": e.error.data}
        return out
    if isinstance(r, types.InputRequiredResult):
        keys = sorted((r.input_requests or {}).keys())
        messages = [req.params.message for req in (r.input_requests or {}).values()]
        out["input_required"] = {"keys": keys, "request_state": r.request_state, "messages": messages}
        if step.get("keep_state"):
            kept[step["keep_state"]] = r.request_state
            if keys:
                kept[step["keep_state"] + "_key"] = keys[0]
        return out
    out["is_error"] = bool(r.is_error)
    out["out"] = r.structured_content
    return out


def elicitation(name, decisions, report):
    asked = report["elicited"].setdefault(name, [])

    async def on_elicit(context, params):
        asked.append(params.message)
        decision = decisions.pop(0) if decisions else "deny"
        if decision == "decline":
            return types.ElicitResult(action="decline")
        # A dict is the whole form's content (a server's own question).
        content = decision if isinstance(decision, dict) else {"decision": decision}
        return types.ElicitResult(action="accept", content=content)

    return on_elicit


def transport_of(plan, spec):
    url = spec.get("url", plan.get("url"))
    if url:
        headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    exe, config, state = plan["stdio"]
    return StdioServerParameters(
        command=exe, args=["serve", "--config", config, "--state", state], env=dict(os.environ)
    )


async def main() -> None:
    plan = json.loads(sys.argv[1])
    report = {"versions": {}, "steps": [], "elicited": {}}
    kept = {}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, spec in plan["clients"].items():
            kwargs = {}
            if "elicit" in spec:
                kwargs["elicitation_callback"] = elicitation(name, list(spec["elicit"]), report)
            client = Client(transport_of(plan, spec), mode=spec.get("mode", "auto"), **kwargs)
            clients[name] = await stack.enter_async_context(client)
            report["versions"][name] = clients[name].protocol_version
        for step in plan["steps"]:
            if "sleep" in step:
                await asyncio.sleep(step["sleep"] / 1000)
                continue
            if "wait_file" in step:
                for _ in range(600):
                    if os.path.exists(step["wait_file"]):
                        break
                    await asyncio.sleep(0.1)
                continue
            if "call_once" in step:
                report["steps"].append(await call_once(clients[step["as"]], step, kept))
                continue
            report["steps"].append(await call(clients[step["as"]], step, kept))
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
