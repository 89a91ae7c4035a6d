import re

# Slugs for titles, unique within the batch.
titles = ["Hello, World!", "Hello World", "  Rust & Python: 2024 ", "Ünïcode title"]
seen = {}
slugs = []
for t in titles:
    base = re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-")
    n = seen.get(base, 0)
    seen[base] = n + 1
    slugs.append(base if n == 0 else f"{base}-{n + 1}")
slugs
