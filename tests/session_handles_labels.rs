//! Labels a model cannot shed (issue 45 item 3). The model carries the session handle, and a
//! prompt-injected model drops it or swaps it for a fresh one. With the default `flow_scope:
//! "session"`, what a principal's sessionless executions read stays with the principal: after
//! a private read, the egress call is refused in a later execution without a handle, with a
//! fresh handle and with the same handle, and the mail server never receives it; another
//! principal is not affected. `flow_scope: "handle"` (documented as weaker) scopes labels by
//! handle: a model that omits it starts clean. Clients: the official Python SDK's default
//! `Client` (2026-07-28) against `serve --http` with tokens; `crm` and `mail` are the rmcp
//! fixture server (`mail` appends what it sends to a file).

use super::session_handles::{cli_json as cli, drive, out, MODERN};
use crate::common::bin;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;

fn config(dir: &Path, flow_scope: &str) -> Value {
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.join("mail.log")}, "files": {"write": [dir]},
    });
    json!({
        "mcpServers": {"crm": {"command": bin("fixture-mcp-server")}, "mail": mail},
        "sandbox": {
            "auth": {},
            "labels": {"crm:get_customer": ["private"], "mail:send_mail": ["egress"]},
            "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
            "flow_scope": flow_scope,
        },
    })
}

const READ: &str = "const c = await mcp.crm.get_customer({id: 7}); return c.id";
const MAIL: &str = "try { await mcp.mail.send_mail({to: ['x@example.com'], subject: 'hi'}); return 'sent' } catch (e) { return [e.code, e.message] }";

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

