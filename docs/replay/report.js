// Three calls to two reference MCP servers (config: docs/walkthrough/mcp.json), one failing,
// and the clock and Math.random(): all of it recorded with --audit-record full.
const file = await mcp.filesystem.read_text_file({ path: "notes.txt" });
const release = Number(file.content.match(/release: (\d+)/)[1]);
const sum = await mcp.everything["get-sum"]({ a: release, b: 39 });
let missing;
try {
  await mcp.filesystem.read_text_file({ path: "missing.txt" });
} catch (e) {
  missing = e.code;
}
console.log(sum);
return { release, missing, at: new Date().toISOString(), ticket: Math.floor(Math.random() * 1e6) };
