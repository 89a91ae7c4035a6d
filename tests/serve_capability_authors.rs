//! Capabilities have authors (issue 25, item 1), over real HTTP with the official Python SDK:
//! `ci-bot`, whose policy denies `fixture:pid`, saves a new version of `notes:summary`, which
//! `admin` uses; `admin`'s next call does not run `fixture:pid` (PERMISSION_DENIED naming
//! ci-bot's rule), the call is traced as running another author's version, the list shows the
//! author, and the audit log names ci-bot as the one who saved it. A token without
//! `save_capabilities` cannot save at all; the local CLI can, and is recorded as the author.

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

fn save(name: &str, code: &str) -> Value {
    json!({"tool": "save_capability", "arguments": {"name": name, "code": code}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_capability_runs_with_no_more_rights_than_its_author() {
    let h = start_http_with(
        json!({"auth": {}, "audit": {"code": "full"}, "policies": {
            "admin": {"save_capabilities": true},
            "ci": {"deny": ["fixture:pid"], "save_capabilities": true},
            "reader": {}
        }}),
        &[],
    )
    .await;
    let admin = create_token(
        &h.state,
        "admin",
        &["--tenant", "notes", "--policy", "admin"],
    );
    let ci = create_token(&h.state, "ci-bot", &["--tenant", "notes", "--policy", "ci"]);
    let viewer = create_token(
        &h.state,
        "viewer",
        &["--tenant", "notes", "--policy", "reader"],
    );
    let call = json!({"code": "return await mcp.notes.summary({})"});

    // admin saves v1 and uses it; it may call fixture:pid itself.
    let r = results(&sdk(
        &url(&h),
        Some(&admin),
        &json!([save("notes:summary", "return 'summary of the notes'"), call]),
    ));
    assert_eq!(r[0]["out"]["author"], json!("token:admin"), "{r:?}");
    assert_eq!(
        r[1]["out"]["result"],
        json!("summary of the notes"),
        "{r:?}"
    );

    // ci-bot plants v2, which calls a tool ci-bot's own policy denies.
    let r = results(&sdk(
        &url(&h),
        Some(&ci),
        &json!([save("notes:summary", "return await mcp.fixture.pid({})")]),
    ));
    assert_eq!(r[0]["is_error"], json!(false), "{r:?}");
    assert_eq!(r[0]["out"]["version"], json!(2), "{r:?}");
    assert_eq!(r[0]["out"]["author"], json!("token:ci-bot"), "{r:?}");

    // admin's next call runs v2 under admin's policy AND ci-bot's: fixture:pid is refused.
    let r = results(&sdk(
        &url(&h),
        Some(&admin),
        &json!([call, {"code": "return await mcp.fixture.pid({})"}]),
    ));
    let out = &r[0]["out"];
    assert_eq!(out["error"]["code"], json!("PERMISSION_DENIED"), "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "fixture:pid is denied by the policy 'ci' of token:ci-bot (author of notes:summary v2) rule deny \"fixture:pid\""
        ),
        "{message}"
    );
    let traces = out["traces"].as_array().unwrap();
    assert!(
        !traces.iter().any(|e| e["type"] == json!("tool_end")
            && e["tool"] == json!("fixture:pid")
            && e["success"] == json!(true)),
        "fixture:pid ran: {out}"
    );
    let changed: Vec<&Value> = traces
        .iter()
        .filter(|e| e["type"] == json!("capability_author_changed"))
        .collect();
    assert_eq!(changed.len(), 1, "{out}");
    assert_eq!(changed[0]["tool"], json!("notes:summary"));
    assert_eq!(changed[0]["by"], json!("token:ci-bot"));
    assert_eq!(
        changed[0]["rule"],
        json!("version 2 was saved by token:ci-bot, the version before it by token:admin")
    );
    // admin's own rights are unchanged outside the capability.
    assert_eq!(r[1]["out"]["success"], json!(true), "{r:?}");

    // A token whose policy does not say save_capabilities may not save; nothing is stored.
    let r = results(&sdk(
        &url(&h),
        Some(&viewer),
        &json!([
            save("notes:summary", "return 'viewer was here'"),
            {"tool": "list_capabilities", "arguments": {}}
        ]),
    ));
    assert_eq!(r[0]["is_error"], json!(true), "{r:?}");
    assert_eq!(r[0]["out"]["error"]["code"], json!("PERMISSION_DENIED"));
    assert!(
        r[0]["out"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("token:viewer may not save capabilities"),
        "{r:?}"
    );
    let caps = r[1]["out"]["capabilities"].as_array().unwrap();
    assert_eq!(caps.len(), 1, "{r:?}");
    assert_eq!(caps[0]["version"], json!(2));
    assert_eq!(caps[0]["author"], json!("token:ci-bot"));

    // The audit log names who saved each version (the code kept, as --audit-code full says).
    let saves: Vec<Value> = audit(&h.state, &["--tool", "notes:summary"])
        .into_iter()
        .filter(|rec| rec["calls"][0]["kind"] == json!("capability_save"))
        .collect();
    let who: Vec<(Value, Value)> = saves
        .iter()
        .map(|rec| (rec["principal"].clone(), rec["calls"][0]["args"].clone()))
        .collect();
    assert_eq!(saves.len(), 2, "{saves:?}");
    assert_eq!(who[0].0, json!("token:admin"));
    assert_eq!(who[1].0, json!("token:ci-bot"));
    let args: Value = serde_json::from_str(who[1].1.as_str().unwrap()).unwrap();
    assert_eq!(args["version"], json!(2), "{args}");
    assert_eq!(saves[1]["tenant"], json!("notes"));
    // The save's record names the code by hash and size; the code itself is the version's.
    let code = "return await mcp.fixture.pid({})";
    assert_eq!(saves[1]["code"], Value::Null, "{saves:?}");
    assert_eq!(
        saves[1]["code_sha256"],
        json!(mcp_sandbox::store::audit_options::sha256_hex(
            code.as_bytes()
        ))
    );
    assert_eq!(saves[1]["code_bytes"], json!(code.len()));
    assert_eq!(saves[1]["client"], json!("team-client"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_local_cli_saves_and_removes_as_its_author_and_both_are_audited() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.db");
    let code = dir.path().join("c.js");
    std::fs::write(&code, "return 42").unwrap();
    let (status, out, err) = cli(&[
        "capability".as_ref(),
        "save".as_ref(),
        "math:answer".as_ref(),
        "--file".as_ref(),
        code.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("(author local)"), "{out}");
    let (status, out, err) = cli(&[
        "capability".as_ref(),
        "list".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    assert!(out.lines().next().unwrap().contains("AUTHOR"), "{out}");
    assert!(out.contains("local"), "{out}");
    let (status, out, _) = cli(&[
        "capability".as_ref(),
        "show".as_ref(),
        "math:answer".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0);
    assert!(out.contains("author:      local"), "{out}");
    let (status, _, err) = cli(&[
        "capability".as_ref(),
        "rm".as_ref(),
        "math:answer".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    let records = audit(&state, &[]);
    let kinds: Vec<(Value, Value, Value)> = records
        .iter()
        .map(|r| {
            (
                r["principal"].clone(),
                r["calls"][0]["kind"].clone(),
                r["calls"][0]["tool"].clone(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                json!("local"),
                json!("capability_save"),
                json!("math:answer")
            ),
            (
                json!("local"),
                json!("capability_remove"),
                json!("math:answer")
            ),
        ]
    );
}
