// Reads config.json from examples/data (the filesystem server's root), stores the project as an
// entity in the memory server, and returns what the memory graph now holds about it.
const file = await mcp.filesystem.read_text_file({ path: "config.json" });
const config = JSON.parse(file.content);
console.log(`read config of ${config.project}, owned by ${config.owner}`);

await mcp.memory.create_entities({
  entities: [{
    name: config.project,
    entityType: "project",
    observations: [`owned by ${config.owner}`, `uses ${config.servers.join(" and ")}`],
  }],
});

const found = await mcp.memory.search_nodes({ query: config.project });
return found.entities.map((e) => ({ name: e.name, type: e.entityType, observations: e.observations }));
