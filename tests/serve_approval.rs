//! Policy `ask` in `mcp-sandbox serve` (the real binary, runner and fixture MCP server) with the
//! official MCP Python SDK as the client (tests/python/serve_approval.py): the question is an
//! elicitation request; the client approves once, approves the tool for the execution, denies
//! with a reason, never answers (`--approval-timeout-ms`), lacks the capability (denied with a
//! message), or cancels execute_code mid-question (the question is withdrawn with
//! `notifications/cancelled` and the runner is gone).

use crate::common::{assert_not_hung, bin, ms, repo_root};
use serde_json::{json, Value};
use std::process::Command;

fn client(mode: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    let text = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}},
        "sandbox": {"ask": ["fixture:echo"]},
    });
    std::fs::write(&config, text.to_string()).unwrap();
    let py = repo_root().join(".venv/bin/python");
    assert!(
        py.exists(),
        "run scripts/setup.sh (Python venv with mcp==2.3.0) first"
    );
    let out = Command::new(py)
        .arg(repo_root().join("tests/python/serve_approval.py"))
        .arg(mode)
        .arg(bin("mcp-sandbox"))
        .arg(&config)
        .args(extra)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("one JSON report")
}

/// `(type, by)` of the approval events.
fn approvals(outcome: &Value) -> Vec<(String, String)> {
    outcome["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .filter(|t| t["type"].as_str().unwrap_or("").starts_with("approval_"))
        .map(|t| {
            (
                t["type"].as_str().unwrap_or("").to_string(),
                t["by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.into(), b.into())
}

const QUESTION_ONE: &str = "The script wants to call fixture:echo (asked by the config rule ask \"fixture:echo\").\nArguments (22 bytes):\n{\n  \"message\": \"one\"\n}";

#[test]
fn the_client_approves_each_call_once() {
    let r = client("approve", &[]);
    let o = &r["outcome"];
    assert_eq!(o["success"], true, "{r}");
    assert_eq!(o["result"], json!(["one", "two"]));
    assert_eq!(r["questions"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["questions"][0], QUESTION_ONE);
    assert_eq!(
        r["schema"]["properties"]["decision"]["enum"],
        json!([
            "approve once",
            "approve this tool for the rest of this execution",
            "deny"
        ])
    );
    assert_eq!(
        approvals(o),
        [
            pair("approval_requested", ""),
            pair("approval_granted", "elicitation"),
            pair("approval_requested", ""),
            pair("approval_granted", "elicitation"),
        ]
    );
}

#[test]
fn approving_the_tool_asks_once_per_execution() {
    let r = client("approve_tool", &[]);
    assert_eq!(r["outcome"]["result"], json!(["one", "two"]), "{r}");
    assert_eq!(r["questions"].as_array().unwrap().len(), 1, "{r}");
}

#[test]
fn an_answer_without_a_valid_decision_is_denied_naming_the_choices() {
    let r = client("no_decision", &[]);
    let denied = json!([
        "PERMISSION_DENIED",
        "fixture:echo was denied by the person asked (elicitation): the client's answer had no valid decision (\"yes\"); the form's decision is one of \"approve once\", \"approve this tool for the rest of this execution\", \"deny\"; the call was not forwarded"
    ]);
    assert_eq!(r["outcome"]["result"], json!([denied, denied]), "{r}");
}

#[test]
fn the_client_denies_with_a_reason_the_script_sees() {
    let r = client("deny", &[]);
    let denied = json!([
        "PERMISSION_DENIED",
        "fixture:echo was denied by the person asked (elicitation): not on a Friday; the call was not forwarded"
    ]);
    assert_eq!(r["outcome"]["result"], json!([denied, denied]), "{r}");
    assert_eq!(
        approvals(&r["outcome"])[1],
        pair("approval_denied", "elicitation")
    );
}

#[test]
fn an_unanswered_question_is_denied_in_time_and_withdrawn() {
    let started = std::time::Instant::now();
    let r = client("never", &["--approval-timeout-ms", "400"]);
    let late = json!([
        "PERMISSION_DENIED",
        "fixture:echo was not approved in time: nobody answered within 400 ms (--approval-timeout-ms); the call was not forwarded"
    ]);
    assert_eq!(r["outcome"]["result"], json!([late, late]), "{r}");
    assert_eq!(
        approvals(&r["outcome"])[1],
        pair("approval_denied", "timeout")
    );
    // The client was told the question is withdrawn (its handler was cancelled).
    assert_eq!(r["cancelled"], true, "{r}");
    // Under the 120 s default approval timeout; the Python client's start is most of it.
    assert_not_hung(
        started.elapsed(),
        ms(100_000),
        ms(10_000),
        "the withdrawn questions",
    );
}

#[test]
fn a_client_without_elicitation_cannot_approve() {
    let r = client("no_capability", &[]);
    let denied = json!([
        "PERMISSION_DENIED",
        "fixture:echo needs approval (the config rule ask \"fixture:echo\") and the MCP client did not declare the elicitation capability, so it cannot approve calls; use a client that supports elicitation, or start serve with --approve fixture:echo; the call was not forwarded"
    ]);
    assert_eq!(r["outcome"]["result"], json!([denied, denied]), "{r}");
    assert_eq!(r["questions"], json!([]));
    assert_eq!(
        approvals(&r["outcome"])[1],
        pair("approval_denied", "elicitation")
    );
    // --approve on serve approves without asking.
    let r = client("no_capability", &["--approve", "fixture:echo"]);
    assert_eq!(r["outcome"]["result"], json!(["one", "two"]), "{r}");
    assert_eq!(
        approvals(&r["outcome"])[1],
        pair("approval_granted", "flag")
    );
}

#[test]
fn cancelling_mid_question_withdraws_it_and_kills_the_runner() {
    let r = client("cancel", &[]);
    assert_eq!(r["questions"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["runners_during_question"], 1, "{r}");
    assert_eq!(r["runners_left"], 0, "{r}");
    assert_eq!(r["cancelled"], true, "{r}");
    // The server goes on serving.
    assert_eq!(r["outcome"]["result"], 42, "{r}");
}

#[test]
fn questions_to_one_client_are_asked_one_after_another() {
    // Two executions of one session, each with three calls waiting at once: six questions,
    // never two open at the same time.
    let r = client("parallel", &[]);
    assert_eq!(r["outcome"]["result"], json!(["a", "b", "c"]), "{r}");
    assert_eq!(r["second"], json!(["a", "b", "c"]), "{r}");
    assert_eq!(r["questions"].as_array().unwrap().len(), 6, "{r}");
    assert_eq!(r["most_at_once"], 1, "{r}");
}
