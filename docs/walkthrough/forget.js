// Deletes an entity from the memory server: the config denies memory:delete_*.
return await mcp.memory.delete_entities({ entityNames: ["project"] });
