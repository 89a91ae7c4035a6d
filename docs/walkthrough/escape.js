// What a script gets when it reaches for the machine. The runner has no file system, network
// or process API; its only way out is mcp.* (checked and traced by the host).
const probes = {
  require: () => require("fs"),
  process: () => process.env,
  fetch: () => fetch("https://example.com"),
  XMLHttpRequest: () => new XMLHttpRequest(),
  childProcess: () => import("node:child_process"),
  quickjsStd: () => import("std"),
  quickjsOs: () => import("os"),
};
const got = {};
for (const [name, probe] of Object.entries(probes)) {
  try {
    const value = await probe();
    got[name] = `returned ${JSON.stringify(value)}`;
  } catch (e) {
    got[name] = `${e.name}: ${e.message}`;
  }
}
return got;
