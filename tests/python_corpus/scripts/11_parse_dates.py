from datetime import datetime, date

# Parse dates in mixed formats from a tool answer, then compute gaps between them.
text = await mcp.fixture.echo(message="2024-02-28;03/01/2024;2024-03-15T08:30:00;15 Apr 2024")
formats = ["%Y-%m-%d", "%m/%d/%Y", "%Y-%m-%dT%H:%M:%S", "%d %b %Y"]
parsed = []
for item in text.split(";"):
    for fmt in formats:
        try:
            parsed.append(datetime.strptime(item, fmt))
            break
        except ValueError:
            continue
    else:
        print("unparsed:", item)
parsed.sort()
gaps = [(b - a).days for a, b in zip(parsed, parsed[1:])]
for d in parsed:
    print(d.strftime("%Y-%m-%d %A"))
leap = date(2024, 2, 29).isoformat()
{
    "dates": [d.date().isoformat() for d in parsed],
    "weekdays": [d.strftime("%A") for d in parsed],
    "gaps_days": gaps,
    "leap_day": leap,
    "day_of_year": [(d.date() - date(d.year, 1, 1)).days + 1 for d in parsed],
}
