// Each failed call throws an Error with a stable `code`; the script can catch it.
const attempts = {
  typo: () => mcp.filesystem.read_txt_file({ path: "notes.txt" }),
  wrongType: () => mcp.filesystem.read_text_file({ path: 42 }),
  missingFile: () => mcp.filesystem.read_text_file({ path: "missing.txt" }),
};
const codes = {};
for (const [name, attempt] of Object.entries(attempts)) {
  try {
    await attempt();
  } catch (e) {
    codes[name] = e.code;
    console.log(`${name}: ${e.message}`);
    if (e.alternatives) console.log(`${name}: alternatives ${e.alternatives.join(", ")}`);
  }
}
return codes;
