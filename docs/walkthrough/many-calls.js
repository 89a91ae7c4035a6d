// Three calls; --max-calls 2 lets two through.
for (let i = 1; i <= 3; i++) {
  await mcp.everything.echo({ message: `call ${i}` });
  console.log(`call ${i} done`);
}
