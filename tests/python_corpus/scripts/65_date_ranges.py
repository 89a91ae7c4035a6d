from datetime import date, timedelta

# Business days between two dates, and the Mondays in the range.
start, end = date(2024, 4, 1), date(2024, 4, 30)
days = (end - start).days + 1
business = 0
mondays = []
d = start
while d <= end:
    if d.weekday() < 5:
        business += 1
    if d.weekday() == 0:
        mondays.append(d.isoformat())
    d += timedelta(days=1)
{"days": days, "business_days": business, "mondays": mondays}
