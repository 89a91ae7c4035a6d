//! Conditions judge the values sent, not the placeholders the script wrote (issue 43 item 5),
//! through `serve` and the official MCP Python SDK client (tests/python/budget_client.py, one
//! stdio session per config) against the rmcp fixture server as `web` (echo) and `mail`
//! (send_mail, which appends what it received to a file). The script gets placeholders for two
//! addresses from the model's side (echoed back, then shown to the client as `⟪email:N⟫`) and
//! hands them to the mailer: a deny rule on the domain and an allow rule that wants exactly one
//! address at example.org must both hold on the resolved addresses.

use crate::common::bin;
use serde_json::{json, Value};

/// One session against a config whose sandbox section is `policy` plus e-mail detection that
/// only the mailer may receive; returns the outcomes and the mails received.
fn session(policy: Value, calls: Value) -> (Vec<Value>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let fixture = json!({"command": bin("fixture-mcp-server")});
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.path().join("mail.log")}, "files": {"write": [dir.path()]},
    });
    let mut sandbox = policy;
    sandbox["sensitive"] = json!({"detect": ["email"], "reveal_to": {"email": ["mail:send_mail"]}});
    let body = json!({"mcpServers": {"web": fixture, "mail": mail}, "sandbox": sandbox});
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, body.to_string()).unwrap();
    let state = dir.path().join("state.db");
    let report = crate::serve_support::sdk::over_stdio("budget_client.py", &config, &state, &calls);
    let outs = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["out"].clone())
        .collect();
    let mails = std::fs::read_to_string(dir.path().join("mail.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (outs, mails)
}

/// The first execution: two addresses come back as placeholders (`result/0`: evil, `/1`: ok).
fn mint() -> Value {
    json!({"code": "return [await mcp.web.echo({message: 'eve@evil.example'}), await mcp.web.echo({message: 'boss@example.org'})]"})
}

/// An execution that mails `to` (a list of strings that may hold `{{R0:…}}`).
fn mail(to: Value) -> Value {
    json!({
        "code": "try { return ['ok', await mcp.mail.send_mail({to, subject: 'x'})] } catch (e) { return [e.code, e.message] }",
        "context": {"to": to},
    })
}

fn tool_end(out: &Value) -> &Value {
    out["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "tool_end" && t["tool"] == "mail:send_mail")
        .unwrap_or_else(|| panic!("no tool_end: {out}"))
}

#[test]
fn a_deny_rule_sees_the_address_a_placeholder_stands_for() {
    let (r, mails) = session(
        json!({"deny": [{"tool": "mail:send_mail", "if": "args.to.exists(a, a.endsWith('@evil.example'))", "name": "no-evil"}]}),
        json!([
            mint(),
            mail(json!(["{{R0:/result/0}}"])),
            mail(json!(["{{R0:/result/1}}"]))
        ]),
    );
    let evil = r[0]["result"][0].as_str().unwrap();
    assert!(evil.starts_with("⟪email:"), "{:?}", r[0]);
    let denied = "mail:send_mail is denied by the config rule \"no-evil\" (deny \"mail:send_mail\" if args.to.exists(a, a.endsWith('@evil.example'))); the call was not forwarded";
    assert_eq!(
        r[1]["result"],
        json!(["PERMISSION_DENIED", denied]),
        "{:?}",
        r[1]
    );
    assert_eq!(tool_end(&r[1])["error"]["message"], json!(denied));
    // No flow rule is involved: no flow_decision.
    assert!(r[1]["traces"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["type"] != "flow_decision"));
    // The other address passes the rule and arrives resolved.
    assert_eq!(r[2]["result"][0], json!("ok"), "{:?}", r[2]);
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert_eq!(mails[0]["to"], json!(["boss@example.org"]));
}

#[test]
fn an_allow_rule_holds_on_the_resolved_addresses_only() {
    let rule = "args.to.all(a, a.matches('^[^@]*@example[.]org$'))";
    let (r, mails) = session(
        json!({"allow": ["web:*", {"tool": "mail:send_mail", "if": rule, "name": "one-address-at-example-org"}]}),
        json!([
            mint(),
            // The evil address behind a placeholder, followed by an allowed one in the same
            // string: as written, one '@' and the right domain.
            mail(json!(["{{R0:/result/0}}, boss@example.org"])),
            // The allowed address behind a placeholder (as written, no '@' at all).
            mail(json!(["{{R0:/result/1}}"])),
        ]),
    );
    let refused = format!("mail:send_mail is allowed by the config only when its arguments satisfy rule \"one-address-at-example-org\" (allow \"mail:send_mail\" if {rule}); these do not; the call was not forwarded");
    assert_eq!(
        r[1]["result"],
        json!(["PERMISSION_DENIED", refused]),
        "{:?}",
        r[1]
    );
    assert_eq!(tool_end(&r[1])["error"]["message"], json!(refused));
    assert_eq!(r[2]["result"][0], json!("ok"), "{:?}", r[2]);
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert_eq!(mails[0]["to"], json!(["boss@example.org"]));
}
