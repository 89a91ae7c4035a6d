import asyncio

# Build a multi-line text report from several tool answers.
sections = {"Summary": "All systems nominal", "Alerts": "2 warnings; 0 errors",
            "Next steps": "rotate keys\nupgrade runner\nreview quotas"}
bodies = await asyncio.gather(*[mcp.fixture.echo(message=b) for b in sections.values()])
lines = ["=" * 30, "WEEKLY REPORT".center(30), "=" * 30]
for (title, _), body in zip(sections.items(), bodies):
    lines.append(f"## {title}")
    for i, row in enumerate(body.split("\n"), 1):
        bullet = f"{i}." if "\n" in body else "-"
        lines.append(f"  {bullet} {row}")
lines.append("-" * 30)
report = "\n".join(lines)
print(report)
{"lines": len(lines), "chars": len(report), "titles": [t for t in sections],
 "longest_line": max(lines, key=len).strip()}
