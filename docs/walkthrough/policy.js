const answers = {};
const attempts = {
  echo: () => mcp.everything.echo({ message: "hello" }),
  echoPassword: () => mcp.everything.echo({ message: "my password is hunter2" }),
  move: () => mcp.filesystem.move_file({ source: "notes.txt", destination: "old.txt" }),
  write: () => mcp.filesystem.write_file({ path: "out.txt", content: "hi" }),
};
for (const [name, attempt] of Object.entries(attempts)) {
  try {
    answers[name] = await attempt();
  } catch (e) {
    answers[name] = `${e.code}: ${e.message}`;
  }
}
return answers;
