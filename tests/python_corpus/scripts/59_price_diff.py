# Compare two price lists and report changes above a threshold.
old = {"apple": 1.20, "pear": 0.95, "plum": 2.10, "kiwi": 0.50}
new = {"apple": 1.32, "pear": 0.95, "plum": 1.80, "fig": 3.00}
changes = []
for name in sorted(set(old) | set(new)):
    before, after = old.get(name), new.get(name)
    if before is None:
        changes.append((name, "added", after))
    elif after is None:
        changes.append((name, "removed", before))
    else:
        pct = round((after - before) / before * 100, 1)
        if abs(pct) >= 5:
            changes.append((name, "changed", pct))
for c in changes:
    print(f"{c[0]:<6} {c[1]:<8} {c[2]}")
[list(c) for c in changes]
