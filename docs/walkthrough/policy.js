// The config's policy decides, at the host, which of these calls leave.
const attempts = {
  echo: () => mcp.everything.echo({ message: "hello" }),
  echoPassword: () => mcp.everything.echo({ message: "my password is hunter2" }),
  move: () => mcp.filesystem.move_file({ source: "notes.txt", destination: "old.txt" }),
  write: () => mcp.filesystem.write_file({ path: "out.txt", content: "hi" }),
};
const outcomes = {};
for (const [name, attempt] of Object.entries(attempts)) {
  try {
    outcomes[name] = await attempt();
  } catch (e) {
    outcomes[name] = e.code;
    console.log(`${name}: ${e.message}`);
  }
}
return outcomes;
