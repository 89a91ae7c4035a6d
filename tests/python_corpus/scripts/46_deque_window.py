from collections import deque

# Moving averages over a window with a bounded deque.
raw = await mcp.fixture.echo(message="10 12 11 15 20 18 17 30 29 31")
values = [int(v) for v in raw.split()]
window = deque(maxlen=3)
averages = []
alerts = []
for i, v in enumerate(values):
    window.append(v)
    if len(window) == window.maxlen:
        avg = sum(window) / len(window)
        averages.append(round(avg, 2))
        if v > avg * 1.3:
            alerts.append(i)
            print(f"spike at {i}: {v} vs avg {avg:.2f}")
recent = deque(values, maxlen=4)
recent.appendleft(0)
recent.rotate(1)
{"averages": averages, "alerts": alerts, "recent": list(recent), "last_window": list(window)}
