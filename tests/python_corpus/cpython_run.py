#!/usr/bin/env python3
"""Run one corpus script under CPython with a stand-in `mcp` (issue 48 corpus).

Usage: cpython_run.py SCRIPT [--context JSON]

The stand-in's fixture tools (echo, add, fail, get_customer) answer exactly what the real
fixture-mcp-server answers through mcp-sandbox (measured with the CLI, see fixture_answers.md),
and failures raise the contract's exception types with the message "<CODE>: <message>".
The script may use top-level `await`, a top-level `return`, and its last expression statement
is the result. Prints ONE JSON object:
  {"result": <value>, "logs": ["line", ...]}   or   {"error": "<ExcType>: <message>", "logs": [...]}
Standard library only.
"""
import ast
import asyncio
import inspect
import json
import os
import sys

SERVERS = ("fixture",)

SCHEMAS = {
    "echo": ([("message", "string")], ["message"]),
    "fail": ([("message", "string")], ["message"]),
    "add": ([("a", "number"), ("b", "number")], ["a", "b"]),
    "get_customer": ([("id", "integer")], ["id"]),
}


# Order of schema violations in the INVALID_ARGUMENTS message, as measured through the CLI:
# echo/fail/get_customer: type errors, then unexpected properties, then missing ones;
# add: missing, then type errors, then unexpected.
DEFAULT_ORDER = ("properties", "additional", "required")
ERROR_ORDER = {"add": ("required", "properties", "additional")}


def _compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _type_ok(v, ty):
    if ty == "string":
        return isinstance(v, str)
    if ty == "number":
        return _is_num(v)
    if ty == "integer":
        return _is_num(v) and float(v).is_integer()
    return True


