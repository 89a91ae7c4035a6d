# A text histogram of scores in buckets of ten.
scores = [55, 62, 67, 71, 74, 78, 79, 83, 88, 91, 95, 99, 64]
buckets = {}
for s in scores:
    b = s // 10 * 10
    buckets[b] = buckets.get(b, 0) + 1
for b in sorted(buckets):
    print(f"{b:>3}-{b + 9:<3} {'#' * buckets[b]} ({buckets[b]})")
{str(b): n for b, n in sorted(buckets.items())}
