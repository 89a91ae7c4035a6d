import json

# Walk a paginated listing until there is no next cursor.
PAGES = {
    None: {"items": ["a1", "a2", "a3"], "next": "c2"},
    "c2": {"items": ["b1", "b2"], "next": "c3"},
    "c3": {"items": ["c1"], "next": None},
}
async def fetch_page(cursor):
    # the server answers JSON text
    return json.loads(await mcp.fixture.echo(message=json.dumps(PAGES[cursor])))

items, cursor, pages = [], None, 0
while True:
    page = await fetch_page(cursor)
    pages += 1
    items.extend(page["items"])
    print(f"page {pages}: {len(page['items'])} items (cursor={cursor})")
    cursor = page["next"]
    if cursor is None or pages >= 10:
        break
{"pages": pages, "items": items, "count": len(items)}
