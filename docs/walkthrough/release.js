// A capability: code that worked, saved under a name, called like a tool with `args`.
const file = await mcp.filesystem.read_text_file({ path: args.file });
const release = Number(file.content.match(/release: (\d+)/)[1]);
return { release, next: release + (args.step ?? 1) };
