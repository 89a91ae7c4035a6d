// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package.json) pinned to
// MCP 2026-07-28 (`versionNegotiation: {mode: {pin}}`: no initialize, no session) against
// `mcp-sandbox serve --http`. Driven by tests/session_handles_typescript.rs.
//
// usage: node modern_client.mjs <url> <token>
//
// Prints one JSON line: {"version", "tools": {name: schema has `session`}, "steps": [...]}, each
// step {out: structuredContent, text} or {error: {code, message, data}}.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token] = process.argv.slice(2);
const client = new Client(
  { name: "ts-v2-probe", version: "2.4.0" },
  { versionNegotiation: { mode: { pin: "2026-07-28" } } },
);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);

const kept = {};
const substitute = (v) =>
  typeof v === "string" && v.startsWith("$") && v.slice(1) in kept
    ? kept[v.slice(1)]
    : v && typeof v === "object"
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x)]))
      : v;

async function step(name, args, keep = {}) {
  try {
    const r = await client.callTool({ name, arguments: substitute(args) });
    for (const [k, field] of Object.entries(keep)) kept[k] = r.structuredContent?.[field];
    const text = r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
    return { out: r.structuredContent, text, is_error: !!r.isError };
  } catch (e) {
    return { error: { code: e.code, message: e.message, data: e.data } };
  }
}

const { tools } = await client.listTools();
const report = {
  version: client.getNegotiatedProtocolVersion(),
  tools: Object.fromEntries(tools.map((t) => [t.name, "session" in (t.inputSchema.properties ?? {})])),
  steps: [],
};
report.steps.push(await step("execute_code", { code: "await store('k', 41); return 'kept'" }, { h: "session" }));
report.steps.push(await step("execute_code", { code: "return await load('k')", session: "$h" }));
report.steps.push(await step("execute_code", { code: "return await load('k')" }));
report.steps.push(await step("execute_code", { code: "return 1", session: "session_" + "f".repeat(64) }));
report.steps.push(await step("execute_code", { code: "await new Promise(r => setTimeout(r, 300)); return 'late'", yield_after_ms: 20, session: "$h" }, { e: "execution_id" }));
report.steps.push(await step("wait_execution", { execution_id: "$e", session: "$h", timeout_ms: 20000 }));
await client.close();
console.log(JSON.stringify(report));
