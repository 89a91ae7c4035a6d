"""Raw JSON-RPC over HTTP in MCP 2026-07-28 (no SDK has a task API yet): a client that declares
the tasks extension (io.modelcontextprotocol/tasks) and elicitation in each request's _meta, for
tests/execute_code_tasks.rs.

usage: raw_tasks.py URL TOKEN PLAN

PLAN is a JSON list of steps {"method", "params", "keep": VAR?, "until": [STATUS…]?}: "$VAR"
anywhere in params is replaced by a kept task id ("$~VAR": that id with its end changed);
"keep" keeps the answer's taskId, "keep_key" the first key of its inputRequests; "until" repeats the step (every 100 ms, 30 s at most) until
the answer's status is one of them. Prints one JSON line: the answers, in order (an error
answer as {"error": {...}}).
"""

import json
import sys
import time

import urllib.error
import urllib.request

URL, TOKEN, PLAN = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    },
}


def substitute(value, kept):
    if isinstance(value, str) and value.startswith("$~") and value[2:] in kept:
        v = kept[value[2:]]
        return v[:-3] + ("BBB" if v.endswith("AAA") else "AAA")
    if isinstance(value, str) and value.startswith("$") and value[1:] in kept:
        return kept[value[1:]]
    if isinstance(value, dict):
        return {substitute(k, kept): substitute(v, kept) for k, v in value.items()}
    return value


def rpc(n, method, params):
    headers = {
        "authorization": f"Bearer {TOKEN}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if method == "tools/call":
        headers["mcp-name"] = params["name"]
    elif method.startswith("tasks/"):
        headers["mcp-name"] = params["taskId"]
    body = {"jsonrpc": "2.0", "id": n, "method": method, "params": {**params, "_meta": META}}
    req = urllib.request.Request(URL, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            text, kind = r.read().decode(), r.headers.get("content-type", "")
    except urllib.error.HTTPError as e:
        text, kind = e.read().decode(), e.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = [d for d in datas if d][-1]
    msg = json.loads(text)
    return msg.get("result") if "result" in msg else {"error": msg.get("error")}


def main():
    kept, out, n = {}, [], 0
    if True:
        for step in PLAN:
            deadline = time.time() + 30
            while True:
                n += 1
                answer = rpc(n, step["method"], substitute(step.get("params", {}), kept))
                until = step.get("until")
                if not until or answer.get("status") in until or "error" in answer or time.time() > deadline:
                    break
                time.sleep(0.1)
            if step.get("keep") and "taskId" in answer:
                kept[step["keep"]] = answer["taskId"]
            if step.get("keep_key") and answer.get("inputRequests"):
                kept[step["keep_key"]] = sorted(answer["inputRequests"])[0]
            out.append(answer)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
