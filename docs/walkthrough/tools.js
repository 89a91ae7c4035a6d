// Two reference MCP servers (config: mcp.json). Paths are relative to the config's directory.
const file = await mcp.filesystem.read_text_file({ path: "notes.txt" });
const release = Number(file.content.match(/release: (\d+)/)[1]);
const sum = await mcp.everything["get-sum"]({ a: release, b: 39 });
console.log(sum);
return { release, next: release + 1 };
