//! A forgotten `await` (issue 47): `mcp.filesystem.write_file({...}); return "done"` must not
//! look like a plain success. Before it runs, the call made as a statement of its own is
//! flagged; when the script returns with the call still running, a warning names it ("1 call
//! still running when the script returned: filesystem:write_file — missing await?"), through
//! `run` (stderr) and `serve` (the summary the model reads); and the execution leaves exactly
//! one audit record (it used to leave a `RUNNING` record with no calls beside the real one).
//! One mistake is one line (issue 63 item 7): a call flagged before the run is not named again
//! when it is left running; `run --strict` refuses the script instead.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const FORGOTTEN: &str =
    "mcp.filesystem.write_file({path: DIR + '/out.txt', content: 'x'}); return 'done';";

const STATIC: &str = "[mcp-sandbox: UNAWAITED_CALL: mcp.filesystem.write_file(…) is neither awaited nor returned nor assigned — missing await? The script may return before it is done, and then it is cancelled]";
const RUNNING: &str = "[mcp-sandbox: 1 call still running when the script returned: filesystem:write_file — missing await? (UNAWAITED_CALL: such a call is cancelled; await it, or await Promise.all of them, before returning)]";

/// Assigned, so not flagged before the run: the warning at the end is its one line.
const ASSIGNED: &str =
    "const p = mcp.filesystem.write_file({path: DIR + '/out.txt', content: 'x'}); return 'done';";

fn servers(data: &Path) -> Value {
    let bin_dir = repo_root().join("node_modules/.bin");
    json!({"filesystem": {"command": bin_dir.join("mcp-server-filesystem"), "args": [data], "files": {"write": [data]}}})
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
    let run = |flags: &[&str], script: &str| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
            "--context".as_ref(),
            context.as_ref(),
        ];
        args.extend(flags.iter().map(std::ffi::OsStr::new));
        run_stdin(&args, script)
    };
    // --strict: refused before anything starts (issue 63 item 7).
    let out = run(&["--strict"], FORGOTTEN);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "mcp-sandbox: UNAWAITED_CALL: mcp.filesystem.write_file(…) is neither awaited nor returned nor assigned, so the script may return before it ends and it is cancelled: write `await mcp.filesystem.write_file(…)` (refused under --strict)\n"
    );
    assert!(out.stdout.is_empty());
    assert!(!state.exists(), "nothing ran, nothing was audited");

    let out = run(&[], FORGOTTEN);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "\"done\"\n");
    // One line for one mistake: the call flagged before the run is not named again.
    assert_eq!(stderr.matches("missing await?").count(), 1, "{stderr}");
    assert!(stderr.contains(STATIC), "{stderr}");
    assert!(!stderr.contains("still running"), "{stderr}");

    let records = audit(&state);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["outcome"], "OK", "{records:#?}");
    // The record is the real one: it holds the abandoned call.
    let calls = records[0]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{records:#?}");
    assert_eq!(calls[0]["tool"], "filesystem:write_file");

    // A call the analysis cannot flag (assigned, never awaited): the warning at the end.
    let out = run(&[], ASSIGNED);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("missing await?").count(), 1, "{stderr}");
    assert!(stderr.contains(RUNNING), "{stderr}");
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
    assert!(!text.contains("still running"), "{text}");
    let records = audit(&served.state);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["outcome"], "OK", "{records:#?}");
    // Not flagged before the run: the end's warning, in the summary and the logs.
    let r = served
        .call(
            "execute_code",
            json!({"code": ASSIGNED, "context": {"DIR": data}}),
        )
        .await
        .unwrap();
    let text = crate::serve_support::text(&r);
    assert!(text.contains(RUNNING), "{text}");
    assert!(!text.contains(STATIC), "{text}");
    let logs = &crate::serve_support::structured(&r)["logs"];
    assert!(
        logs.as_array()
            .unwrap()
            .iter()
            .any(|l| l["level"] == "warn" && l["message"] == RUNNING),
        "{logs}"
    );
}
