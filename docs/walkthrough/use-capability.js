// `mcp.notes.next_release` is not a server: it is the capability saved as notes:next_release.
const plan = await mcp.notes.next_release({ file: "notes.txt", step: 2 });
return plan;
