//! A value a tool's answer marks sensitive (`sandbox.sensitive.fields`) never comes back to the
//! client in the clear (issue 43 item 3): it is masked when the server answers JSON as text (the
//! official MCP Python SDK's servers often do: tests/python/crm_text_server.py), and when it
//! cannot be masked — the session's placeholder map is full, or the value is over 16 KiB — the
//! answer is withheld from the script with `LIMIT_EXCEEDED` saying which. Played as scripts
//! through `run` (the real CLI) and through `serve` with the Python SDK client; the server's
//! mail log shows what it received.

use crate::common::{bin, repo_root};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const ACCOUNT: &str = "ACC-0007-XQ";
/// The operator's seal key (64 hex digits) for every `run` of these tests.
const KEY: &str = "5f1e0c3a9b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468";

fn config(dir: &Path) -> PathBuf {
    let crm = json!({
        "command": repo_root().join(".venv/bin/python"),
        "args": [repo_root().join("tests/python/crm_text_server.py")],
        "env": {"CRM_MAIL_LOG": dir.join("mail.log")}, "files": {"write": [dir]},
    });
    let body = json!({
        "mcpServers": {"crm": crm},
        "sandbox": {"sensitive": {
            "detect": ["email"],
            "fields": {"crm:get_customer*": ["/account"], "crm:get_notes": ["/notes"]},
            "reveal_to": {"account": ["crm:send_mail"]},
        }},
    });
    let config = dir.join("mcp.json");
    std::fs::write(&config, body.to_string()).unwrap();
    config
}

/// `run --json --session s` of `code`: the outcome and every byte printed. The operator's key
/// is set (`MCP_SANDBOX_KEY`), as it must be for a session's placeholders to outlive one `run`:
/// without it each process seals its map under a key of its own.
fn run(dir: &Path, code: &str) -> (Value, String) {
    let script = dir.join("script.js");
    std::fs::write(&script, code).unwrap();
    let out = std::process::Command::new(bin("mcp-sandbox"))
        .args(["run", "--json", "--session", "s", "--config"])
        .arg(config(dir))
        .arg("--state")
        .arg(dir.join("state.db"))
        .arg("--runner")
        .arg(bin("sandbox-runner"))
        .arg(&script)
        .env("MCP_SANDBOX_KEY", KEY)
        .env_remove("MCP_SANDBOX_KEY_FILE")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let outcome = serde_json::from_str(&printed).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {printed}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (outcome, printed)
}

fn is_placeholder(v: &Value, kind: &str) -> bool {
    v.as_str().is_some_and(|s| {
        s.starts_with(&format!("⟪{kind}:")) && s.ends_with('⟫') && s.len() > kind.len() + 8
    })
}

fn mail_log(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("mail.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn marked_fields_in_json_text_come_back_masked_and_resolve_for_the_revealed_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, printed) = run(
        dir.path(),
        "const text = await mcp.crm.get_customer({id: 7});
         const c = JSON.parse(text);
         const many = (await mcp.crm.get_customers({ids: [1, 2]})).map(t => JSON.parse(t.text));
         console.log('account ' + c.account);
         return {account: c.account, many: many.map(m => m.account), text}",
    );
    assert_eq!(outcome["success"], true, "{outcome}");
    let account = &outcome["result"]["account"];
    assert!(is_placeholder(account, "account"), "{outcome}");
    let account = account.as_str().unwrap();
    let many = &outcome["result"]["many"];
    assert!(
        is_placeholder(&many[0], "account") && is_placeholder(&many[1], "account"),
        "{many}"
    );
    assert_ne!(many[0], many[1]);
    assert_eq!(outcome["logs"][0]["message"], format!("account {account}"));
    assert!(
        outcome["result"]["text"]
            .as_str()
            .unwrap()
            .contains(account),
        "the JSON text is masked too: {outcome}"
    );
    for real in [ACCOUNT, "ACC-0001-XQ", "ACC-0002-XQ"] {
        assert!(!printed.contains(real), "run printed {real}: {printed}");
    }
    // The placeholder goes back to the tool reveal_to names: the server gets the real value.
    let (sent, _) = run(
        dir.path(),
        &format!("return await mcp.crm.send_mail({{to: '{account}', subject: 'hello'}})"),
    );
    assert_eq!(sent["result"], "sent", "{sent}");
    assert_eq!(
        mail_log(dir.path()),
        [json!({"to": ACCOUNT, "subject": "hello"})]
    );
}

