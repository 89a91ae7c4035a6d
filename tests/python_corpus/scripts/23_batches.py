import asyncio

# Process 10 jobs in batches of 4, each batch concurrently.
jobs = [{"id": i, "a": i * 3, "b": 100 - i} for i in range(10)]
BATCH = 4
batches = [jobs[i:i + BATCH] for i in range(0, len(jobs), BATCH)]
done = []
for n, batch in enumerate(batches, 1):
    answers = await asyncio.gather(*[mcp.fixture.add(a=j["a"], b=j["b"]) for j in batch])
    for job, ans in zip(batch, answers):
        done.append({"id": job["id"], "sum": ans["sum"]})
    print(f"batch {n}/{len(batches)}: {[j['id'] for j in batch]}")
sums = [d["sum"] for d in done]
{"batches": len(batches), "sizes": [len(b) for b in batches], "sums": sums,
 "all_done": len(done) == len(jobs), "min": min(sums), "max": max(sums)}
