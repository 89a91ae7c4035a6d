# A custom exception class carrying the tool error code (needs class inheritance).
class ToolError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.detail = message

async def call(tool, **args):
    try:
        return await getattr(mcp.fixture, tool)(**args)
    except Exception as e:
        code, _, msg = str(e).partition(": ")
        raise ToolError(code, msg)

out = []
for tool, args in [("echo", {"message": "ok"}), ("fail", {"message": "nope"})]:
    try:
        out.append(await call(tool, **args))
    except ToolError as e:
        print("tool error", e.code)
        out.append({"code": e.code, "detail": e.detail})
out
