import itertools

# Daily sales with running totals and a 3-day moving average.
sales = [120, 80, 150, 90, 200, 60, 170]
running = list(itertools.accumulate(sales))
moving = []
for i in range(len(sales)):
    window = sales[max(0, i - 2): i + 1]
    moving.append(round(sum(window) / len(window), 2))
best_day = sales.index(max(sales))
print(f"best day: {best_day}, total: {running[-1]}")
{"running": running, "moving": moving}
