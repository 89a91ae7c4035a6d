from datetime import date, timedelta

# Bucket fixed dates into weeks starting Monday and count them.
raw = await mcp.fixture.echo(message="2026-03-02,2026-03-04,2026-03-08,2026-03-09,2026-03-15,2026-03-16,2026-03-31")
days = [date.fromisoformat(s) for s in raw.split(",")]
weeks = {}
for d in days:
    monday = d - timedelta(days=d.weekday())
    weeks.setdefault(monday.isoformat(), []).append(d.strftime("%a %d"))
for start, items in weeks.items():
    end = date.fromisoformat(start) + timedelta(days=6)
    print(f"week {start}..{end.isoformat()}: {', '.join(items)}")
month_end = date(2026, 3, 31)
first = date(2026, 3, 1)
business = sum(1 for i in range((month_end - first).days + 1) if (first + timedelta(days=i)).weekday() < 5)
{"weeks": weeks, "week_count": len(weeks), "business_days_march": business,
 "last_is_weekend": month_end.weekday() >= 5, "iso_weekday_first": first.isoweekday()}
