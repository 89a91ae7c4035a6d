//! A forgotten `await` (issue 47): `mcp.filesystem.write_file({...}); return "done"` must not
//! look like a plain success. Before it runs, the call made as a statement of its own is
//! flagged; when the script returns with the call still running, a warning names it ("1 call
//! still running when the script returned: filesystem:write_file — missing await?"), through
//! `run` (stderr) and `serve` (the summary the model reads); and the execution leaves exactly
//! one audit record (it used to leave a `RUNNING` record with no calls beside the real one).

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const FORGOTTEN: &str =
    "mcp.filesystem.write_file({path: DIR + '/out.txt', content: 'x'}); return 'done';";

const STATIC: &str = "[mcp-sandbox: UNAWAITED_CALL: mcp.filesystem.write_file(…) is neither awaited nor returned nor assigned — missing await? The script may return before it is done, and then it is cancelled]";
const RUNNING: &str = "[mcp-sandbox: 1 call still running when the script returned: filesystem:write_file — missing await? (UNAWAITED_CALL: such a call is cancelled; await it, or await Promise.all of them, before returning)]";

fn servers(data: &Path) -> Value {
    let bin_dir = repo_root().join("node_modules/.bin");
    json!({"filesystem": {"command": bin_dir.join("mcp-server-filesystem"), "args": [data]}})
}

/// The audit records of `state`, newest first.
fn audit(state: &Path) -> Vec<Value> {
    let out = Command::new(bin("mcp-sandbox"))
        .args(["audit", "--json", "--state"])
        .arg(state)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn run_warns_of_a_call_still_running_and_audits_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().canonicalize().unwrap().join("data");
    std::fs::create_dir(&data).unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": servers(&data)}).to_string()).unwrap();
    let state = dir.path().join("state.db");
    let context = json!({"DIR": data}).to_string();
    let out = run_stdin(
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
            "--context".as_ref(),
            context.as_ref(),
        ],
        FORGOTTEN,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "\"done\"\n");
    assert!(stderr.contains(STATIC), "{stderr}");
    assert!(stderr.contains(RUNNING), "{stderr}");

    let records = audit(&state);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["outcome"], "OK", "{records:#?}");
    // The record is the real one: it holds the abandoned call.
    let calls = records[0]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{records:#?}");
    assert_eq!(calls[0]["tool"], "filesystem:write_file");
}

#[tokio::test]
async fn serve_says_so_in_the_summary_and_audits_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().canonicalize().unwrap().join("data");
    std::fs::create_dir(&data).unwrap();
    let served = crate::serve_support::start_with_servers(servers(&data), json!({}), &[]).await;
    let r = served
        .call(
            "execute_code",
            json!({"code": FORGOTTEN, "context": {"DIR": data}}),
        )
        .await
        .unwrap();
    assert!(!crate::serve_support::is_error(&r));
    let text = crate::serve_support::text(&r);
    assert!(text.contains(STATIC), "{text}");
    assert!(text.contains(RUNNING), "{text}");
    let logs = &crate::serve_support::structured(&r)["logs"];
    assert!(
        logs.as_array()
            .unwrap()
            .iter()
            .any(|l| l["level"] == "warn" && l["message"] == RUNNING),
        "{logs}"
    );
    let records = audit(&served.state);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["outcome"], "OK", "{records:#?}");
}
