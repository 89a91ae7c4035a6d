from datetime import datetime, timedelta

# Build a reminder schedule from a fixed start date and send each reminder through echo.
start = datetime(2026, 1, 30, 9, 0)
every = timedelta(days=7, hours=2)
sent = []
for n in range(5):
    when = start + every * n
    if when.weekday() >= 5:          # weekend: move to Monday
        when = when + timedelta(days=7 - when.weekday())
    text = f"Reminder {n + 1}: {when.strftime('%a %d %b %Y at %H:%M')}"
    sent.append(await mcp.fixture.echo(message=text))
    print(sent[-1])
last = start + every * 4
{
    "sent": sent,
    "span_days": (last - start).days,
    "span_hours": (last - start).total_seconds() / 3600,
    "last_iso": last.isoformat(),
}
