// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package.json) pinned to
// MCP 2026-07-28 and declaring elicitation, answering the approval questions of `execute_code`
// that come as `input_required` (its multi-round-trip driver retries the call). Driven by
// tests/input_required_typescript.rs.
//
// usage: node modern_approval.mjs <url> <token> <code> <decision>…
//
// Prints one JSON line: {"version", "asked": [message…], "out": structuredContent} or
// {"version", "asked", "error": {code, message}}.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token, code, ...decisions] = process.argv.slice(2);
const client = new Client(
  { name: "ts-v2-approver", version: "2.4.0" },
  {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
    capabilities: { elicitation: { form: {} } },
  },
);
const asked = [];
client.setRequestHandler("elicitation/create", async (request) => {
  asked.push(request.params.message);
  const decision = decisions.shift() ?? "deny";
  return { action: "accept", content: { decision } };
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const report = { version: client.getNegotiatedProtocolVersion(), asked };
try {
  const r = await client.callTool({ name: "execute_code", arguments: { code } });
  report.out = r.structuredContent;
} catch (e) {
  report.error = { code: e.code, message: e.message };
}
await client.close();
console.log(JSON.stringify(report));
