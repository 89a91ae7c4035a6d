"""A raw MCP 2026-07-28 server over plain HTTP (no SDK: the official SDK drops a question's own
`_meta` when it serialises `input_required`), for tests/relayed_question_redaction.rs: a server
that echoes what it was sent. Its one tool, `echo(text)`, answers `input_required` with an
elicitation whose message, schema description and `_meta` (a value and a key) all hold `text`;
retried with any answer, it returns "answered".

usage: echo_meta_server.py PORT — prints "listening on port PORT" to stderr when ready.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

META = {"io.modelcontextprotocol/serverInfo": {"name": "echo-meta", "version": "1"}}
TOOL = {
    "name": "echo",
    "description": "Asks the user about `text`, echoing it everywhere a question can carry it.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def result_of(method, params):
    if method == "server/discover":
        return {
            "cacheScope": "private",
            "capabilities": {"tools": {}},
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "ttlMs": 0,
            "_meta": META,
        }
    if method == "tools/list":
        return {"cacheScope": "private", "tools": [TOOL], "resultType": "complete", "ttlMs": 0, "_meta": META}
    if method == "tools/call":
        if params.get("inputResponses"):
            return {"content": [{"type": "text", "text": "answered"}], "resultType": "complete"}
        text = (params.get("arguments") or {}).get("text", "")
        question = {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": text,
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean", "description": text}}, "required": ["ok"]},
                "_meta": {"io.example/echo": text, "io.example/by-key": {text: [text]}},
            },
        }
        return {"resultType": "input_required", "inputRequests": {"ok": question}, "requestState": "echo"}
    return None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        if "id" not in body:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        result = result_of(body.get("method"), body.get("params") or {})
        if result is None:
            answer = {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "method not found"}}
        else:
            answer = {"jsonrpc": "2.0", "id": body["id"], "result": result}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()


def main():
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on port {port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
