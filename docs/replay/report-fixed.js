// report.js with one change: get-sum is asked for release + 40. A replay against the
// recording of report.js stops at that call (REPLAY_DIVERGED).
const file = await mcp.filesystem.read_text_file({ path: "notes.txt" });
const release = Number(file.content.match(/release: (\d+)/)[1]);
const sum = await mcp.everything["get-sum"]({ a: release, b: 40 });
let missing;
try {
  await mcp.filesystem.read_text_file({ path: "missing.txt" });
} catch (e) {
  missing = e.code;
}
console.log(sum);
return { release, missing, at: new Date().toISOString(), ticket: Math.floor(Math.random() * 1e6) };
