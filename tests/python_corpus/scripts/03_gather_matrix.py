import asyncio

# Row sums of a small matrix, each pair added by the tool, all rows concurrently.
matrix = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]

async def row_sum(row):
    acc = 0
    for v in row:
        r = await mcp.fixture.add(a=acc, b=v)
        acc = r["sum"]
    return acc

sums = await asyncio.gather(*[row_sum(r) for r in matrix])
for i, s in enumerate(sums):
    print(f"row {i}: {s}")
column_sums = [sum(col) for col in zip(*matrix)]
{"row_sums": sums, "column_sums": column_sums, "grand_total": sum(sums)}