fn mailed(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("mail.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_private_read_no_handle_a_fresh_handle_and_the_same_handle_are_all_refused() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_http_state(config(dir.path(), "session"), None, &[]).await;
    let a = create_token(Path::new(&g.state), "a", &[]);
    let b = create_token(Path::new(&g.state), "b", &[]);
    let clients = json!({"A": {"token": a}, "B": {"token": b}});
    let steps = json!([
        // 0: the private read.
        {"as": "A", "call": "execute_code", "args": {"code": READ}, "keep": {"h": "session"}},
        // 1: no handle (a new session).
        {"as": "A", "call": "execute_code", "args": {"code": MAIL}, "keep": {"fresh": "session"}},
        // 2: the fresh handle step 1 was given.
        {"as": "A", "call": "execute_code", "args": {"code": MAIL, "session": "$fresh"}},
        // 3: the same handle.
        {"as": "A", "call": "execute_code", "args": {"code": MAIL, "session": "$h"}},
        // 4: another principal read nothing: its mail goes out.
        {"as": "B", "call": "execute_code", "args": {"code": MAIL}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["A"], json!(MODERN), "{r}");
    assert_eq!(out(&r, 0)["result"], json!(7), "{r}");
    // The refusal names the execution that read the data (its id, as the audit log keeps it).
    for i in [1, 2, 3] {
        let result = &out(&r, i)["result"];
        assert_eq!(result[0], json!("PERMISSION_DENIED"), "step {i}: {r}");
        let message = result[1].as_str().unwrap();
        assert!(
            message.starts_with("mail:send_mail is egress; this execution read private data from crm:get_customer in an earlier execution ("),
            "step {i}: {message}"
        );
        let tail = ") of the same principal (config flow rule \"no-exfiltration\"); the call was not forwarded";
        assert!(message.ends_with(tail), "step {i}: {message}");
        let id = &message[message.find("execution (").unwrap() + 11..message.len() - tail.len()];
        assert!(uuid_like(id), "step {i}: {id}");
    }
    assert_eq!(out(&r, 4)["result"], json!("sent"), "{r}");
    // Exactly B's mail reached the server.
    assert_eq!(
        mailed(dir.path()).lines().count(),
        1,
        "{}",
        mailed(dir.path())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_flow_scope_handle_a_model_that_omits_the_handle_starts_clean() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_http_state(config(dir.path(), "handle"), None, &[]).await;
    let a = create_token(Path::new(&g.state), "a", &[]);
    let clients = json!({"A": {"token": a}});
    let steps = json!([
        {"as": "A", "call": "execute_code", "args": {"code": READ}, "keep": {"h": "session"}},
        // 1: the same handle: refused (the session read private data).
        {"as": "A", "call": "execute_code", "args": {"code": MAIL, "session": "$h"}},
        // 2: no handle: the weaker choice the operator made lets it out.
        {"as": "A", "call": "execute_code", "args": {"code": MAIL}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(
        out(&r, 1)["result"],
        json!(["PERMISSION_DENIED", "mail:send_mail is egress; this execution read private data from crm:get_customer in an earlier execution of this session (config flow rule \"no-exfiltration\"); the call was not forwarded"]),
        "{r}"
    );
    assert_eq!(out(&r, 2)["result"], json!("sent"), "{r}");
    assert_eq!(mailed(dir.path()).lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_sees_a_principals_labels_and_clears_them_on_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_http_state(config(dir.path(), "session"), None, &[]).await;
    let a = create_token(Path::new(&g.state), "a", &[]);
    let clients = json!({"A": {"token": a}});
    let read = json!([{"as": "A", "call": "execute_code", "args": {"code": READ}}]);
    drive(&g.addr, clients.clone(), read);

    let shown = cli(
        &g.state,
        &["labels", "show", "--principal", "token:a", "--json"],
    );
    let labels = shown["labels"].as_array().unwrap();
    assert_eq!(labels.len(), 1, "{shown}");
    assert_eq!(labels[0]["label"], json!("private"));
    assert_eq!(labels[0]["tool"], json!("crm:get_customer"));
    assert!(
        uuid_like(labels[0]["execution"].as_str().unwrap()),
        "{shown}"
    );
    assert_eq!(shown["tenant"], json!("default"), "the token's tenant");

    let cleared = cli(
        &g.state,
        &["labels", "clear", "--principal", "token:a", "--json"],
    );
    assert_eq!(cleared["cleared"], json!(true), "{cleared}");
    let records = cli(&g.state, &["audit", "--json"]);
    let record = records
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["front"] == "cli")
        .unwrap_or_else(|| panic!("no record of the clear: {records}"));
    assert_eq!(
        record["code"],
        json!("labels clear --principal token:a --tenant default")
    );
    assert_eq!(record["labels"], json!(["private"]));
    assert_eq!(record["principal"], json!("local"));

    // Cleared: the principal's next execution may mail again.
    let mail = json!([{"as": "A", "call": "execute_code", "args": {"code": MAIL}}]);
    let r = drive(&g.addr, clients, mail);
    assert_eq!(out(&r, 0)["result"], json!("sent"), "{r}");
    // What it holds now is only what that execution read (the mail tool's answer is labelled).
    let again = cli(
        &g.state,
        &["labels", "show", "--principal", "token:a", "--json"],
    );
    let labels: Vec<&Value> = again["labels"].as_array().unwrap().iter().collect();
    assert_eq!(labels.len(), 1, "{again}");
    assert_eq!(labels[0]["label"], json!("egress"), "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn policy_explain_counts_the_labels_a_principal_holds() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_http_state(config(dir.path(), "session"), None, &[]).await;
    let a = create_token(Path::new(&g.state), "a", &[]);
    create_token(Path::new(&g.state), "b", &[]);
    drive(
        &g.addr,
        json!({"A": {"token": a}}),
        json!([{"as": "A", "call": "execute_code", "args": {"code": READ}}]),
    );
    let explain = |principal: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
            .args(["policy", "explain", "--config"])
            .arg(g.dir.path().join("mcp.json"))
            .args([
                "--call",
                "mail:send_mail {\"to\": [\"x@example.com\"]}",
                "--principal",
                principal,
                "--state",
            ])
            .arg(&g.state)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = explain("token:a");
    assert!(
        text.starts_with("deny: mail:send_mail is egress; this execution read private data from crm:get_customer in an earlier execution ("),
        "{text}"
    );
    assert!(
        text.ends_with("token:a holds private (from crm:get_customer)\n"),
        "{text}"
    );
    let text = explain("token:b");
    assert_eq!(
        text,
        "allow: no rule refuses it or asks for approval\ntoken:b holds no labels\n"
    );
}
