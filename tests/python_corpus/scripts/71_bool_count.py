# Count how many values pass a threshold by summing booleans.
values = [3, 8, 1, 9, 4, 7]
above = sum(v > 4 for v in values)
{"above": above, "share": above / len(values)}
