# Module-level state updated from functions with `global`.
CALLS = 0
LOG = []
LIMIT = 4

async def tracked_echo(msg):
    global CALLS
    if CALLS >= LIMIT:
        raise RuntimeError(f"LIMIT: call budget of {LIMIT} spent")
    CALLS += 1
    LOG.append(msg)
    return await mcp.fixture.echo(message=msg)

def reset():
    global CALLS, LOG
    CALLS = 0
    LOG = []

out = []
for word in ["one", "two", "three", "four", "five", "six"]:
    try:
        out.append(await tracked_echo(word))
    except RuntimeError as e:
        print("stopped:", e)
        break
used = CALLS
seen = list(LOG)
reset()
{"out": out, "used": used, "seen": seen, "after_reset": [CALLS, LOG]}
