// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package.json) pinned to
// MCP 2026-07-28 and declaring the tasks extension (io.modelcontextprotocol/tasks): execute_code
// answers with a task, polled with tasks/get to its end; a second one is cancelled with
// tasks/cancel. Driven by tests/execute_code_tasks.rs.
//
// usage: node modern_tasks.mjs <url> <token> <code> <cancelled-code>
//
// Prints one JSON line: {"version", "created": the task answer, "polls": [status…],
// "final": the last tasks/get, "cancel": the cancelled task's last tasks/get,
// "bad": the error of tasks/get with a changed id}.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token, code, cancelled] = process.argv.slice(2);
const client = new Client(
  { name: "ts-v2-tasks", version: "2.4.0" },
  {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
    capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } },
  },
);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const raw = async (method, params) => {
  try {
    return await client.request({ method, params });
  } catch (e) {
    return { error: { code: e.code, message: e.message, data: e.data } };
  }
};
const report = { version: client.getNegotiatedProtocolVersion(), polls: [] };
report.created = await raw("tools/call", { name: "execute_code", arguments: { code } });
const id = report.created.taskId;
for (let i = 0; i < 200 && id; i++) {
  const t = await raw("tasks/get", { taskId: id });
  report.polls.push(t.status ?? t.error);
  report.final = t;
  if (t.error || ["completed", "failed", "cancelled"].includes(t.status)) break;
  await new Promise((r) => setTimeout(r, 100));
}
report.again = await raw("tasks/get", { taskId: id });
const second = await raw("tools/call", { name: "execute_code", arguments: { code: cancelled } });
report.cancelled_created = second;
if (second.taskId) {
  report.cancel_ack = await raw("tasks/cancel", { taskId: second.taskId });
  report.cancel = await raw("tasks/get", { taskId: second.taskId });
  const bad = second.taskId.slice(0, -3) + (second.taskId.endsWith("AAA") ? "BBB" : "AAA");
  report.bad = await raw("tasks/get", { taskId: bad });
}
await client.close();
console.log(JSON.stringify(report));