#[test]
fn a_marked_value_the_full_map_cannot_mask_is_withheld() {
    let dir = tempfile::tempdir().unwrap();
    // A script fills the session's map: 4,096 distinct addresses, each masked.
    let (filled, _) = run(
        dir.path(),
        "return Array.from({length: 4096}, (_, i) => 'u' + i + '@example.com')",
    );
    assert!(
        is_placeholder(&filled["result"][4095], "email"),
        "{}",
        filled["result"][4095]
    );
    let (outcome, printed) = run(
        dir.path(),
        "try { return JSON.parse(await mcp.crm.get_customer({id: 7})).account }
         catch (e) { return [e.code, e.message] }",
    );
    assert_eq!(
        outcome["result"],
        json!(["LIMIT_EXCEEDED", "the answer of crm:get_customer holds a value marked sensitive (sandbox.sensitive.fields, /account) and this session's placeholder map is full (4096 values, 1024 KiB at most), so the value could not be masked and the answer was withheld from the script. Start a new session to read it"]),
        "{outcome}"
    );
    assert!(!printed.contains(ACCOUNT), "{printed}");
    let end = outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "tool_end" && t["tool"] == "crm:get_customer")
        .unwrap();
    assert_eq!(end["error"]["code"], "LIMIT_EXCEEDED");
}

#[test]
fn a_marked_value_over_16_kib_is_withheld_not_claimed_masked() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, printed) = run(
        dir.path(),
        "try { return JSON.parse(await mcp.crm.get_notes({bytes: 20000})).notes }
         catch (e) { return [e.code, e.message] }",
    );
    assert_eq!(
        outcome["result"],
        json!(["LIMIT_EXCEEDED", "the answer of crm:get_notes holds a value marked sensitive (sandbox.sensitive.fields, /notes) of 20000 bytes; a marked value can be masked up to 16384 bytes, so the answer was withheld from the script. Ask the tool for less, or ask the operator to mark a smaller field"]),
        "{outcome}"
    );
    assert!(
        !printed.contains(&"n".repeat(100)),
        "the notes were printed"
    );
    assert_eq!(
        outcome["logs"],
        json!([]),
        "no log claims a value was masked"
    );
    // One that fits is masked.
    let (small, printed) = run(
        dir.path(),
        "return JSON.parse(await mcp.crm.get_notes({bytes: 16000})).notes",
    );
    assert!(is_placeholder(&small["result"], "notes"), "{small}");
    assert!(!printed.contains(&"n".repeat(100)));
}

/// The same through `serve` and the official Python SDK client: the model's answer holds the
/// placeholder, and no byte `serve` wrote holds the value.
#[test]
fn through_serve_the_json_text_field_is_masked() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let report = crate::serve_support::sdk::over_stdio(
        "budget_client.py",
        &config,
        &dir.path().join("state.db"),
        &json!([
            {"code": "return JSON.parse(await mcp.crm.get_customer({id: 7})).account"},
            {"code": "return await mcp.crm.send_mail({to: '{{R0:/result}}', subject: 'hi'})"},
        ]),
    );
    let results = report["results"].as_array().unwrap();
    assert!(
        is_placeholder(&results[0]["out"]["result"], "account"),
        "{}",
        results[0]
    );
    assert!(!results[0].to_string().contains(ACCOUNT), "{}", results[0]);
    assert_eq!(results[1]["out"]["result"], "sent", "{}", results[1]);
    assert_eq!(
        mail_log(dir.path()),
        [json!({"to": ACCOUNT, "subject": "hi"})]
    );
}
