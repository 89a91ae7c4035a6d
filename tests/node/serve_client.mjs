// The official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in package.json) as a real
// client of `mcp-sandbox serve`, over stdio or streamable HTTP. Driven by
// tests/serve_typescript_sdk.rs; the same checks as tests/python/serve_client.py makes with the
// Python SDK (list, call, search, errors, policy), then `execute_code` latency.
//
// usage: node serve_client.mjs stdio <mcp-sandbox> <config> <data-dir> <samples>
//        node serve_client.mjs http <url> <data-dir> <samples>
//
// Prints one JSON line {"ok": true, "mode", "p50_ms", "p99_ms", "n"} when every check passed;
// exits 1 with the failed check on stderr otherwise.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import assert from "node:assert/strict";
import path from "node:path";

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

async function check(client, dataDir) {
  assert.equal(client.getServerVersion().name, "mcp-sandbox");

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["cancel_execution", "execute_code", "list_capabilities", "list_state", "save_capability", "search_tools", "wait_execution"]);
  const exec = tools.find((t) => t.name === "execute_code");
  for (const needle of ["async function", "return", "mcp.<server>.<tool>", "Object.keys(mcp)"]) {
    assert.ok(exec.description.includes(needle), `execute_code's description lacks ${needle}`);
  }
  assert.deepEqual(exec.inputSchema.required, ["code"]);

  // A script that calls the reference filesystem server.
  const file = path.join(dataDir, "notes.txt");
  let r = await client.callTool({
    name: "execute_code",
    arguments: {
      code: "const f = await mcp.filesystem.read_text_file({ path });\n" +
        "console.log('read', f.content.split('\\n').length, 'lines');\n" +
        "return { first: f.content.split('\\n')[0] };",
      context: { path: file },
    },
  });
  assert.ok(!r.isError, text(r));
  assert.deepEqual(r.structuredContent.result, { first: "alpha" });
  assert.deepEqual(r.structuredContent.logs, [{ level: "log", message: "read 3 lines" }]);
  assert.deepEqual(
    r.structuredContent.traces.map((t) => [t.type, t.tool]),
    [["tool_start", "filesystem:read_text_file"], ["tool_end", "filesystem:read_text_file"]],
  );
  assert.ok(text(r).startsWith("ok ("), text(r));

  // Errors are tool results with isError and the code, not protocol errors.
  r = await client.callTool({ name: "execute_code", arguments: { code: "await mcp.filesystem.read_text_file({ path: 5 });" } });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error.code, "INVALID_ARGUMENTS");
  r = await client.callTool({ name: "execute_code", arguments: { code: "throw new Error('boom')" } });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error.code, "RUNTIME_ERROR");
  // The config's policy holds.
  r = await client.callTool({
    name: "execute_code",
    arguments: { code: "await mcp.filesystem.write_file({ path: path + '.x', content: 'no' })", context: { path: file } },
  });
  assert.equal(r.structuredContent.error.code, "PERMISSION_DENIED");

  // search_tools: TypeScript declarations, best match first.
  r = await client.callTool({ name: "search_tools", arguments: { query: "read text file" } });
  assert.ok(!r.isError, text(r));
  assert.ok(text(r).includes("declare const mcp: {") && text(r).includes("read_text_file(args: {"), text(r));
  assert.equal(r.structuredContent.tools[0], "filesystem:read_text_file");
}

/// Milliseconds of each of `n` sequential `return 1+1` executions, after 30 unmeasured ones.
async function latency(client, n) {
  const one = async () => {
    const r = await client.callTool({ name: "execute_code", arguments: { code: "return 1+1" } });
    assert.equal(r.structuredContent.result, 2, text(r));
  };
  for (let i = 0; i < 30; i++) await one();
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await one();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const at = (q) => ms[Math.round((ms.length - 1) * q)];
  return { p50_ms: at(0.5), p99_ms: at(0.99), n };
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  let transport, dataDir, samples;
  if (mode === "stdio") {
    const [exe, config, dir, n] = rest;
    transport = new StdioClientTransport({ command: exe, args: ["serve", "--config", config], env: process.env, stderr: "inherit" });
    dataDir = dir;
    samples = Number(n);
  } else if (mode === "http") {
    const [url, dir, n] = rest;
    transport = new StreamableHTTPClientTransport(new URL(url));
    dataDir = dir;
    samples = Number(n);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    await check(client, dataDir);
    const lat = await latency(client, samples);
    console.log(JSON.stringify({ ok: true, mode, ...lat }));
  } finally {
    await client.close();
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
