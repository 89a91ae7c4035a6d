# Old-style % formatting, common in scripts written from older examples.
rows = [("alpha", 3, 0.5), ("beta", 12, 0.25)]
lines = ["%-6s %3d %5.1f%%" % (name, n, share * 100) for name, n, share in rows]
lines