def to_json(v):
    """Strict conversion of a returned value: dict (str keys), list/tuple, str, int, float, bool, None."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("Out of range float values are not JSON compliant")
        return v
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise TypeError(f"dict keys must be str, not {type(k).__name__}")
            out[k] = to_json(x)
        return out
    raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")


def call_tool(server, tool, args, kwargs):
    full = f"{server}:{tool}"
    if len(args) > 1 or (args and not isinstance(args[0], dict)):
        raise TypeError(f"{full} takes one dict or keyword arguments")
    params = {}
    for k, v in list((args[0] if args else {}).items()) + list(kwargs.items()):
        if not isinstance(k, str):
            raise TypeError("argument names must be str")
        params[k] = to_json(v)
    # a JSON round trip, as the real host sends the arguments as JSON text
    params = json.loads(json.dumps(params))
    if tool not in SCHEMAS:
        raise RuntimeError(f"TOOL_NOT_FOUND: unknown tool '{full}'")
    props, required = SCHEMAS[tool]
    names = [p for p, _ in props]
    found = {"additional": [], "required": [], "properties": []}
    extra = [f"'{k}'" for k in params if k not in names]
    if extra:
        verb = "was" if len(extra) == 1 else "were"
        found["additional"].append(f"(root): Additional properties are not allowed ({', '.join(extra)} {verb} unexpected)")
    for r in required:
        if r not in params:
            found["required"].append(f'(root): "{r}" is a required property')
    for p, ty in props:
        if p in params and not _type_ok(params[p], ty):
            found["properties"].append(f'/{p}: {_compact(params[p])} is not of type "{ty}"')
    # the order mcp-sandbox's schema check reports them in, measured per tool
    errors = [e for kind in ERROR_ORDER.get(tool, DEFAULT_ORDER) for e in found[kind]]
    if errors:
        raise ValueError(f"INVALID_ARGUMENTS: arguments of {full} do not match its inputSchema: " + "; ".join(errors))
    if tool == "echo":
        return params["message"]
    if tool == "fail":
        raise RuntimeError(f"TOOL_ERROR: {params['message']}")
    if tool == "add":
        a, b = params["a"], params["b"]
        if isinstance(a, int) and isinstance(b, int) and -2**63 <= a + b < 2**63:
            return {"sum": a + b}
        return {"sum": float(a) + float(b)}
    if tool == "get_customer":
        cid = params["id"]
        if not isinstance(cid, int) or cid < 0:
            raise RuntimeError('TOOL_ERROR: MCP server \'fixture\' failed the call: Mcp error: -32602: argument "id" must be a non-negative integer')
        return {
            "api_key": "sk_live_FAKEfixture0123456789abcd",
            "card": "4111 1111 1111 1111",
            "email": f"ada{cid}@example.com",
            "id": cid,
            "name": "Ada Lovelace",
            "phone": "+1 415 555 2671",
        }
    raise AssertionError(tool)


def _log_call(server, tool, args, kwargs, outcome):
    """With CORPUS_CALL_LOG=PATH, append each call and its stand-in answer as one JSON line
    (verify_standin.py replays them against the real fixture server through mcp-sandbox)."""
    path = os.environ.get("CORPUS_CALL_LOG")
    if not path:
        return
    try:
        params = {**(args[0] if args else {}), **kwargs}
        line = json.dumps({"server": server, "tool": tool, "args": params, **outcome})
    except (TypeError, ValueError, IndexError, AttributeError):
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


class _Server:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, tool):
        if tool.startswith("__"):
            raise AttributeError(tool)
        server = self._name

        async def call(*args, **kwargs):
            await asyncio.sleep(0)
            try:
                answer = call_tool(server, tool, args, kwargs)
            except Exception as e:
                _log_call(server, tool, args, kwargs, {"error": [type(e).__name__, str(e)]})
                raise
            _log_call(server, tool, args, kwargs, {"result": answer})
            return answer

        call.__name__ = f"{server}.{tool}"
        return call

    def __repr__(self):
        return f"{self._name}()"


class _Mcp:
    def __init__(self):
        for s in SERVERS:
            setattr(self, s, _Server(s))

    def __repr__(self):
        return "mcp(" + ", ".join(f"{s}={s}()" for s in SERVERS) + ")"


class _Return(BaseException):
    def __init__(self, value):
        self.value = value


class _TopLevelReturn(ast.NodeTransformer):
    """`return X` at module level (not inside def/lambda/class) -> `raise __Return__(X)`."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node):
        value = node.value or ast.Constant(None)
        call = ast.Call(func=ast.Name("__Return__", ast.Load()), args=[value], keywords=[])
        return ast.copy_location(ast.Raise(exc=call, cause=None), node)


def _exc_text(e):
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.exit("usage: cpython_run.py SCRIPT [--context JSON]")
    path = argv[0]
    context = {}
    if "--context" in argv:
        context = json.loads(argv[argv.index("--context") + 1])
    with open(path, encoding="utf-8") as f:
        source = f.read()

    out = []

    def _print(*args, sep=" ", end="\n", file=None, flush=False):
        out.append(sep.join(str(a) for a in args) + end)

    def emit(obj):
        text = "".join(out)
        logs = text.split("\n")
        if text == "" or text.endswith("\n"):
            logs.pop()
        obj["logs"] = logs
        print(json.dumps(obj, ensure_ascii=False))

    g = {"__name__": "__main__", "__builtins__": __builtins__, "print": _print,
         "__Return__": _Return, "mcp": _Mcp()}
    g.update(context)
    try:
        tree = ast.parse(source, path)
        tree = _TopLevelReturn().visit(tree)
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body[-1]
            tree.body[-1] = ast.copy_location(
                ast.Assign(targets=[ast.Name("__result__", ast.Store())], value=last.value), last)
        ast.fix_missing_locations(tree)
        code = compile(tree, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as e:
        emit({"error": _exc_text(e)})
        return

    async def runner():
        r = eval(code, g)
        if inspect.iscoroutine(r):
            await r

    try:
        try:
            asyncio.run(runner())
            result = g.get("__result__")
        except _Return as r:
            result = r.value
        emit({"result": to_json(result)})
    except Exception as e:  # the script raised (or its result is not JSON-able)
        emit({"error": _exc_text(e)})


if __name__ == "__main__":
    main()
