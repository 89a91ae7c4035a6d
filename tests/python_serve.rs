//! Python scripts through `serve` (issue 48) with the official MCP Python SDK as the client, in
//! both protocol eras (tests/python/modern_client.py: a 2026-07-28 client and a legacy one, each
//! starting its own `serve` over stdio on one config and state file): `search_tools` answering
//! Python stubs, `execute_code {language: "python"}` with a gather, session state kept between
//! two executions of one connection, a failed call's code, an unknown language, an `ask` rule
//! answered by the client's elicitation handler, and `yield_after_ms` then `wait_execution`.

use crate::common::bin;
use serde_json::{json, Value};

#[test]
fn the_python_sdk_runs_python_scripts_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::python_scripts::write_config(
        dir.path(),
        json!({"fixture": crate::python_scripts::fixture()}),
        json!({"ask": ["fixture:pid"]}),
    );
    let state = dir.path().join("state.db");
    let exe = bin("mcp-sandbox");
    let gather = "import asyncio\nr = await asyncio.gather(mcp.fixture.echo(message='a'), mcp.fixture.add(a=1, b=2))\nprint('both done')\nawait store('r', r)\nr";
    let plan = json!({
        "stdio": [exe, config, state],
        "clients": {
            "new": {"mode": "2026-07-28"},
            "old": {"mode": "legacy"},
            "asker": {"mode": "2026-07-28", "elicit": ["approve once"]},
        },
        "steps": [
            {"as": "new", "call": "search_tools", "args": {"server": "fixture", "language": "python"}},
            {"as": "new", "call": "execute_code", "args": {"language": "python", "code": gather}},
            {"as": "new", "call": "execute_code", "args": {"language": "python", "code": "await load('r')"}},
            {"as": "old", "call": "execute_code", "args": {"language": "python", "code": "try:\n    await mcp.fixture.fail(message='no')\nexcept RuntimeError as e:\n    r = str(e)\nr"}},
            {"as": "old", "call": "execute_code", "args": {"language": "python", "code": "await mcp.fixture.fail(message='no')"}},
            {"as": "old", "call": "execute_code", "args": {"language": "cobol", "code": "DISPLAY 'HI'."}},
            {"as": "asker", "call": "execute_code", "args": {"language": "python", "code": "await mcp.fixture.pid()\n'approved'"}},
            {"as": "old", "call": "execute_code", "args": {"language": "python", "code": "await mcp.fixture.sleep(ms=1500)\n'slept'", "yield_after_ms": 100}, "keep": {"e": "execution_id"}},
            {"as": "old", "call": "wait_execution", "args": {"execution_id": "$e"}},
        ],
    });
    let report: Value =
        crate::serve_support::sdk::client("modern_client.py", &[plan.to_string().as_ref()]);
    assert_eq!(report["versions"]["new"], "2026-07-28", "{report}");
    assert_ne!(report["versions"]["old"], "2026-07-28", "{report}");
    let steps = report["steps"].as_array().unwrap();

    let stubs = steps[0]["out"]["python"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", steps[0]));
    assert!(stubs.contains("class fixture:\n"), "{stubs}");
    assert!(
        stubs.contains("    async def add(*, a: float, b: float) -> "),
        "{stubs}"
    );
    assert!(
        stubs.contains("async def store(key: str, value: Any) -> None"),
        "{stubs}"
    );

    let ran = &steps[1]["out"];
    assert_eq!(ran["result"], json!(["a", {"sum": 3}]), "{}", steps[1]);
    assert_eq!(
        ran["logs"],
        json!([{"level": "log", "message": "both done"}])
    );
    assert_eq!(
        steps[2]["out"]["result"],
        json!(["a", {"sum": 3}]),
        "{}",
        steps[2]
    );

    assert_eq!(steps[3]["out"]["result"], "TOOL_ERROR: no", "{}", steps[3]);
    assert_eq!(steps[4]["is_error"], true, "{}", steps[4]);
    assert_eq!(
        steps[4]["out"]["error"]["code"], "TOOL_ERROR",
        "{}",
        steps[4]
    );
    let refused = steps[5].to_string();
    assert!(
        refused.contains(
            "`language` must be \\\"javascript\\\", \\\"typescript\\\" or \\\"python\\\""
        ),
        "{refused}"
    );

    // The ask rule reached the person (the client's elicitation handler) and the call went on.
    assert_eq!(steps[6]["out"]["result"], "approved", "{}", steps[6]);
    let asked = report["elicited"]["asker"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert!(
        asked[0]
            .as_str()
            .unwrap()
            .starts_with("The script wants to call fixture:pid (asked by the config rule ask"),
        "{report}"
    );
    // A Python execution yields and is waited for like a JavaScript one.
    assert_eq!(steps[7]["out"]["status"], "running", "{}", steps[7]);
    assert_eq!(steps[8]["out"]["result"], "slept", "{}", steps[8]);
}
