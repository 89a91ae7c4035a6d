//! The host's door check (src/gate.rs) with the real runner and the fixture MCP server:
//! arguments validated against `inputSchema`, allow/deny policies, unknown tools — each refused
//! at the host with its code and details, traced as a failed call and never forwarded.

use crate::common;
use common::*;
use mcp_sandbox::context::policy::{Policy, Rules};
use mcp_sandbox::trace::TraceKind;
use mcp_sandbox::{ExecRequest, Outcome};
use serde_json::{json, Value};
use std::process::Command;

async fn run_policy(catalog: &mcp_sandbox::Catalog, code: &str, policy: Policy) -> Outcome {
    mcp_sandbox::execute(
        catalog,
        &runner(),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_policy(policy),
            code: code.to_string(),
            ..Default::default()
        },
    )
    .await
}

/// The single call of an outcome failed at the door with `code`.
fn assert_failed_call(o: &Outcome, tool: &str, code: &str) {
    let kinds: Vec<_> = o.traces.iter().map(|t| (t.kind, t.tool.as_str())).collect();
    assert_eq!(
        kinds,
        [(TraceKind::ToolStart, tool), (TraceKind::ToolEnd, tool)],
        "{o:?}"
    );
    let end = &o.traces[1];
    assert_eq!(end.success, Some(false));
    assert_eq!(end.error.as_ref().unwrap().code.as_str(), code);
}

#[tokio::test]
async fn schema_violations_are_invalid_arguments_with_json_paths() {
    let catalog = fixture_catalog().await;
    let o = run(
        &catalog,
        r#"try { await mcp.fixture.add({a: "x", c: 1}); return "forwarded"; }
           catch (e) { return {code: e.code, message: e.message}; }"#,
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result["code"], "INVALID_ARGUMENTS");
    let msg = o.result["message"].as_str().unwrap();
    assert!(
        msg.starts_with("arguments of fixture:add do not match its inputSchema: "),
        "{msg}"
    );
    assert!(msg.contains(r#"/a: "x" is not of type "number""#), "{msg}");
    assert!(
        msg.contains(r#"(root): "b" is a required property"#),
        "{msg}"
    );
    assert!(
        msg.contains("(root): Additional properties are not allowed ('c' was unexpected)"),
        "{msg}"
    );
    assert_failed_call(&o, "fixture:add", "INVALID_ARGUMENTS");

    // Valid arguments still go through, and an uncaught violation fails the script with the code.
    let o = run(&catalog, "return await mcp.fixture.add({a: 2, b: 3})").await;
    assert_eq!(o.result, json!({"sum": 5}), "{o:?}");
    let o = run(&catalog, "await mcp.fixture.sleep({ms: -5})").await;
    assert_eq!(code(&o), "INVALID_ARGUMENTS");
    assert!(
        o.error
            .as_ref()
            .unwrap()
            .message
            .contains("/ms: -5 is less than the minimum of 0"),
        "{o:?}"
    );
    assert_eq!(
        o.error.as_ref().unwrap().tool.as_deref(),
        Some("fixture:sleep")
    );
    catalog.shutdown().await;
}

#[tokio::test]
async fn denied_calls_are_permission_denied_and_never_forwarded() {
    let catalog = fixture_catalog().await;
    let policy = Policy::allow_all().with(
        Rules::new(
            "config",
            Some(&["fixture:*".into(), "local:echo".into()]),
            &["fixture:count".into()],
        )
        .unwrap(),
    );
    let o = run_policy(
        &catalog,
        r#"const out = [];
           for (const f of [() => mcp.fixture.count({}), () => mcp.local.sleep({ms: 1})]) {
             try { await f(); out.push("forwarded"); } catch (e) { out.push([e.code, e.message]); }
           }
           out.push(await mcp.fixture.add({a: 1, b: 1}));
           return out;"#,
        policy,
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        o.result,
        json!([
            ["PERMISSION_DENIED", "fixture:count is denied by the config rule deny \"fixture:count\"; the call was not forwarded"],
            ["PERMISSION_DENIED", "local:sleep is not in the config allow list (\"fixture:*\", \"local:echo\"); the call was not forwarded"],
            {"sum": 2}
        ])
    );
    let ends: Vec<_> = o
        .traces
        .iter()
        .filter(|t| t.kind == TraceKind::ToolEnd)
        .map(|t| (t.tool.as_str(), t.error.as_ref().map(|e| e.code.as_str())))
        .collect();
    assert_eq!(
        ends,
        [
            ("fixture:count", Some("PERMISSION_DENIED")),
            ("local:sleep", Some("PERMISSION_DENIED")),
            ("fixture:add", None)
        ]
    );
    // The server never saw the denied call: its per-process counter starts at 1 now.
    let o = run(&catalog, "return await mcp.fixture.count({})").await;
    assert_eq!(o.result, json!("1"), "{o:?}");
    catalog.shutdown().await;
}

#[tokio::test]
async fn unknown_tool_at_the_host_names_the_closest_tools() {
    // A runner that skipped its own name check (fake-runner call-unknown asks for fixture.ecko):
    // the host answers TOOL_NOT_FOUND with alternatives and never forwards the call.
    let catalog = fixture_catalog().await;
    let o = mcp_sandbox::execute(
        &catalog,
        &fake_runner("call-unknown"),
        ExecRequest::default(),
    )
    .await;
    assert_eq!(code(&o), "TOOL_NOT_FOUND", "{o:?}");
    let e = o.error.as_ref().unwrap();
    assert_eq!(
        e.alternatives
            .as_deref()
            .unwrap()
            .first()
            .map(String::as_str),
        Some("fixture:echo")
    );
    assert!(
        e.message
            .starts_with("unknown tool 'fixture:ecko'; did you mean fixture:echo"),
        "{e:?}"
    );
    assert_failed_call(&o, "fixture:ecko", "TOOL_NOT_FOUND");
    catalog.shutdown().await;
}

#[test]
fn cli_allow_and_deny_flags_narrow_the_config_policy() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let text = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"deny": ["fixture:fail"]}
    });
    std::fs::write(&config, text.to_string()).unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"const r = {};
           for (const t of ["echo", "fail", "pid"]) {
             try { await mcp.fixture[t]({message: "m"}); r[t] = "ok"; } catch (e) { r[t] = e.code; }
           }
           return r;"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["run", "--json", "--config"])
        .arg(&config)
        .arg(&script)
        .args([
            "--allow",
            "fixture:echo",
            "--allow",
            "fixture:f*",
            "--deny",
            "fixture:pid",
        ])
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // fail: allowed by --allow fixture:f* but denied by the config; pid: denied by --deny
    // (and the pid tool takes no arguments, so the policy answered before validation would).
    assert_eq!(
        v["result"],
        json!({"echo": "ok", "fail": "PERMISSION_DENIED", "pid": "PERMISSION_DENIED"})
    );

    let bad = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["run", "--deny", "a:b:c", "-"])
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("policy pattern \"a:b:c\" is not valid"));
}
