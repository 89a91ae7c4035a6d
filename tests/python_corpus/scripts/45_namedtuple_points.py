from collections import namedtuple
import math

# Distances between named points that a tool returns as "name:x:y" lines.
Point = namedtuple("Point", ["name", "x", "y"])
raw = await mcp.fixture.echo(message="home:0:0\nshop:3:4\npark:-2:7\nwork:6:-1")
points = []
for line in raw.splitlines():
    name, x, y = line.split(":")
    points.append(Point(name, int(x), int(y)))
def dist(p, q):
    return math.sqrt((p.x - q.x) ** 2 + (p.y - q.y) ** 2)
home = points[0]
ranked = sorted(points[1:], key=lambda p: dist(home, p))
for p in ranked:
    print(f"{p.name:<5} {dist(home, p):6.2f}")
route = 0.0
for p, q in zip(points, points[1:]):
    route += dist(p, q)
{"nearest": ranked[0].name, "farthest": ranked[-1].name, "route": round(route, 3),
 "as_lists": [[p.name, p.x, p.y] for p in points], "x_of_shop": points[1].x}
