import statistics

# Mean and median of response times.
times = [120, 95, 130, 101, 99, 250]
{"mean": statistics.mean(times), "median": statistics.median(times)}
