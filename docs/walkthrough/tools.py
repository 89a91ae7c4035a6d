# tools.js in Python: the same two servers, the two calls in flight at once.
import asyncio
import re

file, total = await asyncio.gather(
    mcp.filesystem.read_text_file(path="notes.txt"),
    getattr(mcp.everything, "get-sum")(a=3, b=39),
)
release = int(re.search(r"release: (\d+)", file["content"]).group(1))
print(total)
{"release": release, "next": release + 1}
