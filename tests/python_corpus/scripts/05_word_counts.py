from collections import Counter
import re

# Count words in a document the tool returns.
doc = await mcp.fixture.echo(message=(
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs. "
    "A fox is quick, a dog is lazy."
))
words = re.findall(r"[a-z']+", doc.lower())
counts = Counter(words)
stop = {"the", "a", "is", "over"}
content = Counter({w: c for w, c in counts.items() if w not in stop})
top = content.most_common(3)
for word, n in top:
    print(f"{word}: {n}")
{
    "total_words": len(words),
    "unique": len(counts),
    "top": [[w, n] for w, n in top],
    "the": counts["the"],
    "missing": counts["zebra"],
}
